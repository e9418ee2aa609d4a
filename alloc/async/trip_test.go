package async

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestTripRepeatIsRunning runs twin pools through the same random calls
// (Sync included) and round trips on two streams, one repeating closed trips
// (alloctest.TripsRepeat says what it checks); trips that take ready memory
// must be refused.
func TestTripRepeatIsRunning(t *testing.T) {
	alloctest.TripsRepeat(t, func(t *rapid.T) (fast, slow alloctest.Recorder) {
		conf := rapid.SampledFrom([]string{"", "release_threshold:max", "release_threshold:64MiB"}).Draw(t, "conf")
		capacity := int64(rapid.IntRange(40, 200).Draw(t, "capacity-mib")) * mem.MiB
		mk := func() *Allocator {
			a, err := FromSpec(mem.MustDevice(capacity, 0), conf)
			if err != nil {
				t.Fatal(err)
			}
			return a.(*Allocator)
		}
		return mk(), mk()
	}, 2, true)
}

// TestEndTripRefusesATakeFromReady: a trip that allocates bytes free for all
// streams and frees them into its stream's pending frees does not end where
// it started (ready memory shrank, the stream's pending grew), so EndTrip
// refuses it; once the stream's own pending frees serve it, it closes.
func TestEndTripRefusesATakeFromReady(t *testing.T) {
	a, err := New(mem.MustDevice(mem.GiB, 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	trip := func() bool {
		tr := a.BeginTrip()
		b, err := a.Alloc(3*mem.MiB, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Free(b.Handle); err != nil {
			t.Fatal(err)
		}
		return a.EndTrip(&tr, 1)
	}
	if trip() {
		t.Fatal("the first trip maps pages and must not close")
	}
	a.Sync()                                       // the block's bytes become ready memory (threshold 0 unmaps whole free pages)
	if _, err := a.Alloc(mem.MiB, 1); err != nil { // leave a partly used page mapped
		t.Fatal(err)
	}
	if trip() {
		t.Fatal("a trip that maps pages or takes ready memory must not close")
	}
	if !trip() {
		t.Fatal("a trip served by its stream's own pending frees must close")
	}
}
