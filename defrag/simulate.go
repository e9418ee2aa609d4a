// Simulation: the layout a plan's moves produce, computed on a copy.
// See doc.go for the overview.

package defrag

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gpufrag/gpufrag/mem"
)

// simulate applies moves, in order, to a copy of the planner's layout and
// returns it, with the representation the allocator's own Layout would have:
// on the caching allocator and the arena, the free space between blocks in use
// is one free block per gap (both merge free neighbours); on size classes,
// slots keep their places and only change state. A move whose source is not a
// block in use or whose destination is not free is a planner bug, reported as
// an error rather than hidden in a wrong layout.
func simulate(pl *planner, moves []Move) (mem.Layout, error) {
	in := pl.l
	out := in
	out.Segments = make([]mem.Segment, len(in.Segments))
	copy(out.Segments, in.Segments)
	if len(moves) == 0 {
		copyBlocks(in, out, nil, 0)
		return out, nil
	}
	order := pl.order
	starts := make([]uint64, len(order))
	for i, si := range order {
		starts[i] = in.Segments[si].Addr
	}
	segAt := func(addr uint64) int32 {
		i, found := slices.BinarySearch(starts, addr)
		if !found {
			i--
		}
		if i < 0 || addr >= in.Segments[order[i]].End() {
			return -1
		}
		return order[i]
	}
	if pl.r.Slots {
		copyBlocks(in, out, nil, 0)
		return out, simulateSlots(out, moves, segAt)
	}
	// Sequential semantics with work proportional to the moves: blocks that
	// have moved are arrivals (cur maps a moved block's current address to
	// its arrival); original blocks that left their place are marked gone.
	segsOf := func(i int, mv Move) (int32, int32) {
		if len(pl.msegs) == len(moves) {
			return pl.msegs[i].from, pl.msegs[i].to
		}
		return segAt(mv.From), segAt(mv.To)
	}
	find := func(si int32, addr uint64) int {
		bs := in.Segments[si].Blocks
		i, found := slices.BinarySearchFunc(bs, addr, func(b mem.Block, a uint64) int {
			switch {
			case b.Addr < a:
				return -1
			case b.Addr > a:
				return 1
			}
			return 0
		})
		if !found {
			return -1
		}
		return i
	}
	first := make([]int, len(in.Segments)+1) // index of a segment's first block in gone
	for i, sg := range in.Segments {
		first[i+1] = first[i] + len(sg.Blocks)
	}
	gone := make([]bool, first[len(in.Segments)])
	touched := make([]bool, len(in.Segments))
	type arrival struct {
		seg int32 // -1 once it has moved on
		b   mem.Block
	}
	arr := make([]arrival, 0, len(moves))
	// cur maps the address of each block that has moved to its arrival. The
	// planners move a block once, so it is built only when a move starts
	// where no original block is left: a live original at the source is the
	// block that moves (an arrival there too would overlap it, a planner bug
	// either way).
	var cur map[uint64]int
	for i, mv := range moves {
		from, to := segsOf(i, mv)
		if from < 0 || to < 0 {
			return mem.Layout{}, fmt.Errorf("defrag: internal: move %d (%v) leaves the segments", i, mv)
		}
		var b mem.Block
		j := -1
		if len(pl.msegs) == len(moves) {
			// The planner's note of the block's index, checked.
			if k := int(pl.msegs[i].idx); k >= 0 && k < len(in.Segments[from].Blocks) && in.Segments[from].Blocks[k].Addr == mv.From {
				j = k
			}
		}
		if j < 0 {
			j = find(from, mv.From)
		}
		if j >= 0 && !gone[first[from]+j] {
			b = in.Segments[from].Blocks[j]
			gone[first[from]+j] = true
		} else {
			if cur == nil {
				cur = make(map[uint64]int, len(arr))
				for k, a := range arr {
					if a.seg >= 0 {
						cur[a.b.Addr] = k
					}
				}
			}
			k, ok := cur[mv.From]
			if !ok {
				return mem.Layout{}, fmt.Errorf("defrag: internal: move %d (%v): no live block at the source", i, mv)
			}
			b = arr[k].b
			arr[k].seg = -1
			delete(cur, mv.From)
		}
		if b.Size != mv.Size || b.State != mem.Active {
			return mem.Layout{}, fmt.Errorf("defrag: internal: move %d (%v): the block at the source is %s of %s",
				i, mv, b.State, mem.FormatBytesExact(b.Size))
		}
		b.Addr = mv.To
		if cur != nil {
			cur[mv.To] = len(arr)
		}
		arr = append(arr, arrival{to, b})
		touched[from], touched[to] = true, true
	}
	// Group the arrivals by segment (a counting sort: segments are small
	// integers), then sort each segment's few arrivals by address.
	count := make([]int, len(in.Segments)+1)
	for _, a := range arr {
		if a.seg >= 0 {
			count[a.seg+1]++
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	sorted := make([]arrival, count[len(in.Segments)])
	next := slices.Clone(count[:len(in.Segments)])
	for _, a := range arr {
		if a.seg >= 0 {
			sorted[next[a.seg]] = a
			next[a.seg]++
		}
	}
	for si := range in.Segments {
		part := sorted[count[si]:count[si+1]]
		if len(part) > 1 && !slices.IsSortedFunc(part, func(a, b arrival) int { return cmpAddr(a.b.Addr, b.b.Addr) }) {
			slices.SortFunc(part, func(a, b arrival) int {
				if a.b.Addr < b.b.Addr {
					return -1
				}
				return 1
			})
		}
	}
	arr = sorted
	// One backing array for every segment: untouched segments are copied,
	// touched ones retiled. A touched segment ends with at most its staying
	// live blocks plus its arrivals, each preceded by at most one gap, and
	// one gap at the end.
	extra := 0
	for si, t := range touched {
		if !t {
			continue
		}
		live := count[si+1] - count[si] + 1
		for j, b := range in.Segments[si].Blocks {
			if b.State != mem.Free && !gone[first[si]+j] {
				live++
			}
		}
		extra += 2 * live
	}
	tiles := copyBlocks(in, out, touched, extra)
	k := 0
	for si, t := range touched {
		if !t {
			continue
		}
		s := &out.Segments[si]
		start := len(tiles)
		cur := s.Addr
		emit := func(b mem.Block) bool {
			if b.Addr < cur || b.End() > s.End() {
				return false
			}
			if b.Addr > cur {
				tiles = append(tiles, mem.Block{Addr: cur, Size: int64(b.Addr - cur)})
			}
			tiles = append(tiles, b)
			cur = b.End()
			return true
		}
		orig := in.Segments[si].Blocks
		j := 0
		for {
			for j < len(orig) && (orig[j].State == mem.Free || gone[first[si]+j]) {
				j++
			}
			hasArr := k < len(arr) && arr[k].seg == int32(si)
			if j == len(orig) && !hasArr {
				break
			}
			var b mem.Block
			if hasArr && (j == len(orig) || arr[k].b.Addr < orig[j].Addr) {
				b = arr[k].b
				k++
			} else {
				b = orig[j]
				j++
			}
			if !emit(b) {
				return mem.Layout{}, fmt.Errorf("defrag: internal: blocks overlap or leave segment %s after the moves", mem.FormatAddr(s.Addr))
			}
		}
		if cur < s.End() {
			tiles = append(tiles, mem.Block{Addr: cur, Size: int64(s.End() - cur)})
		}
		s.Blocks = tiles[start:len(tiles):len(tiles)]
	}
	return out, nil
}

// copyBlocks gives every segment of out that skip does not mark (nil: none)
// a copy of its blocks in in, all in one new backing array with room for
// extra more blocks, and returns that array (its length: the blocks copied),
// so the caller can append the skipped segments' blocks after them.
func copyBlocks(in, out mem.Layout, skip []bool, extra int) []mem.Block {
	total := extra
	for i, s := range in.Segments {
		if skip == nil || !skip[i] {
			total += len(s.Blocks)
		}
	}
	backing := make([]mem.Block, 0, total)
	for i, s := range in.Segments {
		if skip != nil && skip[i] {
			continue
		}
		n := len(backing)
		backing = append(backing, s.Blocks...)
		out.Segments[i].Blocks = backing[n:len(backing):len(backing)]
	}
	return backing
}

// simulateSlots applies moves between size-class slots: the destination slot
// becomes live with the block's request, the source slot free.
func simulateSlots(out mem.Layout, moves []Move, segAt func(uint64) int32) error {
	find := func(addr uint64) *mem.Block {
		si := segAt(addr)
		if si < 0 {
			return nil
		}
		bs := out.Segments[si].Blocks
		i := sort.Search(len(bs), func(i int) bool { return bs[i].Addr >= addr })
		if i == len(bs) || bs[i].Addr != addr {
			return nil
		}
		return &bs[i]
	}
	for i, mv := range moves {
		src, dst := find(mv.From), find(mv.To)
		if src == nil || dst == nil || src.State != mem.Active || dst.State != mem.Free || src.Size != mv.Size || dst.Size != mv.Size {
			return fmt.Errorf("defrag: internal: move %d (%v) is not from a live slot to a free slot of its size", i, mv)
		}
		dst.State, dst.Requested = mem.Active, src.Requested
		src.State, src.Requested = mem.Free, 0
	}
	return nil
}
