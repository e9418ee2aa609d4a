// Coalescing one segment whose Relocate is a memmove (the arena): repairs for
// windows whose displaced blocks do not fit, and the exact bound for small
// segments.
// See doc.go for the overview.

package defrag

import (
	"slices"

	"github.com/gpufrag/gpufrag/mem"
)

// maxRepairs bounds the slides repairWindow tries per window. Each slide
// merges two gaps, so a segment with k gaps needs at most k − 1; 16 keeps the
// planner linear on large arenas while covering every small case.
const maxRepairs = 16

// span is a range [addr, addr+size) of a segment.
type span struct {
	addr uint64
	size int64
}

func (s span) end() uint64 { return s.addr + uint64(s.size) }

// repairWindow empties window [ws, ws+size) of segment si when its displaced
// blocks do not fit in the gaps outside it: it slides blocks that stay down
// into the gap before them (a memmove over their own range), each slide
// merging the gaps on both sides of the block, until best fit decreasing
// places every displaced block. Moves are ordered so each destination is free
// when its move runs: the slides first, in the order chosen, then the
// displaced blocks. It reports false when maxRepairs slides do not suffice.
func (pl *planner) repairWindow(si int32, ws uint64, size int64) ([]Move, bool) {
	s := &pl.l.Segments[si]
	we := ws + uint64(size)
	var stay []span
	var disp []mem.Block
	occEnd := we
	for _, b := range s.Blocks {
		switch {
		case b.State == mem.Free:
		case b.Addr < we && b.End() > ws:
			disp = append(disp, b)
			occEnd = max(occEnd, b.End())
		default:
			stay = append(stay, span{b.Addr, b.Size})
		}
	}
	slices.SortFunc(disp, func(a, b mem.Block) int {
		if a.Size != b.Size {
			return int(b.Size - a.Size)
		}
		if a.Addr < b.Addr {
			return -1
		}
		return 1
	})
	var slides []Move
	for range maxRepairs + 1 {
		// Occupied ranges in address order: staying blocks and the window.
		occ := make([]span, 0, len(stay)+1)
		inserted := false
		for _, st := range stay {
			if !inserted && st.addr >= ws {
				occ = append(occ, span{ws, int64(occEnd - ws)})
				inserted = true
			}
			occ = append(occ, st)
		}
		if !inserted {
			occ = append(occ, span{ws, int64(occEnd - ws)})
		}
		gaps := make([]span, 0, len(occ)+1)
		cur := s.Addr
		for _, o := range occ {
			if o.addr > cur {
				gaps = append(gaps, span{cur, int64(o.addr - cur)})
			}
			cur = o.end()
		}
		if s.End() > cur {
			gaps = append(gaps, span{cur, int64(s.End() - cur)})
		}
		// Best fit decreasing into a copy of the gaps.
		free := slices.Clone(gaps)
		moves := slices.Clone(slides)
		unplaced := int64(0)
		for _, b := range disp {
			best := -1
			for i, g := range free {
				if g.size >= b.Size && (best < 0 || g.size < free[best].size) {
					best = i
				}
			}
			if best < 0 {
				unplaced = b.Size
				break
			}
			moves = append(moves, Move{From: b.Addr, To: free[best].addr, Size: b.Size})
			free[best].addr += uint64(b.Size)
			free[best].size -= b.Size
		}
		if unplaced == 0 {
			return moves, true
		}
		// Slide one staying block down: the smallest whose merged gaps can
		// take the block that did not fit, else the one merging the most.
		// gapBefore/gapAfter of staying block i, from the occupied ranges
		// (occ holds the staying blocks in order, with the window among them).
		pick, pickMerged, pickGB := -1, int64(0), int64(0)
		si := 0
		for k, o := range occ {
			if si == len(stay) || o != stay[si] {
				continue // the window
			}
			i := si
			si++
			var gb, ga int64
			prevEnd := s.Addr
			if k > 0 {
				prevEnd = occ[k-1].end()
			}
			gb = int64(o.addr - prevEnd)
			nextStart := s.End()
			if k+1 < len(occ) {
				nextStart = occ[k+1].addr
			}
			ga = int64(nextStart - o.end())
			if gb == 0 || ga == 0 {
				continue
			}
			// A gap next to the window is not a gap the displaced blocks
			// can use only when it is the window's own edge: occ already
			// excludes the window, so both gaps are real holes.
			merged := gb + ga
			better := pick < 0
			if !better {
				fits, pickFits := merged >= unplaced, pickMerged >= unplaced
				switch {
				case fits != pickFits:
					better = fits
				case fits:
					better = o.size < stay[pick].size
				default:
					better = merged > pickMerged
				}
			}
			if better {
				pick, pickMerged, pickGB = i, merged, gb
			}
		}
		if pick < 0 {
			return nil, false
		}
		gb := pickGB
		to := stay[pick].addr - uint64(gb)
		slides = append(slides, Move{From: stay[pick].addr, To: to, Size: stay[pick].size})
		stay[pick].addr = to
	}
	return nil, false
}

