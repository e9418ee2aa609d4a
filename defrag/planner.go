// The planner's view of a layout: segments, groups, movable blocks.
// See doc.go for the overview.

package defrag

import (
	"math"
	"math/bits"
	"slices"

	"github.com/gpufrag/gpufrag/mem"
)

// segInfo is what the planner knows about one segment.
type segInfo struct {
	live   int64 // Σ sizes of blocks that can move
	used   int64 // Σ sizes of blocks not free (movable or not)
	pinned bool  // holds a block in use that cannot move (pending free, direct)
	group  int32
}

// group is the set of segments a block may move between: one pool and one
// stream (the caching allocator's rule; arena and size-class slabs are all on
// stream 0), never mixing cudaMalloc segments with VMM-backed runs.
type group struct {
	pool       string
	stream     int
	expandable bool
	segs       []int32 // in address order
	free       int64   // Σ free bytes of its segments, wholly free ones included
	nfree      int     // free blocks of its segments
	// cands are the segments planCompact may evacuate (live blocks, none
	// pinned), sorted by sortByRatio; compactBound reuses them.
	cands []int32
}

type planner struct {
	l      mem.Layout
	r      rules
	o      Options
	segs   []segInfo // by segment index
	groups []group
	moved  int64 // bytes moved so far, for the caps
	nmoves int
	pos    []int   // scratch: a segment's position among its group's candidates
	order  []int32 // segment indices in address order
	// msegs[i] are the source and destination segments of the plan's move i;
	// kept in step with Plan.Moves by every planner.
	msegs []segPair
}

// segPair is the source and destination segment of one move, and idx the
// index of the moved block in the source segment's Blocks of the planner's
// layout, or -1 when the planner did not note it (simulate then searches).
type segPair struct{ from, to, idx int32 }

func newPlanner(l mem.Layout, r rules, o Options) *planner {
	pl := &planner{l: l, r: r, o: o, segs: make([]segInfo, len(l.Segments)), pos: make([]int, len(l.Segments))}
	type key struct {
		pool       string
		stream     int
		expandable bool
	}
	byKey := map[key]int32{}
	last := int32(-1)
	pl.order = sortedSegs(l)
	for _, si := range pl.order {
		s := &l.Segments[si]
		k := key{s.Pool, s.Stream, s.Expandable}
		// Neighbours are mostly of one group: try the last one before
		// hashing the pool name.
		gi, ok := last, false
		if gi >= 0 {
			lg := &pl.groups[gi]
			ok = lg.pool == k.pool && lg.stream == k.stream && lg.expandable == k.expandable
		}
		if !ok {
			gi, ok = byKey[k]
		}
		if !ok {
			gi = int32(len(pl.groups))
			byKey[k] = gi
			pl.groups = append(pl.groups, group{pool: s.Pool, stream: s.Stream, expandable: s.Expandable})
		}
		last = gi
		g := &pl.groups[gi]
		g.segs = append(g.segs, si)
		info := segInfo{group: gi}
		for _, b := range s.Blocks {
			switch {
			case b.State == mem.Free:
				g.free += b.Size
				g.nfree++
			case pl.movable(s, b):
				info.live += b.Size
				info.used += b.Size
			default:
				info.used += b.Size
				info.pinned = true
			}
		}
		pl.segs[si] = info
	}
	return pl
}

// movable says whether block b of segment s may be relocated: it is live
// (a pending free belongs to another stream's work), it is not in a VMM-backed
// run (those are remapped, not copied) and not a size-class direct block (a
// raw allocation of its own, which Relocate refuses).
func (pl *planner) movable(s *mem.Segment, b mem.Block) bool {
	return b.State == mem.Active && !s.Expandable && !pl.r.fixed && !(pl.r.Slots && s.Pool == "direct")
}

// capped says whether adding n bytes in k moves would exceed Options' caps.
func (pl *planner) capped(n int64, k int) bool {
	return (pl.o.MaxBytes > 0 && pl.moved+n > pl.o.MaxBytes) || (pl.o.MaxMoves > 0 && pl.nmoves+k > pl.o.MaxMoves)
}

// ratioKey is what sortByRatio compares, gathered so that sorting touches
// one small array instead of the segments and their infos.
type ratioKey struct {
	live, size, addr uint64
	si               int32
}

