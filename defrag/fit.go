// Making room for one request, and coalescing an arena.
// See doc.go for the overview.

package defrag

import (
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/mem"
)

// smallSize is the caching allocator's kSmallSize: rounded requests up to
// 1 MiB use the small pool, larger ones the large pool
// (research/pytorch-allocator.md §2).
const smallSize = mem.MiB

// minBlock is the allocation granularity of every allocator planned for:
// blocks start and end on multiples of 512 bytes.
const minBlock = 512

// maxFitTries bounds how many candidate windows planFit tries to empty, in
// order of cost, before it gives up (or slides, on an arena). A window fails
// only when the blocks it displaces cannot be packed elsewhere; 64 tries keep
// a 100,000-block plan within its time budget (each try is O(k log n) for k
// displaced blocks) and, on the scenario suite, the first or second window
// always succeeds.
const maxFitTries = 64

// fitWorkBudget, maxRepairWindows and maxRepairBlocks bound the work of a fit
// plan: displaced blocks over all windows tried are at most the blocks of
// the candidate segments plus 4,096, and the slides of repairWindow
// (O(blocks × gaps) each) are tried on the first 4 windows of segments of
// at most 4,096 blocks. Beyond, an arena falls back to sliding, which is
// linear. They keep a 100,000-block plan near the time of one pass over it.
const (
	fitWorkBudget    = 4096
	maxRepairWindows = 4
	maxRepairBlocks  = 4096
)

// window is a range [start, start+size) of one segment that a fit plan would
// empty; cost is the live bytes of the blocks overlapping it.
type window struct {
	cost        int64
	srank       int32 // the segment's place in address order
	seg         int32
	first, last int32 // the blocks overlapping the window: Blocks[first:last]
	big         int32 // the largest of them (set by fitExtra)
	start       uint64
}

// cmpWindow orders windows by cost, then address.
func cmpWindow(a, b window) int {
	switch {
	case a.cost != b.cost:
		if a.cost < b.cost {
			return -1
		}
		return 1
	case a.srank != b.srank:
		return int(a.srank - b.srank)
	case a.start < b.start:
		return -1
	case a.start > b.start:
		return 1
	}
	return 0
}

// fitGroups returns the groups a request of g.Size may be served from.
func (pl *planner) fitGroups(g Goal) []int32 {
	pool := g.Pool
	if pool == "" && pl.r.SizePools {
		pool = "large"
		if g.Size <= smallSize {
			pool = "small"
		}
	}
	var out []int32
	for gi := range pl.groups {
		gr := &pl.groups[gi]
		if gr.expandable || (pool != "" && gr.pool != pool) || (pl.r.Streams && gr.stream != g.Stream) {
			continue
		}
		out = append(out, int32(gi))
	}
	return out
}

// planFit makes a free run of g.Size bytes: see doc.go, "Making room".
func (pl *planner) planFit(p *Plan, g Goal) {
	groups := pl.fitGroups(g)
	var segs []int32
	for _, gi := range groups {
		segs = append(segs, pl.groups[gi].segs...)
	}
	if len(segs) == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("no segment can serve a request of %s: none of its pool and stream", mem.FormatBytesExact(g.Size)))
		return
	}
	// Every allocator here places blocks on 512-byte boundaries (the caching
	// allocator's kMinBlockSize, the arena's Align), so a request occupies
	// at least its size rounded up to 512: a window of that size keeps the
	// holes around it aligned.
	lb, ok := pl.fitIn(p, segs, mem.RoundUp(g.Size, minBlock))
	p.LowerBound += lb
	p.Reached = ok
}

// planCoalesce is GoalCompact on an allocator that never returns its segments
// (the arena): gather each segment's free memory into one extent.
func (pl *planner) planCoalesce(p *Plan) {
	p.Reached = true
	for _, si := range pl.order {
		s := &pl.l.Segments[si]
		if s.Expandable {
			continue
		}
		var free, largest int64
		for _, b := range s.Blocks {
			if b.State == mem.Free {
				free += b.Size
				largest = max(largest, b.Size)
			}
		}
		if free == largest {
			continue // already one extent (or none)
		}
		lb, ok := pl.coalesceSeg(p, si, free)
		if exact, found := pl.exactCoalesceBound(si); found {
			lb = max(lb, exact)
		}
		p.LowerBound += lb
		p.Reached = p.Reached && ok
	}
}

