package defrag_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// grain is the unit of the small random layouts below.
const grain = 512 * mem.KiB

// genLayout draws a small caching-style layout: up to five large-pool
// segments of 2–12 grains, tiled by random active and free blocks.
func genLayout(t *rapid.T) mem.Layout {
	l := mem.Layout{Capacity: mem.GiB}
	addr := mem.DefaultVABase
	nseg := rapid.IntRange(1, 5).Draw(t, "segments")
	for range nseg {
		units := rapid.IntRange(2, 12).Draw(t, "units")
		s := mem.Segment{Addr: addr, Size: int64(units) * grain, Pool: "large"}
		cur := 0
		for cur < units {
			n := rapid.IntRange(1, units-cur).Draw(t, "block")
			b := mem.Block{Addr: addr + uint64(cur)*uint64(grain), Size: int64(n) * grain}
			if rapid.Bool().Draw(t, "active") {
				b.State, b.Requested = mem.Active, b.Size
			}
			// Keep the layout canonical: no two adjacent free blocks.
			if k := len(s.Blocks); k > 0 && b.State == mem.Free && s.Blocks[k-1].State == mem.Free {
				s.Blocks[k-1].Size += b.Size
			} else {
				s.Blocks = append(s.Blocks, b)
			}
			cur += n
		}
		l.Segments = append(l.Segments, s)
		addr += uint64(s.Size) + uint64(mem.PageSize)
	}
	var reserved int64
	for _, s := range l.Segments {
		reserved += s.Size
	}
	l.DeviceFree = l.Capacity - reserved
	return l
}

// binsFit says whether items fit in bins (exhaustive; tiny inputs only).
func binsFit(bins, items []int64, i int) bool {
	if i == len(items) {
		return true
	}
	for k := range bins {
		if bins[k] >= items[i] {
			bins[k] -= items[i]
			ok := binsFit(bins, items, i+1)
			bins[k] += items[i]
			if ok {
				return true
			}
		}
	}
	return false
}

// TestCompactBoundIsALowerBound checks the compaction bound against the true
// optimum, found by brute force on small layouts: over every set S of
// segments whose live blocks can be packed (exhaustively) into the free
// blocks of the other non-empty segments, the least live bytes of S that
// frees at least the plan's FreedBytes. The bound must not exceed it, and the
// plan must not beat it.
func TestCompactBoundIsALowerBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t)
		p, err := defrag.PlanLayout(l, defrag.Goal{Kind: defrag.GoalCompact}, defrag.Options{Allocator: registry.MustParse("caching")})
		if err != nil {
			t.Fatal(err)
		}
		n := len(l.Segments)
		used := make([]int64, n)
		for i, s := range l.Segments {
			for _, b := range s.Blocks {
				if b.State != mem.Free {
					used[i] += b.Size
				}
			}
		}
		best := int64(-1)
		for set := 1; set < 1<<n; set++ {
			var size, live int64
			var items, bins []int64
			ok := true
			for i, s := range l.Segments {
				if set&(1<<i) != 0 {
					if used[i] == 0 {
						ok = false // already free: not a gain
						break
					}
					size += s.Size
					live += used[i]
					for _, b := range s.Blocks {
						if b.State != mem.Free {
							items = append(items, b.Size)
						}
					}
				} else if used[i] > 0 {
					for _, b := range s.Blocks {
						if b.State == mem.Free {
							bins = append(bins, b.Size)
						}
					}
				}
			}
			if !ok || size < p.FreedBytes || (best >= 0 && live >= best) {
				continue
			}
			if binsFit(bins, items, 0) {
				best = live
			}
		}
		if p.FreedBytes == 0 {
			if p.BytesMoved != 0 || p.LowerBound != 0 {
				t.Fatalf("nothing freed, yet moved %d, bound %d", p.BytesMoved, p.LowerBound)
			}
			return
		}
		if best < 0 {
			t.Fatalf("the plan frees %d bytes but brute force finds no way to", p.FreedBytes)
		}
		if p.LowerBound > best {
			t.Fatalf("bound %d above the optimum %d:\n%s", p.LowerBound, best, l)
		}
		if p.BytesMoved < best {
			t.Fatalf("plan moves %d, below the brute-force optimum %d: the brute force is wrong", p.BytesMoved, best)
		}
	})
}

