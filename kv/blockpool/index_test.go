package blockpool

import (
	"testing"

	"pgregory.net/rapid"
)

// TestKeyIndex runs random inserts, lookups and removals against a map,
// with keys from a small range (so that homes collide and runs wrap around
// the table's end; with spread 2^64 ÷ φ, keys i apart have tags i apart, so
// that all share a home and most their tag) and tables that double as they
// fill: every key the map holds is found at its head, no other is, and the
// index's invariants (every entry reachable from its home, half full at
// most) hold after every call.
func TestKeyIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const blocks = 400
		keys := make([]BlockHash, blocks)
		var x keyIndex
		ref := map[BlockHash]BlockID{}
		spread := rapid.SampledFrom([]uint64{1, 3, 1 << 40, 0x9E3779B97F4A7C15, 0xf1de83e19937733d}).Draw(t, "spread")
		for range rapid.IntRange(1, 500).Draw(t, "ops") {
			k := BlockHash(uint64(rapid.IntRange(0, 150).Draw(t, "key")) * spread)
			head, ok := ref[k]
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0: // insert under a free block id
				if ok {
					continue
				}
				id := BlockID(1)
				for keys[id] != 0 || hasID(ref, id) {
					id++
				}
				keys[id] = k
				i, found := x.find(keys, k)
				if found {
					t.Fatalf("key %#x found before its insert", k)
				}
				x.insertAt(i, k, id)
				ref[k] = id
			case 1:
				if !ok {
					continue
				}
				i, found := x.find(keys, k)
				if !found || x.slots[i].id != head {
					t.Fatalf("key %#x: found %v at slot %d, want block %d", k, found, i, head)
				}
				x.removeAt(i)
				keys[head] = 0
				delete(ref, k)
			}
			for k, want := range ref {
				if got, ok := x.get(keys, k); !ok || got != want {
					t.Fatalf("get(%#x) = %d, %v; want %d", k, got, ok, want)
				}
			}
			if _, ok := x.get(keys, 0x5555); ok != hasKey(ref, 0x5555) {
				t.Fatal("get of an absent key found something")
			}
			if x.n != len(ref) || 2*x.n > len(x.slots) {
				t.Fatalf("%d entries in %d slots, map %d", x.n, len(x.slots), len(ref))
			}
			for i, e := range x.slots {
				if e.id == NullBlock {
					continue
				}
				if j, ok := x.find(keys, keys[e.id]); !ok || j != i || e.tag != tag(keys[e.id]) {
					t.Fatalf("entry %d at slot %d is found at %d", e.id, i, j)
				}
			}
		}
	})
}

func hasID(m map[BlockHash]BlockID, id BlockID) bool {
	for _, v := range m {
		if v == id {
			return true
		}
	}
	return false
}

func hasKey(m map[BlockHash]BlockID, k BlockHash) bool { _, ok := m[k]; return ok }