// coalesceSeg plans the coalescing of segment si, which holds free bytes in
// several free blocks, and returns the lower bound and whether it reached
// the goal. It takes coalesceFill's plan when that moves exactly the window
// bound, and otherwise the cheaper of coalesceFill's and fitIn's (packing
// into holes, repairs, sliding), running fitIn on the side and undoing it
// when it loses.
func (pl *planner) coalesceSeg(p *Plan, si int32, free int64) (int64, bool) {
	ws := pl.windows([]int32{si}, free)
	moves, cost, filled := pl.coalesceFill(si, free, ws)
	if filled && cost == ws[0].cost {
		pl.takeFill(p, si, moves, cost)
		return ws[0].cost, true
	}
	nm, nn, ns, moved, nmoves := len(p.Moves), len(p.Notes), len(pl.msegs), pl.moved, pl.nmoves
	lb, ok := pl.fitIn(p, []int32{si}, free)
	if !filled {
		return lb, ok
	}
	if ok {
		var fitCost int64
		for _, m := range p.Moves[nm:] {
			fitCost += m.Size
		}
		if fitCost <= cost {
			return lb, true
		}
	}
	p.Moves, p.Notes, pl.msegs, pl.moved, pl.nmoves = p.Moves[:nm], p.Notes[:nn], pl.msegs[:ns], moved, nmoves
	pl.takeFill(p, si, moves, cost)
	return lb, true
}

// takeFill appends coalesceFill's moves within segment si to p.
func (pl *planner) takeFill(p *Plan, si int32, moves []Move, cost int64) {
	p.Moves = append(p.Moves, moves...)
	pl.sameSeg(si, len(moves))
	pl.moved += cost
	pl.nmoves += len(moves)
}

// fitIn plans moves that leave a free run of size bytes in one of segs and
// returns the lower bound for that goal and whether it was reached. The
// displaced blocks go into holes of segs only (of the window's group).
func (pl *planner) fitIn(p *Plan, segs []int32, size int64) (int64, bool) {
	for _, si := range segs {
		for _, b := range pl.l.Segments[si].Blocks {
			if b.State == mem.Free && b.Size >= size {
				p.Notes = append(p.Notes, fmt.Sprintf("a free block of %s already holds %s: nothing to move",
					mem.FormatBytesExact(b.Size), mem.FormatBytesExact(size)))
				return 0, true
			}
		}
	}
	ws := pl.windows(segs, size)
	if len(ws) == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("no segment can be cleared to hold %s (too small, or blocks that cannot move are in the way)",
			mem.FormatBytesExact(size)))
		return 0, false
	}
	bound := pl.fitBound(ws, segs, size)
	holes := map[int32]*holeSet{}
	var blocks []mem.Block
	// Work budget: the blocks displaced over all tries, so that a goal whose
	// windows hold most of a large segment (coalescing a big arena) does not
	// try 64 of them; past it, the slide fallback (arena) or failure.
	budget := fitWorkBudget
	for _, si := range segs {
		budget += len(pl.l.Segments[si].Blocks)
	}
	repairs := 0
	for _, w := range ws {
		s := &pl.l.Segments[w.seg]
		in := s.Blocks[w.first:w.last]
		if budget -= len(in); budget < 0 {
			break
		}
		blocks = blocks[:0]
		for _, b := range in {
			if b.State != mem.Free {
				blocks = append(blocks, b)
			}
		}
		if pl.capped(w.cost, len(blocks)) {
			continue
		}
		gi := pl.segs[w.seg].group
		hs := holes[gi]
		if hs == nil {
			// Only the holes of segs: coalescing an arena segment
			// (coalesceSeg) gathers its own free memory, and a block
			// moved into another segment's hole would take a hole that
			// segment's own plan, made from the same layout, counts on.
			var initial []hole
			for _, sj := range segs {
				if pl.segs[sj].group != gi {
					continue
				}
				for _, b := range pl.l.Segments[sj].Blocks {
					if b.State == mem.Free {
						initial = append(initial, hole{seg: sj, size: b.Size, addr: b.Addr})
					}
				}
			}
			hs = newHoleSet(len(initial))
			hs.build(initial)
			holes[gi] = hs
		}
		// Take the window out of the holes: free blocks overlapping it keep
		// only their parts outside.
		end := w.start + uint64(size)
		var cut []mem.Block
		for _, b := range in {
			if b.State == mem.Free {
				cut = append(cut, b)
				hs.remove(hole{seg: w.seg, size: b.Size, addr: b.Addr})
				if b.Addr < w.start {
					hs.insert(hole{seg: w.seg, size: int64(w.start - b.Addr), addr: b.Addr})
				}
				if b.End() > end {
					hs.insert(hole{seg: w.seg, size: int64(b.End() - end), addr: end})
				}
			}
		}
		slices.SortFunc(blocks, func(a, b mem.Block) int {
			if a.Size != b.Size {
				return int(b.Size - a.Size)
			}
			if a.Addr < b.Addr {
				return -1
			}
			return 1
		})
		moves, _, ok := pl.place(hs, blocks, nil, w.seg, -1, nil, nil)
		if ok {
			p.Moves = append(p.Moves, moves...)
			pl.moved += w.cost
			pl.nmoves += len(moves)
			return bound, true
		}
		for _, b := range cut {
			if b.Addr < w.start {
				hs.remove(hole{seg: w.seg, size: int64(w.start - b.Addr), addr: b.Addr})
			}
			if b.End() > end {
				hs.remove(hole{seg: w.seg, size: int64(b.End() - end), addr: end})
			}
			hs.insert(hole{seg: w.seg, size: b.Size, addr: b.Addr})
		}
		if pl.r.Memmove && len(pl.groups[gi].segs) == 1 && repairs < maxRepairWindows && len(s.Blocks) <= maxRepairBlocks {
			repairs++
			if moves, ok := pl.repairWindow(w.seg, w.start, size); ok {
				var cost int64
				for _, m := range moves {
					cost += m.Size
				}
				if !pl.capped(cost, len(moves)) {
					p.Moves = append(p.Moves, moves...)
					pl.sameSeg(w.seg, len(moves))
					pl.moved += cost
					pl.nmoves += len(moves)
					return bound, true
				}
			}
		}
	}
	if pl.r.Memmove {
		if moves, si, ok := pl.slide(segs, size); ok {
			p.Moves = append(p.Moves, moves...)
			pl.sameSeg(si, len(moves))
			p.Notes = append(p.Notes, "no window could be emptied by packing its blocks into holes: slid blocks instead (memmove)")
			return bound, true
		}
	}
	p.Notes = append(p.Notes, fmt.Sprintf("could not make room for %s: the displaced blocks do not fit in the holes left (or the caps forbid it)",
		mem.FormatBytesExact(size)))
	return bound, false
}