// TestCompactBoundRelaxedOptimum checks the compaction bound against the
// optimum of a relaxation that also lets blocks of the segments that stay
// move (what the refinement with placeCost counts), found by brute force on
// small layouts: over every set S of non-empty segments freeing at least the
// plan's FreedBytes and every set X of live blocks of the other segments,
// live(S) + size(X), when the blocks of S pack into the free runs of the
// other segments (wholly free ones included) once X has left them and S is
// no larger than the free bytes (which moves conserve). Where X's
// blocks go is ignored, as is the order of the moves, so every plan that
// frees as much moves at least that: the bound must not exceed it, and a
// plan must not beat it.
func TestCompactBoundRelaxedOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t)
		p, err := defrag.PlanLayout(l, defrag.Goal{Kind: defrag.GoalCompact}, defrag.Options{Allocator: registry.MustParse("caching")})
		if err != nil {
			t.Fatal(err)
		}
		if p.FreedBytes == 0 {
			return
		}
		var live []blockRef
		for i, s := range l.Segments {
			for j, b := range s.Blocks {
				if b.State != mem.Free {
					live = append(live, blockRef{i, j})
				}
			}
		}
		if len(live) > 14 {
			t.Skip("too many live blocks for the brute force")
		}
		var totalFree int64 // moves conserve it, and S ends wholly free
		for _, s := range l.Segments {
			for _, b := range s.Blocks {
				if b.State == mem.Free {
					totalFree += b.Size
				}
			}
		}
		best := int64(-1)
		n := len(l.Segments)
		for set := 1; set < 1<<n; set++ {
			var size, cost int64
			var items []int64
			var outside []blockRef
			ok := true
			for _, r := range live {
				b := l.Segments[r.seg].Blocks[r.blk]
				if set&(1<<r.seg) != 0 {
					cost += b.Size
					items = append(items, b.Size)
				} else {
					outside = append(outside, r)
				}
			}
			for i, s := range l.Segments {
				if set&(1<<i) != 0 {
					size += s.Size
					ok = ok && len(items) > 0
				}
			}
			empty := true
			for i := range l.Segments {
				if set&(1<<i) == 0 {
					continue
				}
				has := false
				for _, b := range l.Segments[i].Blocks {
					has = has || b.State != mem.Free
				}
				empty = empty && !has
				if !has {
					ok = false // already free: not a gain
				}
			}
			if !ok || empty || size < p.FreedBytes || size > totalFree {
				continue
			}
			for x := 0; x < 1<<len(outside); x++ {
				c := cost
				gone := map[blockRef]bool{}
				for k, r := range outside {
					if x&(1<<k) != 0 {
						c += l.Segments[r.seg].Blocks[r.blk].Size
						gone[r] = true
					}
				}
				if best >= 0 && c >= best {
					continue
				}
				var bins []int64
				for i, s := range l.Segments {
					if set&(1<<i) != 0 {
						continue
					}
					var run int64
					for j, b := range s.Blocks {
						if b.State == mem.Free || gone[blockRef{i, j}] {
							run += b.Size
							continue
						}
						if run > 0 {
							bins = append(bins, run)
						}
						run = 0
					}
					if run > 0 {
						bins = append(bins, run)
					}
				}
				if binsFit(bins, items, 0) {
					best = c
				}
			}
		}
		if best < 0 {
			t.Fatalf("the plan frees %d bytes but brute force finds no way to", p.FreedBytes)
		}
		if p.LowerBound > best {
			t.Fatalf("bound %d above the relaxed optimum %d:\n%s", p.LowerBound, best, l)
		}
		if p.BytesMoved < best {
			t.Fatalf("plan moves %d, below the relaxed optimum %d: the brute force is wrong", p.BytesMoved, best)
		}
	})
}

// blockRef is block blk of segment seg.
type blockRef struct{ seg, blk int }

