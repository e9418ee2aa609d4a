package vmm

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestTripRepeatIsRunning runs twin allocators through the same random
// calls, grows and round trips (alloctest.TripsRepeat says what it
// checks), with the fresh address space starting a few ranges before its
// end, so that trips on fresh space, trips across its end (refused) and
// trips on released ranges all happen; trips that run out of memory must be
// refused.
func TestTripRepeatIsRunning(t *testing.T) {
	alloctest.TripsRepeat(t, func(t *rapid.T) (fast, slow alloctest.Recorder) {
		conf := rapid.SampledFrom([]Config{{}, {Page: MinPage}, {MaxRange: MaxMaxRange}, {Page: MinPage, MaxRange: 64 * mem.MiB}}).Draw(t, "conf")
		capacity := int64(rapid.IntRange(40, 200).Draw(t, "capacity-mib")) * mem.MiB
		left := rapid.IntRange(0, 200).Draw(t, "ranges-left")
		mk := func() *Allocator {
			dev := mem.MustDevice(capacity, 0)
			a, err := New(dev, conf)
			if err != nil {
				t.Fatal(err)
			}
			if r := uint64(a.cfg.MaxRange) * uint64(left); r < dev.FreshVA() {
				dev.RoundTrips(0, (dev.FreshVA()-r)/uint64(mem.PageSize)*uint64(mem.PageSize))
			}
			return a
		}
		return mk(), mk()
	}, 2, true)
}

// TestTripAcrossGrows: a closed trip repeats after grows of another range,
// raising the peaks by what the trip holds at once; it is refused after
// another allocation, when the device lacks its memory, and when it
// reserved some ranges fresh and some reused.
func TestTripAcrossGrows(t *testing.T) {
	dev := mem.MustDevice(100*mem.MiB, 0)
	a, err := New(dev, Config{})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := a.Alloc(mem.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	trip := func() (alloc.Trip, bool) {
		tr := a.BeginTrip()
		b1, err1 := a.Alloc(5*mem.MiB, 0)
		b2, err2 := a.Alloc(3*mem.MiB, 0)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if a.Free(b1.Handle) != nil || a.Free(b2.Handle) != nil {
			t.Fatal("free failed")
		}
		return tr, a.EndTrip(&tr, 2)
	}
	tr, ok := trip()
	if !ok || tr.Peak != 10*mem.MiB || tr.Pages != 5 || tr.VA != 2*uint64(DefaultMaxRange) {
		t.Fatalf("trip on fresh space: closed %v, %+v", ok, tr)
	}
	if _, err := a.Grow(kv.Handle, 40*mem.MiB); err != nil {
		t.Fatal(err)
	}
	st, fresh := a.Stats(), dev.FreshVA()
	if need, times := a.TripRoom(&tr); need != 10*mem.MiB || times < 1000 {
		t.Fatalf("TripRoom after a grow: %d bytes, %d runs", need, times)
	}
	if !a.RepeatTrip(&tr, 3) {
		t.Fatal("RepeatTrip refused a closed trip after a grow")
	}
	got := a.Stats()
	if got.Allocs != st.Allocs+6 || got.DeviceAllocs != st.DeviceAllocs+15 || got.DeviceFrees != st.DeviceFrees+15 ||
		got.PeakReserved != 50*mem.MiB || got.Reserved != 40*mem.MiB || dev.FreshVA() != fresh-6*uint64(DefaultMaxRange) {
		t.Fatalf("RepeatTrip(3) after a grow: %+v from %+v", got, st)
	}
	if _, err := a.Grow(kv.Handle, 95*mem.MiB); err != nil {
		t.Fatal(err)
	}
	if _, times := a.TripRoom(&tr); times != 0 || a.RepeatTrip(&tr, 1) {
		t.Fatal("a trip needing 10MiB was repeated with 5MiB free")
	}
	// Nothing else may have been counted by the refusals.
	if got2 := a.Stats(); got2.Allocs != got.Allocs || got2.OOMs != 0 {
		t.Fatalf("refused repeats changed the stats: %+v", got2)
	}
	other, err := a.Alloc(mem.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.RepeatTrip(&tr, 0) {
		t.Fatal("a trip was repeatable after another allocation")
	}
	if a.Free(other.Handle) != nil || a.Free(kv.Handle) != nil {
		t.Fatal("free failed")
	}

	// Across the end of the fresh space: one range fits fresh, the next
	// reuses a released one. Refused; on released ranges alone, closed.
	dev.RoundTrips(0, (dev.FreshVA()-uint64(DefaultMaxRange)-1)/uint64(mem.PageSize)*uint64(mem.PageSize))
	if _, ok := trip(); ok {
		t.Fatal("a trip across the end of the fresh space closed")
	}
	tr, ok = trip()
	if !ok || tr.VA != 0 {
		t.Fatalf("a trip on released ranges: closed %v, VA %d", ok, tr.VA)
	}
	if need, times := a.TripRoom(&tr); need != 10*mem.MiB || times != 1<<63-1 || !a.RepeatTrip(&tr, 1000) {
		t.Fatalf("a trip on released ranges: need %d, %d runs", need, times)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
