package async

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestMatchesPerStreamSets replays random operations on up to 40 streams
// through the pool and through refPool, the per-stream-set pool it replaced,
// and requires the same answer to every operation: the same address or the
// same error for each allocation, and the same stats after each operation,
// layout and MaxAllocatable after every few. Frees land on many streams
// between syncs, so ready memory touches the pending frees of several
// streams at once, the case that the size index's tags exist for.
func TestMatchesPerStreamSets(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.Int64Range(16, 256).Draw(rt, "capacity_2mib") * mem.PageSize
		threshold := rapid.SampledFrom([]int64{0, 8 * mem.MiB, NoRelease}).Draw(rt, "threshold")
		streams := rapid.IntRange(1, 40).Draw(rt, "streams")
		cfg := Config{ReleaseThreshold: threshold}
		a, err := New(mem.MustDevice(capacity, 0), cfg)
		if err != nil {
			rt.Fatal(err)
		}
		r, err := newRefPool(mem.MustDevice(capacity, 0), cfg)
		if err != nil {
			rt.Fatal(err)
		}
		size := rapid.OneOf(
			rapid.Int64Range(1, 64*1024),
			rapid.Int64Range(1, 3*mem.MiB),
			rapid.Int64Range(mem.MiB, 24*mem.MiB),
			rapid.SampledFrom([]int64{512, 1536, mem.MiB, 2 * mem.MiB}),
		)
		type pair struct{ a, r alloc.Handle }
		var live []pair
		n := rapid.IntRange(1, 400).Draw(rt, "ops")
		for i := range n {
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 5:
				s, st := size.Draw(rt, "size"), rapid.IntRange(0, streams-1).Draw(rt, "stream")
				ba, ea := a.Alloc(s, st)
				br, er := r.Alloc(s, st)
				if (ea == nil) != (er == nil) || ba.Addr != br.Addr || ba.Size != br.Size {
					rt.Fatalf("op %d: alloc(%d) on stream %d: got %+v, %v; reference %+v, %v", i, s, st, ba, ea, br, er)
				}
				if ea == nil {
					live = append(live, pair{ba.Handle, br.Handle})
				}
			case op < 8:
				if len(live) == 0 {
					continue
				}
				j := rapid.IntRange(0, len(live)-1).Draw(rt, "victim")
				if err := a.Free(live[j].a); err != nil {
					rt.Fatal(err)
				}
				if err := r.Free(live[j].r); err != nil {
					rt.Fatal(err)
				}
				live = append(live[:j], live[j+1:]...)
			case op == 8:
				a.Sync()
				r.Sync()
			default:
				a.EmptyCache()
				r.EmptyCache()
			}
			if as, rs := a.Stats(), r.Stats(); as != rs {
				rt.Fatalf("op %d: stats %+v, reference %+v", i, as, rs)
			}
			if i%8 == 7 || i == n-1 {
				if la, lr := a.Layout(), r.Layout(); !reflect.DeepEqual(la, lr) {
					rt.Fatalf("op %d: layout\n%s\nreference\n%s", i, la, lr)
				}
			}
		}
		if err := a.CheckInvariants(); err != nil {
			rt.Fatal(err)
		}
	})
}
