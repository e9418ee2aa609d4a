package caching_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// LargestFreeBlock must equal frag.LargestFreeBlock of the layout after every
// operation of a random run, in every configuration.
func TestLargestFreeBlock(t *testing.T) {
	for _, c := range confs {
		t.Run("conf="+c, func(t *testing.T) {
			a, err := caching.FromSpec(mem.MustDevice(2*mem.GiB, 0), c)
			if err != nil {
				t.Fatal(err)
			}
			ca := a.(*caching.Allocator)
			rng := rand.New(rand.NewPCG(1, 2))
			var live []alloc.Handle
			for i := range 800 {
				switch r := rng.IntN(10); {
				case r < 6:
					size := int64(rng.IntN(40<<20)) + 1
					if rng.IntN(2) == 0 {
						size = int64(rng.IntN(1<<20)) + 1
					}
					if b, err := ca.Alloc(size, rng.IntN(2)); err == nil {
						live = append(live, b.Handle)
					}
				case r < 9 && len(live) > 0:
					k := rng.IntN(len(live))
					if err := ca.Free(live[k]); err != nil {
						t.Fatal(err)
					}
					live = append(live[:k], live[k+1:]...)
				default:
					ca.EmptyCache()
				}
				if got, want := ca.LargestFreeBlock(), frag.LargestFreeBlock(ca.Layout()); got != want {
					t.Fatalf("op %d: LargestFreeBlock %d, layout says %d", i, got, want)
				}
			}
		})
	}
}
