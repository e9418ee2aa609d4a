package caching_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestTripRepeatIsRunning runs twin allocators through the same random
// calls and round trips on two streams, one repeating closed trips
// (alloctest.TripsRepeat says what it checks), with and without expandable
// segments and with garbage collection (whose trips must be refused).
func TestTripRepeatIsRunning(t *testing.T) {
	alloctest.TripsRepeat(t, func(t *rapid.T) (fast, slow alloctest.Recorder) {
		conf := rapid.SampledFrom([]string{"", "expandable_segments:True",
			"garbage_collection_threshold:0.5,per_process_memory_fraction:0.8", "max_split_size_mb:20"}).Draw(t, "conf")
		capacity := int64(rapid.IntRange(40, 200).Draw(t, "capacity-mib")) * mem.MiB
		mk := func() *caching.Allocator {
			a, err := caching.FromSpec(mem.MustDevice(capacity, 0), conf)
			if err != nil {
				t.Fatal(err)
			}
			return a.(*caching.Allocator)
		}
		return mk(), mk()
	}, 2, true)
}

// TestEndTrip checks which batches EndTrip accepts.
func TestEndTrip(t *testing.T) {
	a, err := caching.New(mem.MustDevice(mem.GiB, 0), caching.Config{})
	if err != nil {
		t.Fatal(err)
	}
	trip := func(extra func()) (alloc.Trip, bool) {
		tr := a.BeginTrip()
		b, err := a.Alloc(3*mem.MiB, 0)
		if err != nil {
			t.Fatal(err)
		}
		if extra != nil {
			extra()
		}
		if err := a.Free(b.Handle); err != nil {
			t.Fatal(err)
		}
		return tr, a.EndTrip(&tr, 1)
	}
	if _, ok := trip(nil); ok {
		t.Fatal("a trip that took a segment from the device was accepted")
	}
	tr, ok := trip(nil)
	if !ok {
		t.Fatal("a trip within cached memory was refused")
	}
	st := a.Stats()
	if !a.RepeatTrip(&tr, 3) {
		t.Fatal("RepeatTrip refused a closed trip right after it")
	}
	if got := a.Stats(); got.Allocs != st.Allocs+3 || got.Frees != st.Frees+3 || got.Reserved != st.Reserved {
		t.Fatalf("RepeatTrip(3) counted %+v from %+v", got, st)
	}
	other, err := a.Alloc(mem.KiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.RepeatTrip(&tr, 1) {
		t.Fatal("RepeatTrip repeated a trip after another allocation")
	}
	if _, ok := trip(func() { _ = a.Free(other.Handle) }); ok {
		t.Fatal("a trip with someone else's free inside was accepted")
	}
	if _, ok := trip(func() { a.EmptyCache() }); ok {
		t.Fatal("a trip with EmptyCache inside was accepted")
	}
	var zero alloc.Trip
	if a.RepeatTrip(&zero, 1) {
		t.Fatal("the zero Trip was repeated")
	}
}

// TestStampAfterTrip checks the stamp across a closed trip: it comes back to
// its value at BeginTrip, and a stamp seen inside the trip is never given to
// a later state (a call after the trip), which has another layout.
func TestStampAfterTrip(t *testing.T) {
	a, err := caching.New(mem.MustDevice(mem.GiB, 0), caching.Config{})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := a.Alloc(3*mem.MiB, 0) // take the segment from the device first
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(warm.Handle); err != nil {
		t.Fatal(err)
	}
	start := a.Stamp()
	tr := a.BeginTrip()
	b, err := a.Alloc(3*mem.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	inside := a.Stamp()
	if inside == start {
		t.Fatal("an allocation did not move the stamp")
	}
	if err := a.Free(b.Handle); err != nil {
		t.Fatal(err)
	}
	if !a.EndTrip(&tr, 1) {
		t.Fatal("a trip within cached memory was refused")
	}
	if got := a.Stamp(); got != start {
		t.Fatalf("stamp after a closed trip %d, at BeginTrip %d", got, start)
	}
	seen := map[uint64]bool{start: true, inside: true}
	for range 3 {
		if _, err := a.Alloc(mem.MiB, 0); err != nil {
			t.Fatal(err)
		}
		if seen[a.Stamp()] {
			t.Fatalf("stamp %d given again to another layout after the trip (seen: %v)", a.Stamp(), seen)
		}
		seen[a.Stamp()] = true
	}
	if a.RepeatTrip(&tr, 1) {
		t.Fatal("RepeatTrip repeated a trip after other allocations")
	}
}
