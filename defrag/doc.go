// Package defrag plans, prices and executes the compaction of GPU memory:
// which live blocks to move where so that whole segments can be returned to
// the device or a failed request fits, how many bytes that copies, a lower
// bound on the bytes any plan reaching the same goal must copy, and the pause
// the copies cost on a given GPU.
//
// It is part of the deterministic core (DESIGN.md §2, STYLE.md #4 and #5):
// no clock, no goroutines, no random source. Planners describe actions,
// drivers perform them: PlanLayout takes a mem.Layout and returns a Plan
// without modifying it; Apply performs a plan through an allocator's
// relocation hook (alloc.Relocator); the simulator decides when.
//
// # The pieces
//
//	PlanLayout(layout, goal, options) → Plan    segment-based allocators: caching, arena, sizeclass
//	PlanPool(used, options) → PoolPlan          a paged KV pool, vllm-gaudi style: shrink from the top
//	PlanPoolPages(used, blocksPerPage, options)  a VMM-backed KV pool: free whole physical pages
//	PoolPlan.Relocations + blockpool.RelocateBlocks  perform a pool plan, rewriting block tables
//	Apply(relocator, plan, handleAt, moved)      perform a plan, telling the owner of each moved block
//	Cost(plan, gpu, costModel) → pause ns        2 × bytes ÷ (bandwidth × efficiency) + per move + per page
//	ReadLayout / WriteLayout                     the saved-layout JSON of `gpufrag defrag FILE`
//
// For the simulator: the engine holds a caching allocator and knows the
// handle of each block it allocated. One compaction is
//
//	p, err := defrag.PlanLayout(a.Layout(), defrag.Goal{Kind: defrag.GoalCompact},
//		defrag.Options{Allocator: cfg.Alloc, MaxBytes: budget}) // its parsed spec (alloc.Described)
//	pause := defrag.Cost(p, gpu, defrag.CostModel{})
//	err = defrag.Apply(a.(alloc.Relocator), p, engine.handleAt, engine.moved)
//	a.EmptyCache() // returns p.FreedBytes to the device
//
// where handleAt maps a block's current address to its handle and moved
// updates the engine's records (an Index does both for callers without
// their own); BytesWithin turns a per-step pause budget into MaxBytes.
//
// # Relocation rules (what a destination must satisfy)
//
// Each allocator's Relocate states them, and its Relocation
// (alloc.Caps.Relocation) declares them as data, which is all the planner
// reads of an allocator: whether freed segments are returned (Releasable),
// fixed slots (Slots), streams (Streams), PyTorch's small and large pools
// (SizePools), memmove (Memmove). The planner follows them exactly:
//
//   - caching: the destination lies inside one free block of the same pool
//     (small or large) and stream, 512-byte aligned from that block's start,
//     with room for the whole block. The block's own range does not count as
//     free, so a block never slides over itself. Expandable segments are not
//     compacted (below).
//   - arena: any 512-aligned range of the pool that is free, the block's own
//     range counting as free (a memmove), so blocks may slide.
//   - sizeclass: a free slot of the block's own class (pool); blocks of the
//     "direct" pool (larger than every class) never move.
//   - every allocator: blocks pending a free on another stream never move.
//
// A group is the set of segments of one pool and one stream: blocks move
// only within their group.
//
// # Compaction (GoalCompact on caching and sizeclass)
//
// Freeing a segment means moving every live block out of it into holes of
// segments that stay. Per group, the planner orders the segments that can be
// emptied (live blocks, none pinned) by live bytes per segment byte, emptiest
// first, and tries each in turn: its blocks, largest first, go to the
// best-fitting hole (smallest that holds the block) of another segment,
// preferring segments that will surely stay (those past the prefix whose sizes
// add up to the group's free bytes) and, among them, the fullest. A segment
// that receives a block is kept for good; a segment whose blocks do not all
// fit is left as it was (its tentative placements are undone). A segment is
// skipped when evacuating it would make the freed bytes exceed the group's
// free bytes, which no packing can achieve. Holes are ordered by (tier, size,
// preference, address): in a treap, or, for large sets of 512-byte multiples,
// in one bucket per exact size under a two-level bitmap (holebuckets.go),
// which keeps the same order and so the same plans; a plan is O(n log n) in
// blocks.
//
// # Lower bound for compaction
//
// Groups are independent (no block crosses one), so a plan frees the most it
// can only by doing so in each group; the goal a plan reaches is "free at
// least F_g bytes of segments in each group g", F_g being what the plan
// frees. Any plan reaching it must empty a set S of segments of each group
// with Σ size(S) ≥ F_g, and every live byte in S must move at least once;
// and Σ size(S) cannot exceed the group's free bytes (the bytes of wholly
// free segments after a plan are free bytes, and moves conserve a group's
// free bytes). So
//
//	LowerBound = Σ_g min { live(S) : S ⊆ movable segments of g, F_g ≤ size(S) ≤ free(g) }
//
// which ignores only whether the blocks of S can be packed into the holes
// left, so it is a bound, not an estimate. It is loose on the engine's
// layouts, where a segment often holds a block larger than every hole of the
// other segments (KV grown by doubling): emptying it means moving, besides
// its own live bytes, the live blocks of a staying segment that its largest
// block's new place overlaps, which the knapsack does not count (an online
// step's plan in experiment 29 moved 430 MiB against a bound of 61 MiB: a
// segment of one 61 MiB block that fits in no hole; refined below, 116 MiB).
// So each candidate segment s gets
// e(s) = the least live bytes a place of its largest block's size overlaps in
// another segment of the group (0 when a hole holds it; s is never emptied
// when no other segment is large enough), and
//
//	LowerBound_g = min( K(segments with e = 0), K(segments that can be emptied) + min e > 0 )
//
// K being the knapsack above: a set holding only e = 0 segments costs at least
// the first, one holding another segment costs its own live bytes plus at
// least that segment's e, in blocks of no emptied segment. The minimum is a knapsack; it is
// solved exactly by dynamic programming over 2 MiB units (cudaMalloc segments
// and slabs are whole pages) when the table has at most 2^20 cells, and
// otherwise relaxed to fractions of segments (greedy by live bytes per
// segment byte, which solves the relaxation exactly), which is still a bound.
// TestCompactBoundIsALowerBound compares it with the optimum of plans that
// move only the blocks of S, TestCompactBoundRelaxedOptimum with the optimum
// of a relaxation that also moves blocks of staying segments, both found by
// brute force on small layouts.
//
// # Making room (GoalFit) and its lower bound
//
// A free run of Size bytes appears in a segment when every live block
// overlapping some window [x, x+Size) has moved out of it. Any plan must
// therefore move at least the live bytes overlapping the window it clears, so
//
//	LowerBound = min over windows of the live bytes overlapping the window
//
// and the minimum is reached at a window starting at a block's start (slide
// an optimal window left to the start of the block its left edge is in: it
// overlaps no new block), so the planner lists those windows with two
// pointers per segment, cheapest first, and tries them in turn: the displaced
// blocks go best-fit-decreasing into the holes outside the window. When the
// cheapest window packs, moved = bound.
//
// That bare bound is loose on layouts of a few large blocks (KV grown by
// doubling, as the engine's contiguous-grow makes): the cheapest window's
// largest block b often fits in no hole outside it. So each window, cheapest
// first, is refined (fitBound): every free run starting in the window's
// first block covers [end of that block, window end), b must land outside
// that span, in a segment of the goal's pool, and every other live block
// overlapping its new place must move too (b itself twice if the place
// overlaps its own bytes, unless moves may overlap their source), so
//
//	LowerBound = min over windows w of cost(w) + min over b-sized places of
//	             the live bytes outside w overlapping the place
//
// capped by the bare cost of the first window not refined (a work budget of
// 8 passes over the blocks, and windows keeps only the 64 cheapest). On the
// engine's layouts of the defrag suite (experiments 23-36, each policy) fit
// plans move 1.08-1.30× the bare bound and 1.01-1.13× the refined one.
// TestFitBoundIsALowerBound checks the bound against the optimum of a
// relaxation found by brute force (every window at every offset, every set
// of extra blocks, every placement) on small layouts.
//
// # Coalescing an arena (GoalCompact on arena)
//
// The arena never returns its pool, so compaction gathers its free memory
// into one extent: a fit goal of all its free bytes F, where the blocks
// displaced from the window [x, x+F) must fill the holes outside it exactly
// (their sizes add up to the holes' when no block straddles the window's
// edges). The planner first fills holes (coalescefill.go): for each of the
// cheapest windows, the holes above the window, farthest first, then those
// below it, lowest first, each get a set of displaced blocks whose sizes add
// up to the hole (one block of its size, or the pair whose second size has
// the most blocks left, or the largest block that leaves room and on). A hole
// below that no set fills is carried: the staying blocks up to the next hole
// slide down over it (a memmove), and the next hole grows by as much; what is
// left of the displaced blocks ends in the run the carry leaves just below
// the window, whose size is theirs. When every hole fills, the plan moves the
// bound exactly; the carries are what it pays above the bound. When that
// plan is above the bound, the older route is tried too and the cheaper
// kept: best fit decreasing into the holes, then slides of staying blocks
// into the gap before them to merge gaps (repairWindow), and as a last resort
// every block slid to one end. For segments of at most 8 live blocks the
// bound is exact: an exhaustive search over the blocks that keep their place
// and the arrangements of the others (exactCoalesceBound); above, it is the
// window bound, which TestCoalesceBoundBruteForce checks against every final
// arrangement of small arenas and which the 100,000-block arena of
// BenchmarkPlan attains.
//
// # VMM-backed memory
//
// Expandable segments (and vmm ranges) need no compaction: their virtual
// range is contiguous and their free pages can be unmapped and mapped again
// anywhere without copying a byte. The plan lists the whole free pages
// (Unmaps), priced per page by Cost, and says so in Notes; a fit goal on such
// a pool is reached when device-free memory plus those pages can map it.
//
// # What every call checks
//
// PlanLayout refuses a layout that mem.Layout.Check refuses, with Check's
// message, but decides in one pass of its own (layoutValid), which also
// gathers what frag.Compute's metrics for the input (Before) need, distinct
// sizes counted on a bitmap rather than by sorting; it derives After from
// Before, recounting only what moves can change (the largest free block, the
// free blocks, health) in the one pass over the moved layout that also finds
// the freed segments. The invariants build tag (and the race detector) runs
// Check and frag.Compute as well and panics if either disagrees.
//
// # Invariants
//
//	PlanLayout never modifies its input; the same input gives the same plan
//	BytesMoved == Σ Moves[i].Size; a reached plan moves ≥ LowerBound bytes
//	Plan.Layout is what the allocator's Layout shows after Apply, block for
//	  block, all but MaxAllocatable (TestNothingLost checks it on every allocator)
//	moves are in an order in which each destination is free when its move runs
//	no block leaves its group; pinned blocks never move
//	with Options.MaxBytes or MaxMoves, whole segments are evacuated or none
//
// The proof that nothing is lost is TestNothingLost: random workloads on
// every allocator with a relocation hook, in a byte-backed test mode where
// each live block holds a pattern; after each plan is applied, every live
// block's checksum is unchanged and no owner points at a stale address.
//
// # Reports
//
// NewReport is the document of `gpufrag defrag --json`; WriteText writes a
// plan for people, and NothingToGain says in words why a plan has no
// moves (text.go). The command only reads the file and prints them.
package defrag
