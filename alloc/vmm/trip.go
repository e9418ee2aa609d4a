// Round trips: alloc.TripRecorder and alloc.TripRoom. A serving engine's
// steps allocate and free the same activation buffers again and again,
// between grows of their KV ranges; vmm can skip a repeat whose outcome it
// knows. See "Optional capabilities" in package alloc for the contracts.

package vmm

import (
	"fmt"
	"math"

	"github.com/gpufrag/gpufrag/alloc"
)

var (
	_ alloc.TripRecorder   = (*Allocator)(nil)
	_ alloc.TripRoom       = (*Allocator)(nil)
	_ alloc.FreeSummarizer = (*Allocator)(nil)
)

// BeginTrip starts recording a round trip at the allocator's current state:
// its count of Alloc and Free calls, its Stats, and the device's fresh
// address space and count of reused ranges.
//
// Why a trip that EndTrip closes can be repeated, after grows too: each of
// its allocations maps fresh pages in a virtual range of its own, and its
// frees unmap them all, so at its end the live ranges, their pages and so
// the Layout are those it started with; what moved is counters (Allocs,
// Frees, the pages mapped and unmapped, the device's calls) and the address
// space, which the device hands out fresh while it lasts (the trip's
// ranges, released again, join the released ones) and then from the
// released ranges, lowest first (taken and given back: the same released
// ranges). The same calls from a state with the same live ranges do the
// same again, and a grow (Grower) changes only how many pages a live range
// maps: it touches no address and no other range. So what a run needs is
// the device memory for the most the trip holds at once (an allocation
// fails exactly when its pages are not free), and, for a trip on fresh
// space, that much fresh space; and it raises the peaks to what is mapped
// plus that most.
func (a *Allocator) BeginTrip() alloc.Trip {
	a.high = a.st.Reserved
	t := a.mut.BeginTrip(a.st, a.dev.ReusedVA())
	t.VA = a.dev.FreshVA()
	return t
}

// EndTrip reports whether the calls since BeginTrip were exactly n
// allocations and n frees that left the allocator where BeginTrip saw it:
// no other Alloc or Free, Stats equal but for n more Allocs and Frees, as
// many pages unmapped as mapped and the peaks (the same bytes, ranges and
// out-of-memory count), and every range reserved either fresh or reused,
// not some of each, with no VA hook. Then it closes t with what a run
// takes: its pages, its peak above the start and its fresh address space.
func (a *Allocator) EndTrip(t *alloc.Trip, n int64) bool {
	t.N = 0
	fresh0, reused0 := t.VA, t.Aux
	fresh, reused := a.dev.FreshVA(), a.dev.ReusedVA()
	var va uint64
	switch {
	case fresh0 == 0: // a VA hook hands out the addresses
		return false
	case reused == reused0: // every range was fresh
		va = fresh0 - fresh
	case fresh != fresh0: // some fresh, some reused: the next run differs
		return false
	}
	now := a.st
	pages := now.DeviceAllocs - t.Stats.DeviceAllocs
	if now.DeviceFrees-t.Stats.DeviceFrees != pages {
		return false
	}
	now.DeviceAllocs, now.DeviceFrees = t.Stats.DeviceAllocs, t.Stats.DeviceFrees
	if !a.mut.EndTrip(t, n, now) {
		return false
	}
	t.Pages, t.Peak, t.VA = pages, a.high-t.Stats.Reserved, va
	return true
}

// TripRoom returns the device memory a run of the closed trip t needs free
// (the most it maps at once) and how many runs the fresh address space
// holds from now (alloc.TripRoom); times is 0 when RepeatTrip would refuse
// t now, for another call since or too little memory.
func (a *Allocator) TripRoom(t *alloc.Trip) (need, times int64) {
	if t.N <= 0 || a.mut.Stamp() != t.Mark || a.dev.Free() < t.Peak {
		return t.Peak, 0
	}
	fresh := a.dev.FreshVA()
	switch {
	case fresh == 0:
		return t.Peak, 0
	case t.VA == 0:
		return t.Peak, math.MaxInt64
	}
	return t.Peak, int64(min((fresh-1)/t.VA, math.MaxInt64))
}

// RepeatTrip stands in for times runs of the closed trip t when nothing but
// closed trips and grows has changed the allocator since t began, the
// device has the memory a run maps at once free and the fresh address space
// holds the runs' ranges (TripRoom). It counts the runs' allocations,
// frees, pages mapped and unmapped and device calls, takes and releases
// their fresh address space, raises the peaks to what is mapped plus the
// run's peak, and returns true. Otherwise it changes nothing and returns
// false, and the caller makes the calls itself. times 0 only asks.
//
// The caller must make sure the batch it skips is the one t recorded (the
// same sizes, streams and order): RepeatTrip cannot see it.
func (a *Allocator) RepeatTrip(t *alloc.Trip, times int64) bool {
	if _, most := a.TripRoom(t); times < 0 || most < max(times, 1) || times > math.MaxInt64/max(t.N, t.Pages, 1) {
		return false
	}
	if times == 0 {
		return true
	}
	if !a.dev.RoundTrips(times*t.N, uint64(times)*t.VA) {
		panic(fmt.Sprintf("vmm: the device refused %d runs of a round trip of %d bytes of address space that TripRoom allowed (%d fresh)",
			times, t.VA, a.dev.FreshVA()))
	}
	if !a.mut.Repeat(t, times, &a.st.Allocs, &a.st.Frees) {
		panic(fmt.Sprintf("vmm: Mutations refused %d runs of a round trip that TripRoom allowed", times))
	}
	st := &a.st
	st.DeviceAllocs += times * t.Pages
	st.DeviceFrees += times * t.Pages
	st.PeakReserved = max(st.PeakReserved, st.Reserved+t.Peak)
	st.PeakAllocated = max(st.PeakAllocated, st.Allocated+t.Peak)
	return true
}

// FreeSummary is (0, 0) (alloc.FreeSummarizer): every segment is one
// live range holding one active block, so nothing is free inside one.
func (a *Allocator) FreeSummary() (largest, cachedFree int64) { return 0, 0 }
