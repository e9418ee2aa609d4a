package alloctest

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// Recorder is an allocator with the round-trip fast path and its stamp.
type Recorder interface {
	alloc.Allocator
	alloc.TripRecorder
	alloc.Stamper
}

// TripPatterns are closed batches: allocate the sizes in order, then free
// the blocks in the order of the indexes in Free.
var TripPatterns = []struct {
	Sizes []int64
	Free  []int
}{
	{[]int64{3 * mem.MiB, 5 * mem.MiB, 700 * mem.KiB}, []int{1, 0, 2}},
	{[]int64{12 * mem.MiB}, []int{0}},
	{[]int64{200 * mem.KiB, 900 * mem.KiB, 40 * mem.MiB, 1}, []int{3, 2, 1, 0}},
	{[]int64{7 * mem.MiB, 7 * mem.MiB}, []int{0, 1}},
}

// RunTrip makes pattern p's calls on stream, calling observe (when not nil)
// after each; ok is false when an allocation failed (the blocks it got are
// freed).
func RunTrip(t *rapid.T, a alloc.Allocator, p, stream int, observe func()) (n int64, ok bool) {
	pat := TripPatterns[p]
	hs := make([]alloc.Handle, len(pat.Sizes))
	free := func(h alloc.Handle) {
		if err := a.Free(h); err != nil {
			t.Fatal(err)
		}
		if observe != nil {
			observe()
		}
	}
	for i, s := range pat.Sizes {
		b, err := a.Alloc(s, stream)
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
	for _, i := range pat.Free {
		free(hs[i])
	}
	return n, true
}

// TripsRepeat runs twin allocators from mk through the same random calls on
// streams 0 to streams-1 (allocations and frees of someone else, EmptyCache,
// Sync for an alloc.Syncer) and round trips (TripPatterns); one repeats
// closed trips with RepeatTrip instead of making their calls whenever it
// may. After every step both must have the same Layout, Stats and
// MaxAllocatable, and every Layout seen at a stamp, after any call (inside a
// trip too), must be the Layout whenever that stamp comes back
// (alloc.Stamper). It fails unless some trip was repeated and, when
// mustRefuse, some trip was refused.
func TripsRepeat(t *testing.T, mk func(t *rapid.T) (fast, slow Recorder), streams int, mustRefuse bool) {
	var repeats, refused int
	rapid.Check(t, func(t *rapid.T) {
		fast, slow := mk(t)
		type key struct{ pattern, stream int }
		trips := map[key]alloc.Trip{}
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
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0: // an allocation of someone else
				s := int64(rapid.IntRange(1, int(30*mem.MiB)).Draw(t, "size"))
				st := rapid.IntRange(0, streams-1).Draw(t, "stream")
				bf, ef := fast.Alloc(s, st)
				bs, es := slow.Alloc(s, st)
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
				switch rapid.IntRange(0, 5).Draw(t, "flush") {
				case 0:
					fast.EmptyCache()
					slow.EmptyCache()
				case 1:
					if sf, ok := fast.(alloc.Syncer); ok {
						sf.Sync()
						slow.(alloc.Syncer).Sync()
					}
				}
			default: // a round trip
				k := key{rapid.IntRange(0, len(TripPatterns)-1).Draw(t, "pattern"), rapid.IntRange(0, streams-1).Draw(t, "trip-stream")}
				RunTrip(t, slow, k.pattern, k.stream, nil)
				if tr, ok := trips[k]; ok && fast.RepeatTrip(&tr, 1) {
					repeats++
					break
				}
				tr := fast.BeginTrip()
				if n, ok := RunTrip(t, fast, k.pattern, k.stream, observe); ok {
					if fast.EndTrip(&tr, n) {
						trips[k] = tr
					} else {
						refused++
					}
				}
			}
			lf, ls := fast.Layout(), slow.Layout()
			if !reflect.DeepEqual(lf, ls) {
				t.Fatalf("layouts differ:\nrepeating %v\nrunning   %v", lf, ls)
			}
			if sf, ss := fast.Stats(), slow.Stats(); sf != ss {
				t.Fatalf("stats differ:\nrepeating %+v\nrunning   %+v", sf, ss)
			}
			if mf, ms := fast.MaxAllocatable(), slow.MaxAllocatable(); mf != ms {
				t.Fatalf("MaxAllocatable differs: repeating %d, running %d", mf, ms)
			}
			observe()
		}
		if c, ok := fast.(interface{ CheckInvariants() error }); ok {
			if err := c.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if repeats == 0 || (mustRefuse && refused == 0) {
		t.Fatalf("%d trips repeated and %d refused: the test means nothing unless trips are repeated (and refused)", repeats, refused)
	}
}
