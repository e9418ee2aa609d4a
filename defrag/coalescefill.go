// Coalescing a large arena by filling holes exactly: the plan that reaches
// the window bound when the displaced blocks can tile the holes, and pays
// for sliding the blocks after a hole only where they cannot.
// See doc.go for the overview ("Coalescing an arena").

package defrag

import (
	"math/bits"
	"slices"

	"github.com/gpufrag/gpufrag/mem"
)

// maxFillWindows bounds the windows coalesceFill tries, cheapest first.
const maxFillWindows = 4

// sizePool is a multiset of blocks from which fill takes blocks by size:
// the distinct sizes in ascending order, a stack of the blocks of each size
// (lowest address on top), and a Fenwick tree of how many blocks of each size
// are left, which finds the largest size left at most n in O(log sizes).
type sizePool struct {
	sizes []int64
	stack [][]mem.Block
	tree  []int32 // Fenwick tree over the counts, 1-based
	left  int     // blocks left
	// dense[n/minBlock] is 1 + the index of size n, 0 for a size not in
	// the pool; nil when sizes are not all multiples of minBlock or too
	// large for a small table (then lookups search sizes).
	dense []int32
}

// maxDense bounds the dense lookup table of a sizePool (1 MiB of int32).
const maxDense = 1 << 18

func newSizePool(bs []mem.Block) *sizePool {
	slices.SortFunc(bs, func(a, b mem.Block) int {
		if a.Size != b.Size {
			if a.Size < b.Size {
				return -1
			}
			return 1
		}
		return cmpAddr(b.Addr, a.Addr) // highest address first: the stack's bottom
	})
	p := &sizePool{}
	for i := 0; i < len(bs); {
		j := i
		for j < len(bs) && bs[j].Size == bs[i].Size {
			j++
		}
		p.sizes = append(p.sizes, bs[i].Size)
		p.stack = append(p.stack, bs[i:j:j])
		i = j
	}
	p.tree = make([]int32, len(p.sizes)+1)
	for k := range p.sizes {
		p.add(k, int32(len(p.stack[k])))
	}
	p.left = len(bs)
	if n := len(p.sizes); n > 0 && p.sizes[n-1]/minBlock < maxDense {
		p.dense = make([]int32, p.sizes[n-1]/minBlock+1)
		for k, sz := range p.sizes {
			if sz%minBlock != 0 {
				p.dense = nil
				break
			}
			p.dense[sz/minBlock] = int32(k + 1)
		}
	}
	return p
}

func (p *sizePool) add(k int, d int32) {
	for i := k + 1; i < len(p.tree); i += i & -i {
		p.tree[i] += d
	}
}

// largestAtMost returns the index of the largest size left that is at most
// n, or -1.
func (p *sizePool) largestAtMost(n int64) int {
	hi, _ := slices.BinarySearch(p.sizes, n+1) // sizes[:hi] are at most n
	var c int32
	for i := hi; i > 0; i -= i & -i {
		c += p.tree[i]
	}
	if c == 0 {
		return -1
	}
	// The c-th block in size order (1-based) is of the size wanted.
	pos := 0
	for step := 1 << (bits.Len(uint(len(p.tree))) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(p.tree) && p.tree[next] < c {
			pos = next
			c -= p.tree[next]
		}
	}
	return pos // 0-based index of the size
}

// take removes a block of size index k and returns it.
func (p *sizePool) take(k int) mem.Block {
	st := p.stack[k]
	b := st[len(st)-1]
	p.stack[k] = st[:len(st)-1]
	p.add(k, -1)
	p.left--
	return b
}

// untake puts back b, the last block taken of size index k.
func (p *sizePool) untake(k int, b mem.Block) {
	p.stack[k] = append(p.stack[k], b)
	p.add(k, 1)
	p.left++
}

// index returns the index of size n, which must be in the pool.
func (p *sizePool) index(n int64) int {
	if p.dense != nil {
		return int(p.dense[n/minBlock]) - 1
	}
	k, _ := slices.BinarySearch(p.sizes, n)
	return k
}

// count returns how many blocks of exactly size n are left.
func (p *sizePool) count(n int64) int {
	if p.dense != nil {
		if n <= 0 || n%minBlock != 0 || n/minBlock >= int64(len(p.dense)) || p.dense[n/minBlock] == 0 {
			return 0
		}
		return len(p.stack[p.dense[n/minBlock]-1])
	}
	k, found := slices.BinarySearch(p.sizes, n)
	if !found {
		return 0
	}
	return len(p.stack[k])
}

// pairTries bounds the sizes fill examines when it looks for two blocks that
// complete a hole. It looks at all of them rather than stopping at the first
// pair: taking the second size with the most blocks left is what keeps the
// small sizes, which complete other holes, from running out (on the
// 100,000-block arena of BenchmarkPlan, stopping at 32 blocks left already
// costs some holes their exact fill).
const pairTries = 128