// fitBound is the lower bound of a fit goal of size bytes over the windows
// ws (cheapest first, as windows returns them): see doc.go, "Making room".
// Each window's cost is raised by what its largest displaced block must
// displace in turn (fitExtra), which is where the bare window cost is loose
// on layouts of a few large blocks (KV grown by doubling): the cheapest
// window's largest block often fits in no hole outside it. Windows are
// refined cheapest first until the next one's bare cost reaches the best
// refined cost, or the work budget (fitBoundBudget passes over the blocks of
// segs) runs out; a window not refined, or not listed (windows keeps the
// maxFitTries cheapest), costs at least the bare cost of the last one
// looked at, so the bound never exceeds that.
func (pl *planner) fitBound(ws []window, segs []int32, size int64) int64 {
	n := 0
	for _, si := range segs {
		n += len(pl.l.Segments[si].Blocks)
	}
	work := fitBoundBudget * (n + fitWorkBudget)
	best := int64(-1)
	for _, w := range ws {
		if best >= 0 && w.cost >= best {
			return best
		}
		if work -= n; work < 0 {
			return w.cost // best is above it (or unset): unrefined windows cost at least w.cost
		}
		if extra, ok := pl.fitExtra(w, segs, size); ok && (best < 0 || w.cost+extra < best) {
			best = w.cost + extra
		}
	}
	last := ws[len(ws)-1].cost
	if best < 0 || (len(ws) == maxFitTries && last < best) {
		// No listed window can be cleared (any bound holds), or windows
		// past the list may be cheaper than the best refined one.
		return last
	}
	return best
}

// fitBoundBudget is how many passes over the candidate blocks fitBound may
// spend (each window it refines is one pass): it keeps the bound within a
// small multiple of the planner's own work on a 100,000-block layout. Not
// tuned on data: plans do not depend on it, and a smaller budget can only
// lower the bound (checked on BenchmarkPlan's layouts, whose times and
// moved/bound ratios it leaves unchanged, and on the defrag suite).
const fitBoundBudget = 8

