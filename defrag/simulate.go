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
//
// The work is proportional to the moves and the blocks of the segments they
// touch: the moves are replayed as departures and arrivals (shadow.move),
// the arrivals grouped by segment (shadow.bySegment), and only the touched
// segments retiled (retile); the others keep a copy of their blocks.
func simulate(pl *planner, moves []Move) (mem.Layout, error) {
	in := pl.l
	out := in
	out.Segments = make([]mem.Segment, len(in.Segments))
	copy(out.Segments, in.Segments)
	if len(moves) == 0 {
		copyBlocks(in, out, nil, 0)
		return out, nil
	}
	segs := newSegIndex(in, pl.order)
	if pl.r.Slots {
		copyBlocks(in, out, nil, 0)
		return out, simulateSlots(out, moves, segs.at)
	}
	sh := newShadow(in, len(moves))
	noted := len(pl.msegs) == len(moves) // the planner's note of each move's segments and block
	for i, mv := range moves {
		from, to, idx := segs.at(mv.From), segs.at(mv.To), -1
		if noted {
			from, to, idx = pl.msegs[i].from, pl.msegs[i].to, int(pl.msegs[i].idx)
		}
		if err := sh.move(i, mv, from, to, idx); err != nil {
			return mem.Layout{}, err
		}
	}
	arr, count := sh.bySegment()
	// One backing array for every segment: untouched segments are copied,
	// touched ones retiled after them.
	tiles := copyBlocks(in, out, sh.touched, sh.retiledBlocks(count))
	for si, t := range sh.touched {
		if !t {
			continue
		}
		start := len(tiles)
		var err error
		if tiles, err = sh.retile(tiles, si, arr[count[si]:count[si+1]]); err != nil {
			return mem.Layout{}, err
		}
		out.Segments[si].Blocks = tiles[start:len(tiles):len(tiles)]
	}
	return out, nil
}

// segIndex finds the segment that holds an address: the segments' start
// addresses in address order (order: their indices in that order).
type segIndex struct {
	l      mem.Layout
	order  []int32
	starts []uint64
}

func newSegIndex(l mem.Layout, order []int32) segIndex {
	starts := make([]uint64, len(order))
	for i, si := range order {
		starts[i] = l.Segments[si].Addr
	}
	return segIndex{l, order, starts}
}

// at returns the index of the segment holding addr, -1 when none does.
func (x segIndex) at(addr uint64) int32 {
	i, found := slices.BinarySearch(x.starts, addr)
	if !found {
		i--
	}
	if i < 0 || addr >= x.l.Segments[x.order[i]].End() {
		return -1
	}
	return x.order[i]
}

// blockAt returns the index of the block of bs (in address order) that
// starts at addr, -1 when none does.
func blockAt(bs []mem.Block, addr uint64) int {
	i, found := slices.BinarySearchFunc(bs, addr, func(b mem.Block, a uint64) int { return cmpAddr(b.Addr, a) })
	if !found {
		return -1
	}
	return i
}

// arrival is a block at the place a move put it.
type arrival struct {
	seg int32 // -1 once it has moved on
	b   mem.Block
}

// shadow is a layout's blocks as a sequence of moves leaves them, kept as
// the changes only: which original blocks left their place (gone), the
// blocks that moved (arrivals) and the segments either touched.
type shadow struct {
	in      mem.Layout
	first   []int  // index of a segment's first block in gone
	gone    []bool // per original block: it has moved away
	touched []bool // per segment
	arr     []arrival
	// cur maps the address of each block that has moved to its arrival.
	// The planners move a block once, so it is built only when a move
	// starts where no original block is left: a live original at the source
	// is the block that moves (an arrival there too would overlap it, a
	// planner bug either way).
	cur map[uint64]int
}

func newShadow(in mem.Layout, moves int) shadow {
	first := make([]int, len(in.Segments)+1)
	for i, sg := range in.Segments {
		first[i+1] = first[i] + len(sg.Blocks)
	}
	return shadow{in: in, first: first, gone: make([]bool, first[len(in.Segments)]),
		touched: make([]bool, len(in.Segments)), arr: make([]arrival, 0, moves)}
}

