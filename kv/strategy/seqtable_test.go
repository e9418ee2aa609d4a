package strategy

import (
	"slices"
	"testing"
)

// seqTable keeps small non-negative ids in its slice and every other id in
// its map; both behave as one map.
func TestSeqTable(t *testing.T) {
	var tab seqTable[int]
	val := func(x int) *int { return &x }
	ids := []SeqID{5, 0, -3, denseMax, 1 << 40, 100, 63, 64}
	for i, id := range ids {
		if _, ok := tab.get(id); ok {
			t.Fatalf("id %d present before put", id)
		}
		tab.put(id, val(i))
	}
	if tab.len() != len(ids) {
		t.Fatalf("len %d, want %d", tab.len(), len(ids))
	}
	for i, id := range ids {
		if v, ok := tab.get(id); !ok || *v != i {
			t.Errorf("get(%d) = %v, %v; want %d", id, v, ok, i)
		}
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if got := tab.ids(); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	for _, id := range []SeqID{5, -3, 1 << 40, 7, -9} { // 7 and -9 were never put
		tab.del(id)
		if _, ok := tab.get(id); ok {
			t.Errorf("id %d present after del", id)
		}
	}
	if tab.len() != len(ids)-3 {
		t.Errorf("len %d after deleting 3, want %d", tab.len(), len(ids)-3)
	}
	if got := tab.ids(); !slices.Equal(got, []SeqID{0, 63, 64, 100, denseMax}) {
		t.Errorf("ids after deletes %v", got)
	}
}
