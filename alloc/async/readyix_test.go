package async

import (
	"cmp"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"pgregory.net/rapid"
)

// TestReadyIndexAgainstScan checks the size index against a sorted slice:
// after random inserts, removals and retags, with up to two tags per extent
// from a handful of streams so that long stretches of the size order share
// a tag, bestFitWithout must return what a scan in (size, address) order
// finds, and the augmentation must survive check.
func TestReadyIndexAgainstScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var ix readyIndex
		type item struct {
			e extent.Extent
			t tags
		}
		var items []item
		tag := func(rt *rapid.T) tags {
			var t tags
			for range rapid.IntRange(0, 2).Draw(rt, "ntags") {
				t.add(rapid.IntRange(-1, 3).Draw(rt, "tag"))
			}
			return t
		}
		for i := range rapid.IntRange(1, 300).Draw(rt, "ops") {
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op < 2 || len(items) == 0:
				e := extent.Extent{Addr: uint64(i) << 12, Size: rapid.Int64Range(1, 40).Draw(rt, "size")}
				it := item{e, tag(rt)}
				items = append(items, it)
				ix.insert(it.e, it.t)
			case op == 2:
				j := rapid.IntRange(0, len(items)-1).Draw(rt, "victim")
				if got := ix.remove(items[j].e); got != items[j].t {
					rt.Fatalf("remove %v returned tags %v, want %v", items[j].e, got, items[j].t)
				}
				items = slices.Delete(items, j, j+1)
			default:
				j := rapid.IntRange(0, len(items)-1).Draw(rt, "retag")
				items[j].t = tag(rt)
				ix.retag(items[j].e, items[j].t)
			}
			slices.SortFunc(items, func(x, y item) int {
				return cmp.Or(cmp.Compare(x.e.Size, y.e.Size), cmp.Compare(x.e.Addr, y.e.Addr))
			})
			for size := int64(0); size <= 41; size++ {
				for id := -1; id <= 3; id++ {
					var want extent.Extent
					found := false
					for _, it := range items {
						if it.e.Size >= size && !it.t.has(id) {
							want, found = it.e, true
							break
						}
					}
					got, ok := ix.bestFitWithout(size, id)
					if ok != found || got != want {
						rt.Fatalf("bestFitWithout(%d, %d) = %v, %v; want %v, %v", size, id, got, ok, want, found)
					}
				}
			}
		}
		want := map[extent.Extent]tags{}
		for _, it := range items {
			want[it.e] = it.t
		}
		if err := ix.check(want); err != nil {
			rt.Fatal(err)
		}
		c := ix.clone()
		if err := c.check(want); err != nil {
			rt.Fatalf("clone: %v", err)
		}
	})
}
