package snapshot

import (
	"sort"

	"github.com/gpufrag/gpufrag/mem"
)

// largeGranule is the size large-pool segments are rounded to (PyTorch's
// kRoundLarge, 2 MiB): a cudaMalloc of device-free memory can only use
// whole granules.
const largeGranule = 2 << 20

// Layout converts one device's segments into a gpufrag layout, sorted by
// address. Block states map as active_allocated → mem.Active,
// active_pending_free → mem.PendingFree, inactive → mem.Free; requested
// sizes of inactive blocks are stale and dropped, and a live block's
// requested size is capped at its size (0 stays 0: the file did not say).
//
// capacity is the device's memory. The snapshot does not say how much of it
// other users hold, so OtherUse is 0 and DeviceFree is capacity minus the
// reserved bytes (0 if capacity is smaller). A capacity ≤ 0 means "just what
// is reserved": Capacity = Σ segment sizes, DeviceFree = 0.
//
// MaxAllocatable is an estimate of PyTorch's rules on stream 0: the larger
// of the biggest free block in a non-expandable large-pool segment of stream
// 0, and device-free memory plus the segments that are wholly free (which
// the allocator releases before giving up), rounded down to 2 MiB.
func (s *Snapshot) Layout(device int, capacity int64) mem.Layout {
	var l mem.Layout
	var reserved, releasable, largestFree int64
	for _, seg := range s.Segments {
		if seg.Device != device {
			continue
		}
		ms := mem.Segment{
			Addr:       seg.Address,
			Size:       seg.TotalSize,
			Stream:     int(seg.Stream),
			Pool:       seg.SegmentType,
			Expandable: seg.IsExpandable,
			Blocks:     make([]mem.Block, len(seg.Blocks)),
		}
		allFree := true
		for i, b := range seg.Blocks {
			mb := mem.Block{Addr: b.Address, Size: b.Size}
			switch b.State {
			case StateAllocated:
				mb.State = mem.Active
			case StatePendingFree:
				mb.State = mem.PendingFree
			default:
				mb.State = mem.Free
			}
			if mb.State != mem.Free {
				allFree = false
				mb.Requested = min(max(b.RequestedSize, 0), b.Size)
			} else if seg.SegmentType == "large" && !seg.IsExpandable && seg.Stream == 0 {
				largestFree = max(largestFree, b.Size)
			}
			ms.Blocks[i] = mb
		}
		if allFree && !seg.IsExpandable {
			releasable += seg.TotalSize
		}
		reserved += seg.TotalSize
		l.Segments = append(l.Segments, ms)
	}
	sort.SliceStable(l.Segments, func(i, j int) bool { return l.Segments[i].Addr < l.Segments[j].Addr })
	if capacity <= 0 {
		capacity = reserved
	}
	l.Capacity = capacity
	l.DeviceFree = max(capacity-reserved, 0)
	fresh := (l.DeviceFree + releasable) / largeGranule * largeGranule
	l.MaxAllocatable = max(largestFree, fresh)
	return l
}
