package caching_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestFreeSummaryIsLayouts: after every call of a random mix of allocations
// on two streams, frees, cache flushes and segment releases, with and
// without expandable segments, FreeSummary gives exactly the largest free
// block and the cached free bytes that frag.Compute reads from Layout.
func TestFreeSummaryIsLayouts(t *testing.T) {
	var nonzero int
	rapid.Check(t, func(t *rapid.T) {
		conf := rapid.SampledFrom([]string{"", "expandable_segments:True", "max_split_size_mb:20",
			"garbage_collection_threshold:0.5,per_process_memory_fraction:0.8"}).Draw(t, "conf")
		capacity := int64(rapid.IntRange(40, 200).Draw(t, "capacity-mib")) * mem.MiB
		al, err := caching.FromSpec(mem.MustDevice(capacity, 0), conf)
		if err != nil {
			t.Fatal(err)
		}
		a := al.(*caching.Allocator)
		check := func(after string) {
			largest, free := a.FreeSummary()
			m := frag.Compute(a.Layout())
			if largest != m.LargestFreeBlock || free != m.CachedFree {
				t.Fatalf("after %s: FreeSummary (%d, %d), Layout (%d, %d)", after, largest, free, m.LargestFreeBlock, m.CachedFree)
			}
			if free > 0 {
				nonzero++
			}
		}
		var live []alloc.Handle
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); {
			case op <= 2:
				s := int64(rapid.IntRange(1, int(30*mem.MiB)).Draw(t, "size"))
				if b, err := a.Alloc(s, rapid.IntRange(0, 1).Draw(t, "stream")); err == nil {
					live = append(live, b.Handle)
				}
				check("alloc")
			case op <= 4:
				if len(live) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(live)-1).Draw(t, "victim")
				if err := a.Free(live[i]); err != nil {
					t.Fatal(err)
				}
				live = append(live[:i], live[i+1:]...)
				check("free")
			default:
				a.EmptyCache()
				check("EmptyCache")
			}
		}
	})
	if nonzero == 0 {
		t.Fatal("no state with cached free memory was ever drawn")
	}
}
