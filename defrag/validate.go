// The planner's own checks of its input and of the metrics it reports, kept
// linear, with one small allocation (a bitmap of sizes), so that they cost a
// small part of a plan; the full mem.Layout.Check and frag.Compute run in
// their place under the invariants build tag (and the race detector), which
// asserts that both agree. See doc.go for the overview.

package defrag

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// checkLayout returns nil exactly when l.Check() does, and l.Check()'s own
// error otherwise. layoutValid decides in one pass over the blocks; only a
// layout it rejects pays for l.Check, whose message names the first
// violation.
func checkLayout(l mem.Layout) error {
	_, err := checkScan(l)
	return err
}

// checkScan is checkLayout that also returns what the same pass gathered
// for beforeMetrics (valid only when the error is nil).
func checkScan(l mem.Layout) (layoutStats, error) {
	ok, st := scanLayout(l)
	if invariants.Enabled {
		if err := l.Check(); (err == nil) != ok {
			panic(fmt.Sprintf("defrag: layoutValid says %t, mem.Layout.Check says %v", ok, err))
		}
	}
	if ok {
		return st, nil
	}
	if err := l.Check(); err != nil {
		return layoutStats{}, err
	}
	// Unreachable while layoutValid mirrors mem.Layout.Check (the invariants
	// build asserts it); refusing is the safe side.
	return layoutStats{}, fmt.Errorf("defrag: internal: the planner's check rejects a layout mem.Layout.Check accepts")
}

// layoutValid mirrors mem.Layout.Check condition for condition: segments of
// positive size, sorted by address and disjoint; blocks tiling each segment
// in order, each of positive size with 0 ≤ requested ≤ size, free blocks
// requesting nothing; memory classes adding up to the capacity with no
// negative device-free memory. The classes sum, other use + live + waste +
// cached free + device free, is other use + Σ segment sizes + device free.
func layoutValid(l mem.Layout) bool {
	ok, _ := scanLayout(l)
	return ok
}

// layoutStats are the sums beforeMetrics needs, gathered by scanLayout in
// the pass that checks the layout.
type layoutStats struct {
	reserved, allocated, requested, largest int64
	free, active                            int
	// buckets is frag.SizeDispersion's histogram of active sizes.
	buckets [64]int
	// sizes marks the active sizes, in bucketUnit units (bit u: a block of
	// u units); nil when some active size is off that grid or too large for
	// maxSizeBits, and distinctActiveSizes counts by sorting instead.
	sizes []uint64
}

// maxSizeBits bounds the bitmap of layoutStats.sizes (512 KiB of bits:
// sizes up to 2 GiB).
const maxSizeBits = 1 << 22

