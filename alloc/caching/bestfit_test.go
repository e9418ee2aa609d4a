package caching

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestBestFitAgainstWalk runs malloc's written-out best fit (TakeFirst
// under fitLimit) and Free's written-out no-merge case beside the general
// paths on random operation sequences. Before each allocation the
// expected block is found the general way: the first key ≥ (size, 0) of
// the stream's free set in the pool (Find, not TakeFirst), taken only if
// PyTorch's oversize rules, restated here, allow it (get_free_block: best
// fit by size, then lowest address; a small request never takes an
// oversize block, an oversize one wastes less than max_non_split_rounding).
// The allocation must land at that block's address, or, when the rules
// refuse the block, anywhere else; a block taken from the cache is split
// as should_split (restated here) says, and a free upper neighbour of the
// new block, the rest of a split, has entered the free set in this call
// (its gcBase, the age garbage collection reads, is the pool's call
// count). After every operation
// the invariants hold, among them that no two free neighbours are left
// unmerged.
func TestBestFitAgainstWalk(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		spec := rapid.SampledFrom([]string{"", "max_split_size_mb:20", "max_split_size_mb:24,max_non_split_rounding_mb:20",
			"roundup_power2_divisions:4", "garbage_collection_threshold:0.6,per_process_memory_fraction:0.9"}).Draw(rt, "spec")
		cfg, err := ParseConfig(spec)
		if err != nil {
			rt.Fatal(err)
		}
		a, err := New(mem.MustDevice(4*mem.GiB, 0), cfg)
		if err != nil {
			rt.Fatal(err)
		}
		maxSplit, nonSplit := a.cfg.maxSplit(), a.cfg.nonSplitRounding()
		var live []alloc.Handle
		for range rapid.IntRange(1, 400).Draw(rt, "ops") {
			if len(live) == 0 || rapid.IntRange(0, 9).Draw(rt, "op") < 5 {
				orig := int64(1) << rapid.IntRange(6, 26).Draw(rt, "log2")
				orig += rapid.Int64Range(0, orig-1).Draw(rt, "jitter")
				stream := rapid.IntRange(0, 2).Draw(rt, "stream")
				size := a.roundSize(orig)
				want, found, expect := uint64(0), false, false
				wantSize, split := int64(0), false
				if si, known := a.streamIndex(stream); known {
					if fs := a.pools[poolFor(size)].freeSet(si); fs != nil {
						if k, ok := fs.LowerBound(freeKey(size, 0)); ok {
							b := a.blocks[k.ID]
							oversize := size < maxSplit && b.size >= maxSplit ||
								size >= maxSplit && b.size >= size+nonSplit
							want, found, expect = b.addr, true, !oversize
							wantSize = b.size
							if rem := b.size - size; size <= kSmallSize {
								split = rem >= kMinBlockSize
							} else {
								split = size < maxSplit && rem > kSmallSize
							}
						}
					}
				}
				blk, err := a.Alloc(orig, stream)
				if expect && (err != nil || blk.Addr != want) {
					rt.Fatalf("Alloc(%d, stream %d) = %#x, %v; the walk's best fit is at %#x", orig, stream, blk.Addr, err, want)
				}
				if found && !expect && err == nil && blk.Addr == want {
					rt.Fatalf("Alloc(%d, stream %d) took the oversize block at %#x", orig, stream, want)
				}
				if err == nil {
					if expect && split {
						wantSize = size
					}
					if expect && blk.Size != wantSize {
						rt.Fatalf("Alloc(%d) from a cached block took %d bytes, should_split: %d", orig, blk.Size, wantSize)
					}
					b := a.rec(int32(uint32(blk.Handle) - 1))
					if n := b.next; n != none && !a.isAllocated(n) && a.cold[n].gcBase != a.pools[b.pool].freeCalls {
						rt.Fatalf("Alloc(%d): the rest at %#x has gcBase %d, the pool's count is %d", orig, a.blocks[n].addr, a.cold[n].gcBase, a.pools[b.pool].freeCalls)
					}
					live = append(live, blk.Handle)
				}
			} else {
				i := rapid.IntRange(0, len(live)-1).Draw(rt, "victim")
				if err := a.Free(live[i]); err != nil {
					rt.Fatal(err)
				}
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			}
			if err := a.CheckInvariants(); err != nil {
				rt.Fatal(err)
			}
		}
	})
}

// TestSplitLowReusedRecord: splitLow writes a reused record field by field
// (not through newBlock's composite literal): every field of its hot part
// but gen, its pool and its state, even when the free record holds other
// values; the rest (request, gcBase, seg, qpos) it leaves as dropBlock left
// them, which CheckInvariants checks of every record not in use. The hot
// part and the pool are filled with junk first; a field added to block or
// record fails the count check until splitLow (and this test) set it.
func TestSplitLowReusedRecord(t *testing.T) {
	if n := reflect.TypeFor[block]().NumField(); n != 6 {
		t.Fatalf("block has %d fields, splitLow's written-out newBlock sets 6: update both", n)
	}
	if n := reflect.TypeFor[record]().NumField(); n != 14 {
		t.Fatalf("record has %d fields, rec and put handle 14: update them, splitLow and this test", n)
	}
	a, err := New(mem.MustDevice(4*mem.GiB, 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.Alloc(1<<20, 0) // one small-pool segment of 2 MiB, split
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(h.Handle); err != nil { // merges back into one free block
		t.Fatal(err)
	}
	if len(a.freeIDs) != 1 {
		t.Fatalf("%d free records, want 1", len(a.freeIDs))
	}
	r := a.freeIDs[0]
	if err := a.CheckInvariants(); err != nil { // the dropped record's cold part, request and state
		t.Fatal(err)
	}
	a.blocks[r] = block{addr: 0xdead, size: 77, prev: 3, next: 4, sidx: 6, gen: 8}
	a.bpool[r] = 9
	h, err = a.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := a.lookup(h.Handle)
	if !ok || id != r {
		t.Fatalf("allocation in record %d (ok %v), want the reused record %d", id, ok, r)
	}
	b := a.rec(id)
	rest := a.blocks[b.next]
	want := record{addr: rest.addr - 4096, size: 4096, prev: none, next: b.next, seg: none,
		gen: 9, pool: smallPool, allocated: true, mapped: true, inUse: true, requested: 4096}
	if b != want {
		t.Fatalf("reused record %+v, want %+v", b, want)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
