package caching_test

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// tripPatterns are closed batches: allocate the sizes in order, then free
// the blocks in the order of the indexes in free.
var tripPatterns = []struct {
	sizes []int64
	free  []int
}{
	{[]int64{3 * mem.MiB, 5 * mem.MiB, 700 * mem.KiB}, []int{1, 0, 2}},
	{[]int64{12 * mem.MiB}, []int{0}},
	{[]int64{200 * mem.KiB, 900 * mem.KiB, 40 * mem.MiB, 1}, []int{3, 2, 1, 0}},
	{[]int64{7 * mem.MiB, 7 * mem.MiB}, []int{0, 1}},
}

// runTrip makes pattern p's calls, calling observe (when not nil) after
// each; ok is false when an allocation failed (the blocks it got are freed).
func runTrip(t *rapid.T, a *caching.Allocator, p int, observe func()) (n int64, ok bool) {
	pat := tripPatterns[p]
	hs := make([]alloc.Handle, len(pat.sizes))
	free := func(h alloc.Handle) {
		if err := a.Free(h); err != nil {
			t.Fatal(err)
		}
		if observe != nil {
			observe()
		}
	}
	for i, s := range pat.sizes {
		b, err := a.Alloc(s, 0)
		if observe != nil {
			observe()
		}
		if err != nil {
			for _, h := range hs[:i] {
				free(h)
			}
			return n, false
		}
		hs[i] = b.Handle
		n++
	}
	for _, i := range pat.free {
		free(hs[i])
	}
	return n, true
}

// TestTripRepeatIsRunning runs twin allocators through the same random
// calls and round trips; one repeats closed trips with RepeatTrip instead
// of making their calls whenever it may. After every step both must have
// the same Layout and Stats, and every Layout seen at a stamp, after any
// call (inside a trip too), must be the Layout whenever that stamp comes
// back (alloc.Stamper).
func TestTripRepeatIsRunning(t *testing.T) {
	var repeats int
	rapid.Check(t, func(t *rapid.T) {
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
		fast, slow := mk(), mk()
		trips := map[int]alloc.Trip{}
		seen := map[uint64]mem.Layout{}
		observe := func() {
			l := fast.Layout()
			if was, ok := seen[fast.Stamp()]; ok && !reflect.DeepEqual(was, l) {
				t.Fatalf("stamp %d came back with another layout:\nthen %v\nnow  %v", fast.Stamp(), was, l)
			}
			seen[fast.Stamp()] = l
		}
		var liveF, liveS []alloc.Handle
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0: // an allocation of someone else
				s := int64(rapid.IntRange(1, int(30*mem.MiB)).Draw(t, "size"))
				bf, ef := fast.Alloc(s, 0)
				bs, es := slow.Alloc(s, 0)
				if (ef == nil) != (es == nil) {
					t.Fatalf("twin allocations differ: %v, %v", ef, es)
				}
				if ef == nil {
					liveF, liveS = append(liveF, bf.Handle), append(liveS, bs.Handle)
				}
			case 1: // a free of someone else
				if len(liveF) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(liveF)-1).Draw(t, "victim")
				if fast.Free(liveF[i]) != nil || slow.Free(liveS[i]) != nil {
					t.Fatal("free failed")
				}
				liveF, liveS = append(liveF[:i], liveF[i+1:]...), append(liveS[:i], liveS[i+1:]...)
			case 2:
				if rapid.IntRange(0, 5).Draw(t, "empty") == 0 {
					fast.EmptyCache()
					slow.EmptyCache()
				}
			default: // a round trip
				p := rapid.IntRange(0, len(tripPatterns)-1).Draw(t, "pattern")
				runTrip(t, slow, p, nil)
				if tr, ok := trips[p]; ok && fast.RepeatTrip(&tr, 1) {
					repeats++
					break
				}
				tr := fast.BeginTrip()
				if n, ok := runTrip(t, fast, p, observe); ok && fast.EndTrip(&tr, n) {
					trips[p] = tr
				}
			}
			lf, ls := fast.Layout(), slow.Layout()
			if !reflect.DeepEqual(lf, ls) {
				t.Fatalf("layouts differ:\nrepeating %v\nrunning   %v", lf, ls)
			}
			if sf, ss := fast.Stats(), slow.Stats(); sf != ss {
				t.Fatalf("stats differ:\nrepeating %+v\nrunning   %+v", sf, ss)
			}
			observe()
		}
		if err := fast.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
	if repeats == 0 {
		t.Fatal("no trip was ever repeated")
	}
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