// cmpRatio is sortByRatio's order: live bytes per byte of segment, exactly
// (128-bit cross products), then live bytes, then address.
func cmpRatio(a, b *ratioKey) int {
	h1, l1 := bits.Mul64(a.live, b.size)
	h2, l2 := bits.Mul64(b.live, a.size)
	switch {
	case h1 < h2 || (h1 == h2 && l1 < l2):
		return -1
	case h1 > h2 || (h1 == h2 && l1 > l2):
		return 1
	case a.live != b.live:
		if a.live < b.live {
			return -1
		}
		return 1
	}
	return cmpAddr(a.addr, b.addr)
}

// ratioIndexBits is how many low bits of a packed sort key hold the index.
const ratioIndexBits = 20

// sortByRatio orders segment indices by cmpRatio, a total order, so the
// result depends only on the segments. When sizes is not nil (len(segs)
// long) it receives the segments' sizes in the new order.
//
// Usually it sorts plain integers: the bits of the floating-point ratio
// live/size (exact operands below 2^53; non-negative floats order as their
// bits do), its low ratioIndexBits bits replaced by the key's index. Correctly
// rounded division and the truncation are monotone, so a smaller integer
// part never contradicts cmpRatio; runs with equal integer parts are then
// sorted by cmpRatio itself.
func (pl *planner) sortByRatio(segs []int32, sizes []int64) {
	keys := make([]ratioKey, len(segs))
	packed := make([]uint64, len(segs))
	fast := len(segs) <= 1<<ratioIndexBits
	for i, si := range segs {
		s := &pl.l.Segments[si]
		live, size := uint64(pl.segs[si].live), uint64(s.Size)
		keys[i] = ratioKey{live, size, s.Addr, si}
		if live >= 1<<53 || size >= 1<<53 || size == 0 {
			fast = false
		}
		if fast {
			r := math.Float64bits(float64(live) / float64(size))
			packed[i] = r&^(1<<ratioIndexBits-1) | uint64(i)
		}
	}
	if !fast {
		slices.SortFunc(keys, func(a, b ratioKey) int { return cmpRatio(&a, &b) })
		for i, k := range keys {
			segs[i] = k.si
		}
	} else {
		slices.Sort(packed)
		const mask = 1<<ratioIndexBits - 1
		var run []int32
		byRatio := func(a, b int32) int { return cmpRatio(&keys[a], &keys[b]) }
		for i := 0; i < len(packed); {
			j := i + 1
			for j < len(packed) && packed[j]>>ratioIndexBits == packed[i]>>ratioIndexBits {
				j++
			}
			if j-i == 1 {
				segs[i] = keys[packed[i]&mask].si
				i = j
				continue
			}
			run = run[:0]
			for _, x := range packed[i:j] {
				run = append(run, int32(x&mask))
			}
			slices.SortFunc(run, byRatio)
			for k, x := range run {
				segs[i+k] = keys[x].si
				packed[i+k] = uint64(x)
			}
			i = j
		}
		if sizes != nil {
			for i, x := range packed {
				sizes[i] = int64(keys[x&mask].size)
			}
		}
		return
	}
	if sizes != nil {
		for i, k := range keys {
			sizes[i] = int64(k.size)
		}
	}
}

// movableBlocks returns the movable blocks of segment si, largest first
// (address order among equals): placing large blocks first is the
// best-fit-decreasing rule of bin packing. idx receives their indices in
// the segment's Blocks, in the same order.
func (pl *planner) movableBlocks(si int32, dst []mem.Block, idx []int32) ([]mem.Block, []int32) {
	s := &pl.l.Segments[si]
	bs := s.Blocks
	dst, idx = dst[:0], idx[:0]
	for j := range bs {
		if pl.movable(s, bs[j]) {
			idx = append(idx, int32(j))
		}
	}
	if len(idx) > 1 {
		// Blocks are in address order, so indices order equal sizes as
		// addresses would.
		slices.SortFunc(idx, func(a, b int32) int {
			switch x, y := bs[a].Size, bs[b].Size; {
			case x > y:
				return -1
			case x < y:
				return 1
			}
			return int(a - b)
		})
	}
	for _, j := range idx {
		dst = append(dst, bs[j])
	}
	return dst, idx
}

// undo is one tentative placement: n bytes taken from the front of h.
type undo struct {
	h hole
	n int64
}

