package alloctest

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// Recorder is an allocator with the round-trip fast path (and, where it
// has them, a stamp, alloc.Stamper, and grows between trips, alloc.Grower
// and alloc.TripRoom).
type Recorder interface {
	alloc.Allocator
	alloc.TripRecorder
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
// streams 0 to streams-1 (allocations, frees and, on an alloc.Grower,
// grows of someone else's blocks, EmptyCache, Sync for an alloc.Syncer) and
// round trips (TripPatterns), once or a few times in a row; one repeats
// closed trips with RepeatTrip instead of making their calls whenever it
// may. After every step both must have the same Layout, Stats and
// MaxAllocatable, and, on an alloc.Stamper, every Layout seen at a stamp,
// after any call (inside a trip too), must be the Layout whenever that
// stamp comes back. On an alloc.TripRoom, RepeatTrip must stand in for as
// many runs as TripRoom says and no more, and it must say so only where
// the running twin's runs succeed. It fails unless some trip was repeated
// and, when mustRefuse, some trip was refused.
func TripsRepeat(t *testing.T, mk func(t *rapid.T) (fast, slow Recorder), streams int, mustRefuse bool) {
	var repeats, refused int
	rapid.Check(t, func(t *rapid.T) {
		fast, slow := mk(t)
		type key struct{ pattern, stream int }
		trips := map[key]alloc.Trip{}
		seen := map[uint64]mem.Layout{}
		stamper, _ := fast.(alloc.Stamper)
		observe := func() {
			if stamper == nil {
				return
			}
			l := fast.Layout()
			if was, ok := seen[stamper.Stamp()]; ok && !reflect.DeepEqual(was, l) {
				t.Fatalf("stamp %d came back with another layout:\nthen %v\nnow  %v", stamper.Stamp(), was, l)
			}
			seen[stamper.Stamp()] = l
		}
		growF, _ := fast.(alloc.Grower)
		growS, _ := slow.(alloc.Grower)
		room, _ := fast.(alloc.TripRoom)
		var liveF, liveS []alloc.Handle
		var sizes []int64 // requested bytes of the live blocks
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
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
					sizes = append(sizes, s)
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
				sizes = append(sizes[:i], sizes[i+1:]...)
			case 6: // a grow of someone else's block
				if growF == nil || len(liveF) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(liveF)-1).Draw(t, "grown")
				s := min(sizes[i]+int64(rapid.IntRange(0, int(20*mem.MiB)).Draw(t, "more")), growF.MaxGrowSize())
				_, ef := growF.Grow(liveF[i], s)
				_, es := growS.Grow(liveS[i], s)
				if (ef == nil) != (es == nil) {
					t.Fatalf("twin grows differ: %v, %v", ef, es)
				}
				if ef == nil {
					sizes[i] = s
				}
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
			default: // a round trip, run times times in a row
				k := key{rapid.IntRange(0, len(TripPatterns)-1).Draw(t, "pattern"), rapid.IntRange(0, streams-1).Draw(t, "trip-stream")}
				times := int64(rapid.IntRange(1, 3).Draw(t, "times"))
				slowOK := true
				for range times {
					if _, ok := RunTrip(t, slow, k.pattern, k.stream, nil); !ok {
						slowOK = false
					}
				}
				tr, ok := trips[k]
				if ok && room != nil {
					need, most := room.TripRoom(&tr)
					if most >= times && (!slowOK || fast.MaxAllocatable() < need) {
						t.Fatalf("TripRoom allows %d runs needing %d bytes with %d allocatable, but running them failed: %v", most, need, fast.MaxAllocatable(), !slowOK)
					}
					if rep := fast.RepeatTrip(&tr, times); rep != (most >= times) {
						t.Fatalf("TripRoom allows %d runs, RepeatTrip(%d) says %v", most, times, rep)
					}
					if most >= times {
						repeats++
						break
					}
				} else if ok && fast.RepeatTrip(&tr, times) {
					repeats++
					break
				}
				for range times {
					tr := fast.BeginTrip()
					if n, ok := RunTrip(t, fast, k.pattern, k.stream, observe); ok {
						if fast.EndTrip(&tr, n) {
							trips[k] = tr
						} else {
							refused++
						}
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
			if fs, ok := fast.(alloc.FreeSummarizer); ok {
				largest, free := fs.FreeSummary()
				if m := frag.Compute(lf); largest != m.LargestFreeBlock || free != m.CachedFree {
					t.Fatalf("FreeSummary (%d, %d), Layout (%d, %d)", largest, free, m.LargestFreeBlock, m.CachedFree)
				}
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