// placeAll places the blocks ms (each where it fits in free grains, a
// place overlapping its own old bytes costing its size again) and returns
// the least total cost below best (-1: none), starting from cost; ok is
// false when none is below best.
func placeAll(l mem.Layout, free [][]bool, ms []blockRef, cost, best int64) (int64, bool) {
	if best >= 0 && cost >= best {
		return 0, false
	}
	if len(ms) == 0 {
		return cost, true
	}
	r := ms[0]
	b := l.Segments[r.seg].Blocks[r.blk]
	n := int(b.Size / grain)
	found := false
	for sj, g := range free {
		base := l.Segments[sj].Addr
		for off := 0; off+n <= len(g); off++ {
			fits := true
			for k := off; k < off+n; k++ {
				fits = fits && g[k]
			}
			if !fits {
				continue
			}
			c := cost
			start := base + uint64(off)*uint64(grain)
			if sj == r.seg && start < b.End() && start+uint64(b.Size) > b.Addr {
				c += b.Size
			}
			for k := off; k < off+n; k++ {
				g[k] = false
			}
			if got, ok := placeAll(l, free, ms[1:], c, best); ok {
				best, found = got, true
			}
			for k := off; k < off+n; k++ {
				g[k] = true
			}
		}
	}
	return best, found
}

// TestFitBoundIsALowerBound checks the fit bound against the true optimum
// of a relaxation, found by brute force on small layouts: over every window
// [x, x+size) of a segment (at grain steps) and every set E of other live
// blocks, the live bytes of the blocks overlapping the window and E, when
// those blocks can be placed (exhaustively) in the free memory left once
// they have left and the window is taken out, a block placed over its own
// old bytes counted twice (a move's destination must be free, so it moved
// twice). Every plan that reaches the goal moves at least that (the order
// of its moves and their intermediate places are ignored), so the bound
// must not exceed it, and a reached plan must not beat it.
func TestFitBoundIsALowerBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t)
		size := int64(rapid.IntRange(1, 12).Draw(t, "size")) * grain
		p, err := defrag.PlanLayout(l, defrag.Goal{Kind: defrag.GoalFit, Size: size, Pool: "large"}, defrag.Options{Allocator: registry.MustParse("caching")})
		if err != nil {
			t.Fatal(err)
		}
		var live []blockRef
		for si, s := range l.Segments {
			for bi, b := range s.Blocks {
				if b.State != mem.Free {
					live = append(live, blockRef{si, bi})
				}
			}
		}
		if len(live) > 8 {
			return // 2^live sets, each placed exhaustively: keep it small
		}
		best, anyWindow := int64(-1), false
		for si, s := range l.Segments {
			for x := s.Addr; x+uint64(size) <= s.End(); x += uint64(grain) {
				anyWindow = true
				for mask := 0; mask < 1<<len(live); mask++ {
					moved := map[blockRef]bool{}
					var cost int64
					ok := true
					for k, r := range live {
						b := l.Segments[r.seg].Blocks[r.blk]
						in := r.seg == si && b.Addr < x+uint64(size) && b.End() > x
						if in && mask&(1<<k) == 0 {
							ok = false // the window's blocks must move: counted once, in their own mask bit
							break
						}
						if mask&(1<<k) != 0 {
							moved[r] = true
							cost += b.Size
						}
					}
					if !ok || (best >= 0 && cost >= best) {
						continue
					}
					// Free grains once the moved blocks have left and the
					// window is taken out; then place the moved blocks, a
					// place over a block's own old bytes costing a second move.
					var free [][]bool
					for sj, t2 := range l.Segments {
						g := make([]bool, t2.Size/grain)
						for bj, b := range t2.Blocks {
							for a := b.Addr; a < b.End(); a += uint64(grain) {
								g[(a-t2.Addr)/uint64(grain)] = b.State == mem.Free || moved[blockRef{sj, bj}]
							}
						}
						if sj == si {
							for a := x; a < x+uint64(size); a += uint64(grain) {
								g[(a-t2.Addr)/uint64(grain)] = false
							}
						}
						free = append(free, g)
					}
					var ms []blockRef
					for _, r := range live {
						if moved[r] {
							ms = append(ms, r)
						}
					}
					if c, ok := placeAll(l, free, ms, cost, best); ok {
						best = c
					}
				}
			}
		}
		if !anyWindow {
			if p.Reached {
				t.Fatalf("no segment holds %d bytes, yet the plan is reached", size)
			}
			return
		}
		if best >= 0 && p.LowerBound > best {
			t.Fatalf("bound %d above the relaxed optimum %d (size %d):\n%s", p.LowerBound, best, size, l)
		}
		if p.Reached && best >= 0 && p.BytesMoved < best {
			t.Fatalf("plan moves %d, below the relaxed optimum %d", p.BytesMoved, best)
		}
		if p.Reached && best < 0 {
			t.Fatalf("plan reached (%d bytes) where no arrangement exists", p.BytesMoved)
		}
	})
}