// place puts every block into the best-fitting hole of hs outside segment
// exclude (-1: none), appending the moves to moves and the placements to log.
// On failure it undoes its own placements, puts back the excluded holes it
// met, and reports false.
//
// For every move it appends the source and destination segments to pl.msegs
// (truncated again on failure), which spares simulate a search per move;
// idx, when not nil, holds the blocks' indices in segment src, which spares
// simulate the search for the block too.
func (pl *planner) place(hs *holeSet, blocks []mem.Block, idx []int32, src, exclude int32, moves []Move, log []undo) ([]Move, []undo, bool) {
	start, startMoves, startSegs := len(log), len(moves), len(pl.msegs)
	hs.stash = hs.stash[:0]
	for k, b := range blocks {
		h, ok := hs.bestFit(b.Size, exclude)
		if ok && pl.r.Slots && h.size != b.Size {
			// A size-class block moves only into a free slot of its size;
			// in the allocator's own layouts every free block of a pool
			// that holds the block is one (a slab's tail is smaller), but a
			// layout from another allocator read under these rules
			// (--allocator sizeclass on a snapshot) has other free blocks.
			ok = false
		}
		if !ok {
			for i := len(log) - 1; i >= start; i-- {
				hs.untake(log[i].h, log[i].n)
			}
			hs.restoreStash()
			pl.msegs = pl.msegs[:startSegs]
			return moves[:startMoves], log[:start], false
		}
		to := hs.take(h, b.Size)
		log = append(log, undo{h, b.Size})
		moves = append(moves, Move{From: b.Addr, To: to, Size: b.Size})
		j := int32(-1)
		if idx != nil {
			j = idx[k]
		}
		pl.msegs = append(pl.msegs, segPair{src, h.seg, j})
	}
	return moves, log, true
}

// planCompact evacuates segments, group by group: see doc.go, "Compaction".
func (pl *planner) planCompact(p *Plan) {
	capped := false
	var blocks []mem.Block
	var bidx []int32
	var log []undo
	received := make([]bool, len(pl.l.Segments))
	dead := make([]bool, len(pl.l.Segments))
	for gi := range pl.groups {
		g := &pl.groups[gi]
		if g.expandable {
			continue
		}
		var cands []int32
		for _, si := range g.segs {
			if info := pl.segs[si]; info.live > 0 && !info.pinned {
				cands = append(cands, si)
			}
		}
		if len(cands) == 0 {
			continue
		}
		// sizes[i] is the size of cands[i]: the loops below read it in order
		// rather than from the segments, in ratio order all over memory.
		sizes := make([]int64, len(cands))
		pl.sortByRatio(cands, sizes)
		g.cands = cands
		minSize := slices.Min(sizes)
		// Only a prefix of the candidates whose sizes add up to at most the
		// group's free bytes can ever be evacuated (see compactBound); the
		// segments past it will be kept for sure, so blocks go there first
		// (tier 0), and into possibly-evacuated ones (tier 1) only when they
		// must.
		pos := pl.pos // candidate position by segment index; -1 for others
		for _, si := range g.segs {
			pos[si] = -1
		}
		var cum int64
		kmax := len(cands)
		for i, si := range cands {
			pos[si] = i
			cum += sizes[i]
			if cum > g.free && kmax == len(cands) {
				kmax = i
			}
		}
		// The holes in (rank, address) order, the order of the holes of one
		// size in the set (cmpHole), so that build need not sort them: a
		// stable counting sort by rank of the holes in address order
		// (segments in memory order, which is cache-friendly), one pass to
		// count, one to place.
		count := make([]int32, len(cands)+2) // count[rank+1], then starts
		rankOf := func(si int32) (int8, int32) {
			if i := pos[si]; i >= 0 {
				if i < kmax {
					return 1, int32(len(cands) - i) // fuller segments first
				}
				return 0, int32(len(cands) - i)
			}
			return 0, 0
		}
		for _, si := range g.segs {
			if pl.segs[si].used == 0 {
				continue // wholly free already: filling it would undo a gain
			}
			_, rank := rankOf(si)
			for _, b := range pl.l.Segments[si].Blocks {
				if b.State == mem.Free {
					count[rank+1]++
				}
			}
		}
		for r := 1; r < len(count); r++ {
			count[r] += count[r-1]
		}
		initial := make([]hole, count[len(count)-1])
		for _, si := range g.segs {
			if pl.segs[si].used == 0 {
				continue
			}
			tier, rank := rankOf(si)
			for _, b := range pl.l.Segments[si].Blocks {
				if b.State == mem.Free {
					initial[count[rank]] = hole{tier: tier, rank: rank, seg: si, size: b.Size, addr: b.Addr}
					count[rank]++
				}
			}
		}
		hs := newHoleSet(len(initial))
		hs.build(initial)
		hs.dead = dead
		// The candidate's own free bytes, which cannot receive its blocks.
		ownFree := func(si int32) int64 {
			return pl.l.Segments[si].Size - pl.segs[si].used
		}
		var freed int64 // bytes of segments evacuated in this group
		for ci, si := range cands {
			if freed+minSize > g.free {
				break // no room for any candidate left (freed only grows)
			}
			if freed+sizes[ci] > g.free {
				continue // no room for it in this group, whatever the packing
			}
			if received[si] {
				continue
			}
			blocks, bidx = pl.movableBlocks(si, blocks, bidx)
			if pl.capped(pl.segs[si].live, len(blocks)) {
				capped = true
				continue
			}
			if pl.segs[si].live > hs.bytes-ownFree(si) {
				continue // hs.bytes may still count holes of dead segments: a quick test only
			}
			var ok bool
			n := len(p.Moves)
			p.Moves, log, ok = pl.place(hs, blocks, bidx, si, si, p.Moves, log[:0])
			if !ok {
				continue
			}
			dead[si] = true // its remaining holes leave the set when met
			for _, u := range log {
				received[u.h.seg] = true
			}
			freed += sizes[ci]
			pl.moved += pl.segs[si].live
			pl.nmoves += len(p.Moves) - n
		}
	}
	p.Reached = !capped
	if capped {
		p.Notes = append(p.Notes, "capped: some segments were left because evacuating them would pass the byte or move cap")
	}
}

