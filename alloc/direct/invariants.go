// Direct allocator self-checks.
// See package alloc for the overview.

package direct

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// CheckInvariants recounts the live allocations and compares them with the
// incremental counters and the device (see the package doc's Invariants). It
// returns the first violation. It is O(live allocations).
func (a *Allocator) CheckInvariants() error {
	var reserved, requested int64
	n := 0
	var err error
	a.live.Each(func(h alloc.Handle, b *block) {
		if err == nil && (b.requested <= 0 || b.size != mem.PageRound(b.requested)) {
			err = fmt.Errorf("direct: handle %x: size %d for a request of %d, want mem.PageRound", h, b.size, b.requested)
		}
		reserved += b.size
		requested += b.requested
		n++
	})
	if err != nil {
		return err
	}
	st := a.st
	switch {
	case st.Reserved != reserved || st.Allocated != reserved:
		return fmt.Errorf("direct: stats reserved/allocated %d/%d, recount %d", st.Reserved, st.Allocated, reserved)
	case st.Requested != requested:
		return fmt.Errorf("direct: stats requested %d, recount %d", st.Requested, requested)
	case a.dev.Used() != reserved:
		return fmt.Errorf("direct: device holds %d bytes, allocator %d", a.dev.Used(), reserved)
	case st.Segments != n || st.LiveBlocks != n || a.live.Len() != n || st.Allocs-st.Frees != int64(n):
		return fmt.Errorf("direct: %d live allocations, stats segments=%d live=%d allocs-frees=%d", n, st.Segments, st.LiveBlocks, st.Allocs-st.Frees)
	case st.DeviceAllocs != st.Allocs || st.DeviceFrees != st.Frees:
		return fmt.Errorf("direct: device calls %d/%d, allocs/frees %d/%d", st.DeviceAllocs, st.DeviceFrees, st.Allocs, st.Frees)
	case st.PeakReserved < st.Reserved || st.PeakAllocated < st.Allocated:
		return fmt.Errorf("direct: peaks %d/%d below current %d/%d", st.PeakReserved, st.PeakAllocated, st.Reserved, st.Allocated)
	case st.Capacity != a.dev.Capacity() || st.OtherUse != a.dev.OtherUse():
		return fmt.Errorf("direct: stats capacity/other %d/%d, device %d/%d", st.Capacity, st.OtherUse, a.dev.Capacity(), a.dev.OtherUse())
	}
	return nil
}

// mustCheck panics on a broken invariant; callers guard it with
// invariants.Enabled.
func (a *Allocator) mustCheck() {
	if err := a.CheckInvariants(); err != nil {
		panic(err)
	}
}
