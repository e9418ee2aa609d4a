package snapshot_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/snapshot"
)

// checkInvariants returns the first violation of the snapshot invariants
// that held in every real file (research notes §9).
func checkInvariants(s *snapshot.Snapshot) error {
	last := map[int]uint64{}
	for i, seg := range s.Segments {
		where := fmt.Sprintf("segments[%d] (device %d at %#x)", i, seg.Device, seg.Address)
		if prev, ok := last[seg.Device]; ok && seg.Address <= prev {
			return fmt.Errorf("%s: not sorted by address (previous %#x)", where, prev)
		}
		last[seg.Device] = seg.Address
		var total, allocated, active, requested int64
		at := seg.Address
		for j, b := range seg.Blocks {
			if b.Address != at {
				return fmt.Errorf("%s.blocks[%d]: address %#x, want %#x (contiguous)", where, j, b.Address, at)
			}
			if b.Size%512 != 0 || b.Size <= 0 {
				return fmt.Errorf("%s.blocks[%d]: size %d is not a positive multiple of 512", where, j, b.Size)
			}
			at += uint64(b.Size)
			total += b.Size
			if b.State == snapshot.StateAllocated {
				allocated += b.Size
			}
			if b.State != snapshot.StateInactive {
				active += b.Size
				requested += b.RequestedSize
			}
		}
		for _, c := range []struct {
			name      string
			got, want int64
		}{
			{"total_size", seg.TotalSize, total},
			{"allocated_size", seg.AllocatedSize, allocated},
			{"active_size", seg.ActiveSize, active},
			{"requested_size", seg.RequestedSize, requested},
		} {
			if c.got != c.want {
				return fmt.Errorf("%s: %s %d, blocks add up to %d", where, c.name, c.got, c.want)
			}
		}
		if seg.IsExpandable {
			continue
		}
		const mib = 1 << 20
		switch seg.SegmentType {
		case "small":
			if seg.TotalSize != 2*mib {
				return fmt.Errorf("%s: small segment of %d bytes, want 2 MiB", where, seg.TotalSize)
			}
		case "large":
			if seg.TotalSize != 20*mib && (seg.TotalSize%(2*mib) != 0 || seg.TotalSize < 10*mib) {
				return fmt.Errorf("%s: large segment of %d bytes, want 20 MiB or a 2 MiB multiple ≥ 10 MiB", where, seg.TotalSize)
			}
		}
	}
	return nil
}