// compactBound is the lower bound of doc.go, "Lower bound for compaction":
// for each group g, the least live bytes of any set of its segments whose
// sizes add up to at least freed[g] (and at most the group's free bytes),
// summed over the groups. Exact by dynamic programming over 2 MiB units when
// the table is small (boundDPCells), otherwise relaxed to fractions of
// segments, which greedy by live bytes per segment byte solves exactly.
func (pl *planner) compactBound(freed []int64) int64 {
	var bound int64
	for gi := range pl.groups {
		if freed[gi] <= 0 || pl.groups[gi].expandable {
			continue
		}
		items := pl.groups[gi].cands // sorted by sortByRatio (planCompact)
		if items == nil {
			for _, si := range pl.groups[gi].segs {
				if info := pl.segs[si]; info.live > 0 && !info.pinned {
					items = append(items, si)
				}
			}
			pl.sortByRatio(items, nil)
		}
		need, limit := freed[gi], pl.groups[gi].free
		// A segment whose largest block fits in no free run of another
		// segment is emptied only by moving, besides its own live bytes,
		// those its largest block's new place overlaps (placeCost); one
		// whose largest block fits in no other segment is never emptied.
		// So a set of segments costs at least the knapsack of the easy ones
		// (extra 0) when it holds only those, and otherwise the knapsack of
		// all that can be emptied plus the least extra (doc.go).
		var easy, can []int32
		eMin := int64(-1)
		for _, si := range items {
			e := pl.placeCost(int32(gi), si)
			if e < 0 {
				continue
			}
			can = append(can, si)
			if e == 0 {
				easy = append(easy, si)
			} else if eMin < 0 || e < eMin {
				eMin = e
			}
		}
		var k int64
		switch {
		case len(can) == 0:
			k = pl.knapsackBound(items, need, limit) // cannot happen: the plan freed some
		case eMin < 0:
			k = pl.knapsackBound(easy, need, limit)
		case len(easy) == 0:
			k = pl.knapsackBound(can, need, limit) + eMin
		default:
			k = min(pl.knapsackBound(can, need, limit)+eMin, pl.knapsackBound(easy, need, limit))
		}
		bound += k
	}
	return bound
}