// TestCoalesceBound checks the arena's coalescing plans on small random
// segments: a reached plan leaves one free extent and moves no fewer bytes
// than the bound, and the exact bound (exhaustive search) is never below the
// bytes that overlap the cheapest window.
func TestCoalesceBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t)
		l.Segments = l.Segments[:1]
		l.Segments[0].Pool = "arena"
		l.DeviceFree = l.Capacity - l.Segments[0].Size
		p, err := defrag.PlanLayout(l, defrag.Goal{Kind: defrag.GoalCompact}, defrag.Options{Allocator: registry.MustParse("arena")})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Reached {
			t.Fatalf("an unconstrained arena can always be coalesced (slide), got not reached:\n%s", l)
		}
		if p.After.FreeBlocks > 1 {
			t.Fatalf("reached, but %d free extents remain", p.After.FreeBlocks)
		}
		if p.BytesMoved < p.LowerBound {
			t.Fatalf("moved %d below the bound %d", p.BytesMoved, p.LowerBound)
		}
	})
}

// TestCoalesceBoundBruteForce checks the arena's coalescing bound against
// the best final arrangement, found by brute force on tiny arenas: with one
// free extent left, the live blocks lie packed in some order with the extent
// in one of the gaps of that order, and every block that ends at another
// address moved at least once. So no plan moves fewer bytes than the least,
// over every order and extent position, of the sizes of the blocks that end
// elsewhere: the bound must not exceed it, and a reached plan must not beat
// it. Layouts hold at most 6 live blocks (6! orders × 7 positions).
func TestCoalesceBoundBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t)
		l.Segments = l.Segments[:1]
		s := &l.Segments[0]
		s.Pool = "arena"
		l.DeviceFree = l.Capacity - s.Size
		var live []mem.Block
		var free int64
		for _, b := range s.Blocks {
			if b.State == mem.Free {
				free += b.Size
			} else {
				live = append(live, b)
			}
		}
		if len(live) > 6 {
			t.Skip("too many blocks for the brute force")
		}
		p, err := defrag.PlanLayout(l, defrag.Goal{Kind: defrag.GoalCompact}, defrag.Options{Allocator: registry.MustParse("arena")})
		if err != nil {
			t.Fatal(err)
		}
		best := int64(-1)
		perm := make([]int, len(live))
		for i := range perm {
			perm[i] = i
		}
		var visit func(k int)
		visit = func(k int) {
			if k < len(perm) {
				for i := k; i < len(perm); i++ {
					perm[k], perm[i] = perm[i], perm[k]
					visit(k + 1)
					perm[k], perm[i] = perm[i], perm[k]
				}
				return
			}
			for slot := 0; slot <= len(perm); slot++ {
				at, moved := s.Addr, int64(0)
				for i, j := range perm {
					if i == slot {
						at += uint64(free)
					}
					if live[j].Addr != at {
						moved += live[j].Size
					}
					at += uint64(live[j].Size)
				}
				if best < 0 || moved < best {
					best = moved
				}
			}
		}
		visit(0)
		if p.LowerBound > best {
			t.Fatalf("bound %d above the best arrangement %d:\n%s", p.LowerBound, best, l)
		}
		if p.Reached && p.BytesMoved < best {
			t.Fatalf("plan moves %d, below the best arrangement %d: the brute force is wrong", p.BytesMoved, best)
		}
	})
}