// fitExtra is a lower bound on the live bytes, other than the window's, that
// any plan whose free run starts in the window's first block must move: the
// largest block b the window displaces must end up somewhere outside
// [end of the first block, window end) — a span every such run covers — in
// a segment of segs, so every other live block overlapping b's new place
// moves too. It is the least live bytes (blocks of the window cost nothing,
// they move anyway; b itself does, twice, unless the allocator's moves may
// overlap their source) overlapping any b-sized place, taken at a segment's or
// region's start or a block's start (sliding a place left to either never
// overlaps more). ok is false when b fits nowhere: no plan frees that run.
func (pl *planner) fitExtra(w window, segs []int32, size int64) (extra int64, ok bool) {
	s := &pl.l.Segments[w.seg]
	var big int64
	bi := int32(-1)
	for k, b := range s.Blocks[w.first:w.last] {
		if b.State != mem.Free && b.Size > big {
			big, bi = b.Size, w.first+int32(k)
		}
	}
	if big == 0 {
		return 0, true
	}
	w.big = bi
	exLo, exHi := s.Blocks[w.first].End(), w.start+uint64(size)
	best := int64(-1)
	for _, si := range segs {
		t := &pl.l.Segments[si]
		if t.Size < big {
			continue
		}
		if si != w.seg || exLo >= exHi {
			best = pl.leastOverlap(si, t.Addr, t.End(), big, w, best)
		} else {
			best = pl.leastOverlap(si, t.Addr, exLo, big, w, best)
			best = pl.leastOverlap(si, exHi, t.End(), big, w, best)
		}
		if best == 0 {
			return 0, true
		}
	}
	return best, best >= 0
}

// leastOverlap lowers best (-1: none yet) to the least live bytes, outside
// window w's own blocks, overlapping a place of n bytes inside [lo, hi) of
// segment si; places start at lo or at a block's start. The blocks tile the
// segment, so the block after the one a place starts in starts the next.
func (pl *planner) leastOverlap(si int32, lo, hi uint64, n int64, w window, best int64) int64 {
	if hi < lo || int64(hi-lo) < n {
		return best
	}
	bs := pl.l.Segments[si].Blocks
	cost := func(j int) int64 {
		switch {
		case bs[j].State == mem.Free:
			return 0
		case si == w.seg && int32(j) == w.big && !pl.r.Memmove:
			// b itself: a move's destination must be free, so a place
			// overlapping b's own bytes takes b two moves.
			return bs[j].Size
		case si == w.seg && int32(j) >= w.first && int32(j) < w.last:
			return 0 // the window's blocks move anyway
		}
		return bs[j].Size
	}
	// i: the block the place starts in; j: past the last block starting
	// before the place's end; cur: the cost of blocks [i, j).
	i := 0
	for i < len(bs) && bs[i].End() <= lo {
		i++
	}
	j, cur := i, int64(0)
	for x := lo; i < len(bs) && x+uint64(n) <= hi; {
		for end := x + uint64(n); j < len(bs) && bs[j].Addr < end; j++ {
			cur += cost(j)
		}
		if best < 0 || cur < best {
			best = cur
		}
		if best == 0 || i+1 == len(bs) {
			break
		}
		cur -= cost(i)
		i++
		x = bs[i].Addr
	}
	return best
}

// windows lists, for every segment of segs at least size bytes long, the
// windows [start, start+size) that begin at a block's start and overlap no
// block that cannot move, keeping the maxFitTries cheapest, cheapest first.
// An optimal window can always be slid left to the start of the block its
// left edge falls in without overlapping any new block, so these are all the
// windows one needs. Two pointers make it O(blocks) per segment; keeping the
// best few in a small sorted slice costs O(log k) per window that enters it.
func (pl *planner) windows(segs []int32, size int64) []window {
	best := make([]window, 0, maxFitTries+1)
	rank := make(map[int32]int32, len(segs))
	for i, si := range pl.order {
		rank[si] = int32(i)
	}
	for _, si := range segs {
		s := &pl.l.Segments[si]
		if s.Size < size {
			continue
		}
		bs := s.Blocks
		var cost int64
		pinned, j := 0, 0
		for i := range bs {
			start := bs[i].Addr
			end := start + uint64(size)
			if end > s.End() {
				break
			}
			for ; j < len(bs) && bs[j].Addr < end; j++ {
				switch b := bs[j]; {
				case b.State == mem.Free:
				case pl.movable(s, b):
					cost += b.Size
				default:
					pinned++
				}
			}
			if pinned == 0 && (len(best) < maxFitTries || cost <= best[len(best)-1].cost) {
				w := window{cost: cost, srank: rank[si], seg: si, start: start, first: int32(i), last: int32(j)}
				if len(best) < maxFitTries || cmpWindow(w, best[len(best)-1]) < 0 {
					k, _ := slices.BinarySearchFunc(best, w, cmpWindow)
					best = slices.Insert(best, k, w)
					if len(best) > maxFitTries {
						best = best[:maxFitTries]
					}
				}
			}
			switch b := bs[i]; {
			case b.State == mem.Free:
			case pl.movable(s, b):
				cost -= b.Size
			default:
				pinned--
			}
		}
	}
	return best
}