// exactCoalesceMax is the largest number of live blocks for which
// exactCoalesceBound searches every arrangement: 2^8 staying sets, each with
// at most 2^8 splits of the window's gap, stay under a millisecond.
const exactCoalesceMax = 8

// exactCoalesceBound is the least number of bytes any plan must move to leave
// segment si's free memory in one extent, found by exhaustive search: for
// every set T of blocks that keep their place, every gap between them that
// can hold the extent, and every split of that gap's remainder, it checks
// whether the other blocks can fill the remaining gaps exactly. A block not
// in T ends elsewhere, so it moves at least once; the answer is the least Σ
// sizes outside T over feasible arrangements. It reports false for segments
// with more than exactCoalesceMax live blocks or any block that cannot move.
func (pl *planner) exactCoalesceBound(si int32) (int64, bool) {
	s := &pl.l.Segments[si]
	var blocks []span
	for _, b := range s.Blocks {
		if b.State == mem.Free {
			continue
		}
		if !pl.movable(s, b) {
			return 0, false
		}
		blocks = append(blocks, span{b.Addr, b.Size})
	}
	n := len(blocks)
	if n > exactCoalesceMax {
		return 0, false
	}
	var live int64
	for _, b := range blocks {
		live += b.size
	}
	free := s.Size - live
	best := live
	for t := 0; t < 1<<n; t++ {
		var kept int64
		var moved []int64
		var gaps []int64
		cur := s.Addr
		for i, b := range blocks {
			if t&(1<<i) == 0 {
				moved = append(moved, b.size)
				continue
			}
			kept += b.size
			gaps = append(gaps, int64(b.addr-cur))
			cur = b.end()
		}
		gaps = append(gaps, int64(s.End()-cur))
		if live-kept >= best {
			continue
		}
		if coalesceFeasible(gaps, moved, free) {
			best = live - kept
		}
	}
	return best, true
}

// coalesceFeasible says whether the moved blocks can fill gaps exactly with
// one gap left holding a free extent of free bytes plus a split of the rest.
func coalesceFeasible(gaps, moved []int64, free int64) bool {
	slices.SortFunc(moved, func(a, b int64) int { return int(b - a) })
	// Subset sums of moved: the candidate sizes of the part left of the
	// extent.
	sums := map[int64]bool{0: true}
	for _, m := range moved {
		for _, v := range maps(sums) {
			sums[v+m] = true
		}
	}
	for j, g := range gaps {
		if g < free {
			continue
		}
		rest := g - free
		for a := range sums {
			if a > rest {
				continue
			}
			bins := make([]int64, 0, len(gaps)+1)
			for i, h := range gaps {
				if i != j && h > 0 {
					bins = append(bins, h)
				}
			}
			if a > 0 {
				bins = append(bins, a)
			}
			if rest-a > 0 {
				bins = append(bins, rest-a)
			}
			if exactFill(bins, moved, 0) {
				return true
			}
		}
	}
	return false
}

// maps returns the keys of m as a slice (so m can grow while they are used).
func maps(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// exactFill says whether items[i:] fill bins exactly (backtracking; items
// are sorted largest first).
func exactFill(bins, items []int64, i int) bool {
	if i == len(items) {
		for _, b := range bins {
			if b != 0 {
				return false
			}
		}
		return true
	}
	for k := range bins {
		if bins[k] < items[i] {
			continue
		}
		dup := false
		for k2 := range k {
			if bins[k2] == bins[k] {
				dup = true // same remaining capacity: same subtree
				break
			}
		}
		if dup {
			continue
		}
		bins[k] -= items[i]
		ok := exactFill(bins, items, i+1)
		bins[k] += items[i]
		if ok {
			return true
		}
	}
	return false
}