// scanLayout is layoutValid's pass (see there), which also gathers
// layoutStats; when it reports false the stats are incomplete.
func scanLayout(l mem.Layout) (bool, layoutStats) {
	var st layoutStats
	st.sizes = make([]uint64, 0, 64)
	// The bitmap pays only on layouts with many blocks: its words are capped
	// at an eighth of the block count (at least 64), so a layout of a few
	// large blocks (an engine's KV and activation buffers, planned at every
	// step by the online policy) sorts its few sizes instead of zeroing a
	// bitmap as long as its largest size.
	nblocks := 0
	for i := range l.Segments {
		nblocks += len(l.Segments[i].Blocks)
	}
	maxWords := min(maxSizeBits/64, max(64, nblocks/8))
	var prevEnd uint64
	for i := range l.Segments {
		s := &l.Segments[i]
		if s.Size <= 0 || (i > 0 && s.Addr < prevEnd) {
			return false, st
		}
		prevEnd = s.End()
		st.reserved += s.Size
		at := s.Addr
		for j := range s.Blocks {
			b := &s.Blocks[j]
			if b.Addr != at || b.Size <= 0 || b.Requested < 0 || b.Requested > b.Size || (b.State == mem.Free && b.Requested != 0) {
				return false, st
			}
			at = b.End()
			if b.State == mem.Free {
				st.free++
				st.largest = max(st.largest, b.Size)
				continue
			}
			st.active++
			st.allocated += b.Size
			st.requested += b.Requested
			st.buckets[63-bits.LeadingZeros64(uint64(b.Size))]++ // b.Size > 0
			if st.sizes != nil {
				u := b.Size / bucketUnit
				w := int(u >> 6)
				if b.Size%bucketUnit != 0 || w >= maxWords {
					st.sizes = nil
					continue
				}
				for w >= len(st.sizes) {
					st.sizes = append(st.sizes, 0)
				}
				st.sizes[w] |= 1 << (u & 63)
			}
		}
		if at != prevEnd {
			return false, st
		}
	}
	return l.DeviceFree >= 0 && l.OtherUse+st.reserved+l.DeviceFree == l.Capacity, st
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
//
// largest and free are after's largest free block and number of free blocks
// (PlanLayout's scanAfter counts them).
func afterMetrics(before frag.Metrics, after mem.Layout, largest int64, free int) frag.Metrics {
	m := before
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

// beforeMetrics returns frag.Compute(l) with less work, from the stats that
// checking the layout gathered (scanLayout): the distinct active sizes are
// counted on a bitmap of 512-byte units (every allocator planned for rounds
// to them) instead of a sorted copy of every size; sizes off that grid, or
// too large for the bitmap, are sorted as frag.SizeDispersion does. Under
// the invariants build it asserts the result equals frag.Compute(l).
func beforeMetrics(l mem.Layout, st layoutStats) frag.Metrics {
	cachedFree := st.reserved - st.allocated
	m := frag.Metrics{
		Capacity:         l.Capacity,
		OtherUse:         l.OtherUse,
		Reserved:         st.reserved,
		Allocated:        st.allocated,
		Requested:        st.requested,
		CachedFree:       cachedFree,
		DeviceFree:       l.DeviceFree,
		LargestFreeBlock: st.largest,
		MaxAllocatable:   l.MaxAllocatable,
		Segments:         len(l.Segments),
		ActiveBlocks:     st.active,
		FreeBlocks:       st.free,
	}
	m.Health = frag.Health(m.LargestFreeBlock, m.CachedFree)
	m.FragRate = 1 - m.Health
	m.InternalFrag = frag.InternalFrag(m.Allocated, m.Requested)
	m.UnallocReserved = frag.UnallocatedReservedShare(m.CachedFree, m.Reserved)
	if st.active > 0 {
		// frag.SizeDispersion's entropy, term by term in the same order.
		var h float64
		n := float64(st.active)
		for _, c := range st.buckets {
			if c > 0 {
				p := float64(c) / n
				h -= p * math.Log2(p)
			}
		}
		m.SizeEntropy = h + 0 // + 0 turns -0 into 0
		m.DistinctSizes = distinctActiveSizes(l, st)
	}
	if invariants.Enabled {
		if full := frag.Compute(l); full != m {
			panic(fmt.Sprintf("defrag: beforeMetrics %+v differs from frag.Compute %+v", m, full))
		}
	}
	return m
}

// distinctActiveSizes counts the distinct sizes of l's active blocks: the
// bits of st.sizes, or, without it, by sorting them.
func distinctActiveSizes(l mem.Layout, st layoutStats) int {
	if st.sizes != nil {
		n := 0
		for _, w := range st.sizes {
			n += bits.OnesCount64(w)
		}
		return n
	}
	sizes := make([]int64, 0, st.active)
	for i := range l.Segments {
		bs := l.Segments[i].Blocks
		for j := range bs {
			if bs[j].State != mem.Free {
				sizes = append(sizes, bs[j].Size)
			}
		}
	}
	slices.Sort(sizes)
	return len(slices.Compact(sizes))
}