// move applies move i, mv, from segment from to segment to (-1: none
// holds the address); idx, when not -1, is the planner's note of the
// moving block's index in its segment, checked before it is used.
func (sh *shadow) move(i int, mv Move, from, to int32, idx int) error {
	if from < 0 || to < 0 {
		return fmt.Errorf("defrag: internal: move %d (%v) leaves the segments", i, mv)
	}
	blocks := sh.in.Segments[from].Blocks
	if idx < 0 || idx >= len(blocks) || blocks[idx].Addr != mv.From {
		idx = blockAt(blocks, mv.From)
	}
	var b mem.Block
	if g := sh.first[from] + idx; idx >= 0 && !sh.gone[g] {
		b = blocks[idx]
		sh.gone[g] = true
	} else {
		k, ok := sh.arrivalAt(mv.From)
		if !ok {
			return fmt.Errorf("defrag: internal: move %d (%v): no live block at the source", i, mv)
		}
		b = sh.arr[k].b
		sh.arr[k].seg = -1
		delete(sh.cur, mv.From)
	}
	if b.Size != mv.Size || b.State != mem.Active {
		return fmt.Errorf("defrag: internal: move %d (%v): the block at the source is %s of %s",
			i, mv, b.State, mem.FormatBytesExact(b.Size))
	}
	b.Addr = mv.To
	if sh.cur != nil {
		sh.cur[mv.To] = len(sh.arr)
	}
	sh.arr = append(sh.arr, arrival{to, b})
	sh.touched[from], sh.touched[to] = true, true
	return nil
}

// arrivalAt returns the arrival that a block which has moved occupies at
// addr, building the index of arrivals on first use.
func (sh *shadow) arrivalAt(addr uint64) (int, bool) {
	if sh.cur == nil {
		sh.cur = make(map[uint64]int, len(sh.arr))
		for k, a := range sh.arr {
			if a.seg >= 0 {
				sh.cur[a.b.Addr] = k
			}
		}
	}
	k, ok := sh.cur[addr]
	return k, ok
}

// bySegment returns the arrivals still in place grouped by segment, each
// segment's in address order: segment si's are arr[count[si]:count[si+1]].
// A counting sort (segments are small integers), then a sort of each
// segment's few arrivals.
func (sh *shadow) bySegment() (arr []arrival, count []int) {
	n := len(sh.in.Segments)
	count = make([]int, n+1)
	for _, a := range sh.arr {
		if a.seg >= 0 {
			count[a.seg+1]++
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	arr = make([]arrival, count[n])
	next := slices.Clone(count[:n])
	for _, a := range sh.arr {
		if a.seg >= 0 {
			arr[next[a.seg]] = a
			next[a.seg]++
		}
	}
	byAddr := func(a, b arrival) int { return cmpAddr(a.b.Addr, b.b.Addr) }
	for si := range n {
		if part := arr[count[si]:count[si+1]]; len(part) > 1 && !slices.IsSortedFunc(part, byAddr) {
			slices.SortFunc(part, byAddr)
		}
	}
	return arr, count
}

// retiledBlocks bounds the blocks of the touched segments once retiled: a
// touched segment ends with at most its staying live blocks plus its
// arrivals (count, as bySegment returns it), each preceded by at most one
// gap, and one gap at the end.
func (sh *shadow) retiledBlocks(count []int) int {
	n := 0
	for si, t := range sh.touched {
		if !t {
			continue
		}
		live := count[si+1] - count[si] + 1
		for j, b := range sh.in.Segments[si].Blocks {
			if b.State != mem.Free && !sh.gone[sh.first[si]+j] {
				live++
			}
		}
		n += 2 * live
	}
	return n
}

// retile appends to tiles the blocks of segment si after the moves: its
// live blocks that stayed and arr, its arrivals in address order, merged
// in address order, with one free block for each gap between them. Blocks
// that overlap or leave the segment are a planner bug, reported.
func (sh *shadow) retile(tiles []mem.Block, si int, arr []arrival) ([]mem.Block, error) {
	s := sh.in.Segments[si]
	orig, gone := s.Blocks, sh.gone[sh.first[si]:sh.first[si+1]]
	cur := s.Addr
	for j, k := 0, 0; ; {
		for j < len(orig) && (orig[j].State == mem.Free || gone[j]) {
			j++
		}
		var b mem.Block
		switch {
		case k < len(arr) && (j == len(orig) || arr[k].b.Addr < orig[j].Addr):
			b = arr[k].b
			k++
		case j < len(orig):
			b = orig[j]
			j++
		default:
			if cur < s.End() {
				tiles = append(tiles, mem.Block{Addr: cur, Size: int64(s.End() - cur)})
			}
			return tiles, nil
		}
		if b.Addr < cur || b.End() > s.End() {
			return nil, fmt.Errorf("defrag: internal: blocks overlap or leave segment %s after the moves", mem.FormatAddr(s.Addr))
		}
		if b.Addr > cur {
			tiles = append(tiles, mem.Block{Addr: cur, Size: int64(b.Addr - cur)})
		}
		tiles = append(tiles, b)
		cur = b.End()
	}
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
