// The planner's own checks of its input and of the metrics it reports, kept
// linear and allocation-free so that they cost a small part of a plan; the
// full mem.Layout.Check and frag.Compute run in their place under the
// invariants build tag (and the race detector), which asserts that both
// agree. See doc.go for the overview.

package defrag

import (
	"fmt"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// checkLayout returns nil exactly when l.Check() does, and l.Check()'s own
// error otherwise. layoutValid decides in one pass over the blocks without
// allocating; only a layout it rejects pays for l.Check, whose message names
// the first violation.
func checkLayout(l mem.Layout) error {
	ok := layoutValid(l)
	if invariants.Enabled {
		if err := l.Check(); (err == nil) != ok {
			panic(fmt.Sprintf("defrag: layoutValid says %t, mem.Layout.Check says %v", ok, err))
		}
	}
	if ok {
		return nil
	}
	if err := l.Check(); err != nil {
		return err
	}
	// Unreachable while layoutValid mirrors mem.Layout.Check (the invariants
	// build asserts it); refusing is the safe side.
	return fmt.Errorf("defrag: internal: the planner's check rejects a layout mem.Layout.Check accepts")
}

// layoutValid mirrors mem.Layout.Check condition for condition: segments of
// positive size, sorted by address and disjoint; blocks tiling each segment
// in order, each of positive size with 0 ≤ requested ≤ size, free blocks
// requesting nothing; memory classes adding up to the capacity with no
// negative device-free memory. The classes sum, other use + live + waste +
// cached free + device free, is other use + Σ segment sizes + device free.
func layoutValid(l mem.Layout) bool {
	var prevEnd uint64
	var reserved int64
	for i := range l.Segments {
		s := &l.Segments[i]
		if s.Size <= 0 || (i > 0 && s.Addr < prevEnd) {
			return false
		}
		prevEnd = s.End()
		reserved += s.Size
		at := s.Addr
		for j := range s.Blocks {
			b := &s.Blocks[j]
			if b.Addr != at || b.Size <= 0 || b.Requested < 0 || b.Requested > b.Size || (b.State == mem.Free && b.Requested != 0) {
				return false
			}
			at = b.End()
		}
		if at != prevEnd {
			return false
		}
	}
	return l.DeviceFree >= 0 && l.OtherUse+reserved+l.DeviceFree == l.Capacity
}

// afterMetrics returns the metrics of after, the layout a plan's moves
// produce from the layout whose metrics are before, without recomputing
// those the moves cannot change. A move relocates a live block inside its
// group's segments, keeping its size, request and state, and changes no
// segment, no device-free or other-use figure: so the capacity, the memory
// classes, the internal fragmentation, the active sizes (entropy, distinct
// sizes) and the block and segment counts of live blocks stay as they were.
// What moves can change is how the free bytes are split: the largest free
// block, the number of free blocks, and from them health and frag rate; and
// the max-allocatable estimate, which PlanLayout sets on after. Under the
// invariants build it asserts the result equals frag.Compute(after).
func afterMetrics(before frag.Metrics, after mem.Layout) frag.Metrics {
	m := before
	var largest int64
	free := 0
	for i := range after.Segments {
		bs := after.Segments[i].Blocks
		for j := range bs {
			if bs[j].State == mem.Free {
				free++
				largest = max(largest, bs[j].Size)
			}
		}
	}
	m.LargestFreeBlock = largest
	m.FreeBlocks = free
	m.MaxAllocatable = after.MaxAllocatable
	m.Health = frag.Health(m.LargestFreeBlock, m.CachedFree)
	m.FragRate = 1 - m.Health
	if invariants.Enabled {
		if full := frag.Compute(after); full != m {
			panic(fmt.Sprintf("defrag: afterMetrics %+v differs from frag.Compute %+v", m, full))
		}
	}
	return m
}
