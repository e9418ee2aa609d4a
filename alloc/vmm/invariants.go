// VMM allocator self-checks.
// See package alloc for the overview.

package vmm

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
)

// CheckInvariants recounts the live ranges and compares them with the
// incremental counters and the device (see the package doc's Invariants). It
// returns the first violation. It is O(live allocations).
func (a *Allocator) CheckInvariants() error {
	P := a.cfg.Page
	var pages, requested int64
	n := 0
	var err error
	a.live.Each(func(h alloc.Handle, r *rng) {
		switch {
		case err != nil:
		case r.requested <= 0 || r.pages <= 0 || (r.pages-1)*P >= r.requested || r.requested > r.pages*P:
			err = fmt.Errorf("vmm: handle %x: %d pages of %d bytes for %d requested bytes", h, r.pages, P, r.requested)
		case r.pages*P > r.va || r.va%P != 0:
			err = fmt.Errorf("vmm: handle %x: %d pages mapped in %d reserved virtual bytes", h, r.pages, r.va)
		}
		pages += r.pages
		requested += r.requested
		n++
	})
	if err != nil {
		return err
	}
	st := a.st
	reserved := pages * P
	switch {
	case st.Reserved != reserved || st.Allocated != reserved:
		return fmt.Errorf("vmm: stats reserved/allocated %d/%d, recount %d", st.Reserved, st.Allocated, reserved)
	case st.Requested != requested:
		return fmt.Errorf("vmm: stats requested %d, recount %d", st.Requested, requested)
	case a.dev.Used() != reserved:
		return fmt.Errorf("vmm: device holds %d bytes, allocator %d", a.dev.Used(), reserved)
	case st.DeviceAllocs-st.DeviceFrees != pages:
		return fmt.Errorf("vmm: %d pages mapped and %d unmapped, but %d are mapped now", st.DeviceAllocs, st.DeviceFrees, pages)
	case st.Segments != n || st.LiveBlocks != n || a.live.Len() != n || st.Allocs-st.Frees != int64(n):
		return fmt.Errorf("vmm: %d live ranges, stats segments=%d live=%d allocs-frees=%d", n, st.Segments, st.LiveBlocks, st.Allocs-st.Frees)
	case st.PeakReserved < st.Reserved || st.PeakAllocated < st.Allocated:
		return fmt.Errorf("vmm: peaks %d/%d below current %d/%d", st.PeakReserved, st.PeakAllocated, st.Reserved, st.Allocated)
	case st.Capacity != a.dev.Capacity() || st.OtherUse != a.dev.OtherUse():
		return fmt.Errorf("vmm: stats capacity/other %d/%d, device %d/%d", st.Capacity, st.OtherUse, a.dev.Capacity(), a.dev.OtherUse())
	}
	return a.dev.CheckVA()
}

// mustCheck panics on a broken invariant; callers guard it with
// invariants.Enabled.
func (a *Allocator) mustCheck() {
	if err := a.CheckInvariants(); err != nil {
		panic(err)
	}
}
