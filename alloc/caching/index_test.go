package caching_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/mem"
)

// LargestFreeBlock must equal frag.LargestFreeBlock of the layout after every
// operation of a random run, in every configuration, and the indexes beside
// the free sets (whole segments and unmappable expandable blocks for
// empty_cache, the out-of-memory ladder and garbage collection; segment
// bases for ReleaseSegment; the largest free block over every stream) must
// hold exactly what a walk of the blocks finds: CheckInvariants compares
// each with a recount. The run crosses all of them: 40 streams appearing one
// by one (the largest-free index is rebuilt as they come), a device small
// enough for the ladder and garbage collection to act, segments released
// one at a time, and clones carried on from. The indexes replaced walks of
// every block or free block, so a wrong one would change what is released,
// and when.
func TestLargestFreeBlock(t *testing.T) {
	longtest.Skip(t)
	for _, c := range confs {
		t.Run("conf="+c, func(t *testing.T) {
			a, err := caching.FromSpec(mem.MustDevice(1*mem.GiB, 0), c)
			if err != nil {
				t.Fatal(err)
			}
			ca := a.(*caching.Allocator)
			rng := rand.New(rand.NewPCG(3, 4))
			var live []alloc.Handle
			released := 0
			defer func() {
				st := ca.Stats()
				t.Logf("released %d; allocs %d, ooms %d, retries %d, device frees %d", released, st.Allocs, st.OOMs, st.Retries, st.DeviceFrees)
			}()
			for i := range 1200 {
				streams := 1 + i/30
				switch r := rng.IntN(20); {
				case r < 9:
					size := int64(rng.IntN(60<<20)) + 1
					if rng.IntN(2) == 0 {
						size = int64(rng.IntN(1<<20)) + 1
					}
					if b, err := ca.Alloc(size, rng.IntN(streams)); err == nil {
						live = append(live, b.Handle)
					}
				case r < 17 && len(live) > 0:
					k := rng.IntN(len(live))
					if err := ca.Free(live[k]); err != nil {
						t.Fatal(err)
					}
					live = append(live[:k], live[k+1:]...)
				case r < 18:
					ca.EmptyCache()
				case r < 19:
					// A wholly free segment when there is one, else any.
					segs := ca.Layout().Segments
					var free []mem.Segment
					for _, s := range segs {
						if len(s.Blocks) == 1 && s.Blocks[0].State == mem.Free && !s.Expandable {
							free = append(free, s)
						}
					}
					if len(free) > 0 && rng.IntN(2) == 0 {
						segs = free
					}
					if len(segs) > 0 {
						s := segs[rng.IntN(len(segs))]
						whole := len(s.Blocks) == 1 && s.Blocks[0].State == mem.Free && !s.Expandable
						if whole {
							released++
						}
						if got := ca.ReleaseSegment(s.Addr); got != whole {
							t.Fatalf("op %d: ReleaseSegment(%#x) = %v for a segment %+v", i, s.Addr, got, s)
						}
					}
				default:
					ca = ca.Clone().(*caching.Allocator)
				}
				if err := ca.CheckInvariants(); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if got, want := ca.LargestFreeBlock(), frag.LargestFreeBlock(ca.Layout()); got != want {
					t.Fatalf("op %d: LargestFreeBlock %d, layout says %d", i, got, want)
				}
			}
		})
	}
}