// fill takes blocks whose sizes add up to exactly n, appending them to got,
// or takes nothing and reports false. At each step it completes the hole
// with one block of the remaining size, or else with the pair (a, r − a)
// whose second size has the most blocks left among the pairTries largest
// first sizes (so as not to use up the small sizes that complete other
// holes), or else takes the largest block that leaves room for the smallest
// one and goes on.
func (p *sizePool) fill(n int64, got []mem.Block) ([]mem.Block, bool) {
	start := len(got)
	r := n
	for r > 0 && p.left > 0 {
		if p.count(r) > 0 {
			got = append(got, p.take(p.index(r)))
			return got, true
		}
		minSize := p.sizes[p.smallestIndex()]
		bestK, bestScore := -1, 0
		k := p.largestAtMost(r - minSize)
		for tries := 0; k >= 0 && tries < pairTries; tries++ {
			a := p.sizes[k]
			c := p.count(r - a)
			if r-a == a {
				c--
			}
			if c > bestScore {
				bestK, bestScore = k, c
			}
			if a < r-a {
				break // the pairs from here on were seen from the other side
			}
			for k--; k >= 0 && len(p.stack[k]) == 0; k-- {
			}
		}
		if bestK >= 0 {
			b := p.take(bestK)
			got = append(got, b, p.take(p.index(r-b.Size)))
			return got, true
		}
		k = p.largestAtMost(r - minSize)
		if k < 0 {
			break
		}
		b := p.take(k)
		got = append(got, b)
		r -= b.Size
	}
	for i := len(got) - 1; i >= start; i-- {
		p.untake(p.index(got[i].Size), got[i])
	}
	return got[:start], false
}

// smallestIndex returns the index of the smallest size left (the pool
// must not be empty).
func (p *sizePool) smallestIndex() int {
	pos := 0
	c := int32(1)
	for step := 1 << (bits.Len(uint(len(p.tree))) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(p.tree) && p.tree[next] < c {
			pos = next
			c -= p.tree[next]
		}
	}
	return pos
}

// rest returns the blocks left, largest first.
func (p *sizePool) rest(dst []mem.Block) []mem.Block {
	for k := len(p.sizes) - 1; k >= 0; k-- {
		st := p.stack[k]
		for i := len(st) - 1; i >= 0; i-- {
			dst = append(dst, st[i])
		}
	}
	return dst
}

// coalesceFill plans the coalescing of segment si (free bytes in total)
// around each of its maxFillWindows cheapest windows [x, x+free) that no
// live block straddles at its right edge (windows start at a block, so none
// straddles the left one), and returns the cheapest plan. The blocks
// overlapping the window (the displaced) fill the holes above the window
// exactly, farthest first, then the holes below it from the lowest up. A hole
// below that no set of the remaining blocks fills is carried: the staying
// blocks after it slide down over it (a memmove) and the next hole is filled
// with its own bytes plus the carry; the displaced blocks left at the end
// fill the run the carry leaves just below the window. Their sizes add up to
// that run: the window holds the free bytes of the segment, so the holes
// outside it hold exactly the displaced bytes. When every hole fills, the
// plan moves exactly the window's cost, the lower bound.
//
// The moves are in an order in which each destination is free when its move
// runs: fills go into holes (free from the start) or into the carried run
// (free once the blocks before it slid, which comes first in address order),
// and a slide moves a block down over free bytes and its own range. It
// returns false when no window works (a hole above the window that no set
// fills, a block that cannot move) or a cap forbids every plan.
func (pl *planner) coalesceFill(si int32, free int64, ws []window) ([]Move, int64, bool) {
	s := &pl.l.Segments[si]
	if pl.segs[si].pinned {
		return nil, 0, false
	}
	var best []Move
	var bestCost int64
	for i, w := range ws {
		if i == maxFillWindows {
			break
		}
		x := w.start
		we := x + uint64(free)
		if w.last > 0 {
			if b := s.Blocks[w.last-1]; b.State != mem.Free && b.End() > we {
				continue // a block straddles the right edge
			}
		}
		var disp []mem.Block
		for _, b := range s.Blocks[w.first:w.last] {
			if b.State != mem.Free {
				disp = append(disp, b)
			}
		}
		pool := newSizePool(disp)
		var moves []Move
		var got []mem.Block
		place := func(at uint64) {
			for _, b := range got {
				moves = append(moves, Move{From: b.Addr, To: at, Size: b.Size})
				at += uint64(b.Size)
			}
		}
		// Above the window, farthest first: every hole must fill. A free
		// block across the window's end leaves the hole [we, its end).
		ok := true
		for j := len(s.Blocks) - 1; j >= int(w.last)-1 && ok; j-- {
			b := s.Blocks[j]
			if b.State != mem.Free || b.End() <= we {
				continue
			}
			if b.Addr < we {
				b = mem.Block{Addr: we, Size: int64(b.End() - we)}
			}
			got = got[:0]
			if got, ok = pool.fill(b.Size, got); ok {
				place(b.Addr)
			}
		}
		if !ok {
			continue
		}
		// Below the window, lowest first. A hole that no set of the
		// remaining blocks fills exactly is carried: the staying blocks up to
		// the next hole slide down over it, and that hole grows by as much.
		cost := w.cost
		var carry uint64
		for _, b := range s.Blocks[:w.first] {
			if b.State != mem.Free {
				if carry > 0 {
					moves = append(moves, Move{From: b.Addr, To: b.Addr - carry, Size: b.Size})
					cost += b.Size
				}
				continue
			}
			got = got[:0]
			if got, ok = pool.fill(b.Size+int64(carry), got); ok {
				place(b.Addr - carry)
				carry = 0
			} else {
				carry += uint64(b.Size)
			}
		}
		if carry > 0 {
			// What is left of the displaced blocks fills the run just below
			// the window, whose size is theirs (both are the free bytes below
			// the window minus the bytes filled).
			got = pool.rest(got[:0])
			var left int64
			for _, b := range got {
				left += b.Size
			}
			if left != int64(carry) {
				continue // cannot happen (see above); never plan a wrong layout
			}
			place(x - carry)
		} else if pool.left != 0 {
			continue // likewise
		}
		if !pl.capped(cost, len(moves)) && (best == nil || cost < bestCost) {
			best, bestCost = moves, cost
			if cost == ws[0].cost {
				break // the bound: no window does better
			}
		}
	}
	return best, bestCost, best != nil
}