// slide packs the live blocks of one segment against one of its ends, with
// moves that may overlap their own source (a memmove; only for allocators
// whose Relocate allows it). Sliding down keeps the blocks below the first
// hole in place, sliding up those above the last; the cheaper wins. It
// returns false when no segment of segs has size free bytes in all or a cap
// forbids the moves.
func (pl *planner) slide(segs []int32, size int64) ([]Move, int32, bool) {
	for _, si := range segs {
		s := &pl.l.Segments[si]
		if pl.segs[si].pinned || s.Size-pl.segs[si].used < size {
			continue
		}
		var down, up []Move
		var downCost, upCost int64
		cur := s.Addr
		for _, b := range s.Blocks {
			if b.State == mem.Free {
				continue
			}
			if b.Addr != cur {
				down = append(down, Move{From: b.Addr, To: cur, Size: b.Size})
				downCost += b.Size
			}
			cur += uint64(b.Size)
		}
		top := s.End()
		for i := len(s.Blocks) - 1; i >= 0; i-- {
			b := s.Blocks[i]
			if b.State == mem.Free {
				continue
			}
			top -= uint64(b.Size)
			if b.Addr != top {
				up = append(up, Move{From: b.Addr, To: top, Size: b.Size})
				upCost += b.Size
			}
		}
		moves, cost := down, downCost
		if upCost < downCost {
			moves, cost = up, upCost
		}
		if pl.capped(cost, len(moves)) {
			continue
		}
		pl.moved += cost
		pl.nmoves += len(moves)
		return moves, si, true
	}
	return nil, -1, false
}

// sameSeg records n moves within segment si in pl.msegs.
func (pl *planner) sameSeg(si int32, n int) {
	for range n {
		pl.msegs = append(pl.msegs, segPair{si, si, -1})
	}
}

// planUnmaps describes the VMM-backed segments (expandable segments, vmm):
// they are never compacted by copying, because their free pages can be
// unmapped and mapped again anywhere in the virtual range. For GoalCompact it
// lists the whole free pages (what empty_cache unmaps); for GoalFit on a pool
// served by expandable segments, the request is reached when device-free
// memory plus those pages can map it.
func (pl *planner) planUnmaps(p *Plan, g Goal) {
	var segsSeen int
	for _, si := range pl.order {
		s := &pl.l.Segments[si]
		if !s.Expandable {
			continue
		}
		segsSeen++
		ps := pl.pageSize(s)
		for _, b := range s.Blocks {
			if b.State != mem.Free {
				continue
			}
			off := int64(b.Addr - s.Addr)
			first := mem.RoundUp(off, ps)
			last := (off + b.Size) / ps * ps
			if last > first {
				n := (last - first) / ps
				p.Unmaps = append(p.Unmaps, Unmap{Addr: s.Addr + uint64(first), Pages: n, PageSize: ps})
				p.UnmapPages += n
				p.UnmapBytes += n * ps
			}
		}
	}
	if segsSeen == 0 {
		return
	}
	p.Notes = append(p.Notes, fmt.Sprintf("%d expandable (VMM-backed) segments need no compaction: %d whole free pages (%s) can be unmapped and remapped without copying",
		segsSeen, p.UnmapPages, mem.FormatBytesExact(p.UnmapBytes)))
	if g.Kind == GoalFit && !p.Reached {
		for gi := range pl.groups {
			gr := &pl.groups[gi]
			if gr.expandable && (g.Pool == "" || g.Pool == gr.pool) && (!pl.r.Streams || gr.stream == g.Stream) &&
				pl.l.DeviceFree+p.UnmapBytes >= g.Size {
				p.Reached = true
				p.Notes = append(p.Notes, "the request can be served by mapping pages of an expandable segment")
				break
			}
		}
	}
}

// pageSize is the physical page of a VMM-backed segment: the caching
// allocator's expandable segments map 2 MiB pages in the small pool and
// 20 MiB in the large one (research/pytorch-allocator.md §4); other pools use
// Options.PageSize, or the driver's 2 MiB.
func (pl *planner) pageSize(s *mem.Segment) int64 {
	if pl.r.SizePools {
		if s.Pool == "small" {
			return 2 * mem.MiB
		}
		return 20 * mem.MiB
	}
	if pl.o.PageSize > 0 {
		return pl.o.PageSize
	}
	return mem.PageSize
}