// knapsackBound is min Σ live(S) over sets S of items (sorted by
// sortByRatio) with need ≤ Σ size(S) ≤ limit, or a lower bound of it: exact
// by boundDP when its table is small, otherwise boundLP's relaxation (which
// also stays a bound when no set reaches need).
func (pl *planner) knapsackBound(items []int32, need, limit int64) int64 {
	if b, ok := pl.boundDP(items, need, limit); ok {
		return b
	}
	return pl.boundLP(items, need, limit)
}

// placeCost is the least live bytes that a place for segment si's largest
// movable block overlaps, over the places in the other segments of group
// gi: 0 when a free run of another segment holds it, -1 when no other
// segment is large enough. Every plan that empties
// si puts that block in another segment, where every live block its place
// overlaps has moved first, and those blocks are in no emptied segment, so
// they add to the plan's moved bytes beyond the emptied segments' own. The
// least overlap of a place of a given size is reached at a place that starts
// where a block starts (slide it left to the start of the block its left
// edge lies in: it overlaps no new block), and it grows with the size, so the
// largest block gives the largest extra.
func (pl *planner) placeCost(gi, si int32) int64 {
	var big int64
	for _, b := range pl.l.Segments[si].Blocks {
		if b.State != mem.Free {
			big = max(big, b.Size)
		}
	}
	best := int64(-1)
	for _, sj := range pl.groups[gi].segs {
		s := &pl.l.Segments[sj]
		if sj == si || s.Size < big {
			continue
		}
		// Two pointers: the blocks [i, j) overlap [start(i), start(i)+big).
		var live int64
		j := 0
		for i := range s.Blocks {
			end := s.Blocks[i].Addr + uint64(big)
			if end > s.End() {
				break
			}
			for j < len(s.Blocks) && s.Blocks[j].Addr < end {
				if s.Blocks[j].State != mem.Free {
					live += s.Blocks[j].Size
				}
				j++
			}
			if best < 0 || live < best {
				best = live
				if best == 0 {
					return 0
				}
			}
			if s.Blocks[i].State != mem.Free {
				live -= s.Blocks[i].Size
			}
		}
	}
	return best
}

// boundDPCells bounds the table of boundDP (items × units): 2^20 cells take
// about a millisecond.
const boundDPCells = 1 << 20

// boundDP is min Σ live(S) over sets S of items with need ≤ Σ size(S) ≤ limit,
// by a knapsack table over sizes in units of their greatest common divisor
// with 2 MiB (cudaMalloc segments and slabs are whole 2 MiB pages). It
// reports false when the sizes are not multiples of 512 or the table would
// be too large.
func (pl *planner) boundDP(items []int32, need, limit int64) (int64, bool) {
	u := int64(mem.PageSize)
	for _, si := range items {
		u = gcd(u, pl.l.Segments[si].Size)
	}
	if u < 512 {
		return 0, false
	}
	var total int64
	for _, si := range items {
		total += pl.l.Segments[si].Size
	}
	w := min(total, limit) / u
	if w*int64(len(items)) > boundDPCells || need > w*u {
		return 0, false
	}
	const inf = int64(1) << 62
	dp := make([]int64, w+1)
	for i := range dp {
		dp[i] = inf
	}
	dp[0] = 0
	for _, si := range items {
		sz, live := pl.l.Segments[si].Size/u, pl.segs[si].live
		for x := w; x >= sz; x-- {
			if dp[x-sz] < inf && dp[x-sz]+live < dp[x] {
				dp[x] = dp[x-sz] + live
			}
		}
	}
	best := inf
	for x := (need + u - 1) / u; x <= w; x++ {
		best = min(best, dp[x])
	}
	if best == inf {
		return 0, false
	}
	return best, true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// boundLP is boundDP's linear relaxation (fractions of segments allowed),
// solved greedily by live bytes per segment byte; rounded down. items must
// be sorted by sortByRatio.
func (pl *planner) boundLP(items []int32, need, limit int64) int64 {
	need = min(need, limit)
	var bound int64
	for _, si := range items {
		if need <= 0 {
			break
		}
		size, live := pl.l.Segments[si].Size, pl.segs[si].live
		take := min(size, need)
		if take == size {
			bound += live
		} else {
			// floor(live × take / size), exactly.
			hi, lo := bits.Mul64(uint64(live), uint64(take))
			q, _ := bits.Div64(hi, lo, uint64(size))
			bound += int64(q)
		}
		need -= take
	}
	return bound
}
