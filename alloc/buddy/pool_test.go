package buddy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// kib is n KiB as an offset.
func kib(n uint64) uint64 { return n * 1024 }

// freeMap lists p's free blocks in address order as "SIZE@OFFSET".
func freeMap(p *pool) string {
	type fb struct {
		off uint64
		k   int
	}
	var fs []fb
	p.each(func(off uint64, k int) { fs = append(fs, fb{off, k}) })
	slices.SortFunc(fs, func(x, y fb) int { return int(x.off) - int(y.off) })
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s@%s", mem.FormatBytesExact(p.blockSize(f.k)), mem.FormatBytesExact(int64(f.off))))
	}
	return strings.Join(parts, " ")
}

// TestHandWorkedSplitMerge allocates three 1 KiB blocks in a 16 KiB pool
// of 1 KiB blocks and frees them, with every address and every merge worked
// out by hand.
func TestHandWorkedSplitMerge(t *testing.T) {
	var p pool
	p.init(16*mem.KiB, mem.KiB)
	check := func(step, want string) {
		t.Helper()
		if err := p.check(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := freeMap(&p); got != want {
			t.Fatalf("%s: free blocks %s, want %s", step, got, want)
		}
	}
	take := func(k int, want uint64) {
		t.Helper()
		off, ok := p.take(k)
		if !ok || off != want {
			t.Fatalf("take(order %d) = %d, %v; want offset %d", k, off, ok, want)
		}
	}
	put := func(off uint64, k int, wantOff uint64, wantK int) {
		t.Helper()
		if o, kk := p.put(off, k); o != wantOff || kk != wantK {
			t.Fatalf("put(%d, order %d) ended as order %d at %d; want order %d at %d", off, k, kk, o, wantK, wantOff)
		}
	}
	check("init", "16KiB@0B")

	// a: the 16 KiB block splits four times (8, 4, 2, 1 KiB halves left
	// free above it); a is the lowest 1 KiB.
	take(0, 0)
	check("a", "1KiB@1KiB 2KiB@2KiB 4KiB@4KiB 8KiB@8KiB")
	// b: a free 1 KiB block exists (a's buddy): no split.
	take(0, kib(1))
	check("b", "2KiB@2KiB 4KiB@4KiB 8KiB@8KiB")
	// c: the smallest free order is 2 KiB; it splits, c is its low half.
	take(0, kib(2))
	check("c", "1KiB@3KiB 4KiB@4KiB 8KiB@8KiB")

	// Free b: its buddy (offset 1K ^ 1K = 0) is a, live: no merge.
	put(kib(1), 0, kib(1), 0)
	check("free b", "1KiB@1KiB 1KiB@3KiB 4KiB@4KiB 8KiB@8KiB")
	// Free a: its buddy b is free, so they merge into 2 KiB at 0; that
	// block's buddy (2 KiB at 2K) is c's parent, not free: one merge.
	put(0, 0, 0, 1)
	check("free a", "2KiB@0B 1KiB@3KiB 4KiB@4KiB 8KiB@8KiB")
	// Free c: four merges, 1+1 → 2 KiB at 2K, + 2 KiB at 0 → 4 KiB at 0,
	// + 4 KiB at 4K → 8 KiB at 0, + 8 KiB at 8K → the whole 16 KiB pool.
	put(kib(2), 0, 0, 4)
	check("free c", "16KiB@0B")
}

// TestTokenUnits: with a unit that is not a power of two (one token's KV,
// here 3 KiB to keep the arithmetic readable), blocks are 2^k units at unit
// offsets that are multiples of 2^k, and buddies are found in units: a
// 16-unit (48 KiB) pool, 3 tokens → a 4-unit block at 0, 1 token → unit 4,
// 5 tokens → an 8-unit block at unit 8 (byte 24 KiB).
func TestTokenUnits(t *testing.T) {
	const u = 3 << 10 // 3 KiB, untyped: offsets are uint64, sizes int64
	var p pool
	p.init(16*u, u)
	for _, tc := range []struct {
		bytes int64
		order int
		off   uint64
	}{{3 * u, 2, 0}, {u, 0, 4 * u}, {5 * u, 3, 8 * u}} {
		k, ok := p.orderFor(tc.bytes)
		if !ok || k != tc.order {
			t.Fatalf("orderFor(%d) = %d, %v; want %d", tc.bytes, k, ok, tc.order)
		}
		if off, ok := p.take(k); !ok || off != tc.off {
			t.Fatalf("take(order %d) = %d, %v; want byte offset %d", k, off, ok, tc.off)
		}
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	// Free: the 1-unit block at unit 4 merges with its buddy at 5 (free
	// since the split) into 2 units at 4, then with 6-7 into 4 units at 4;
	// its buddy at 0 is live, so it stops there.
	if off, k := p.put(4*u, 0); off != 4*u || k != 2 {
		t.Fatalf("put(unit 4) ended as order %d at byte %d; want order 2 at %d", k, off, 4*u)
	}
	if off, k := p.put(0, 2); off != 0 || k != 3 {
		t.Fatalf("put(unit 0, order 2) ended as order %d at byte %d; want order 3 at 0", k, off)
	}
	if off, k := p.put(8*u, 3); off != 0 || k != 4 {
		t.Fatalf("put(unit 8, order 3) ended as order %d at byte %d; want the whole pool", k, off)
	}
	if err := p.check(); err != nil || p.freeBytes != 16*u {
		t.Fatalf("after freeing all: %v, %d free bytes", err, p.freeBytes)
	}
}

// TestTopLevelBlocks: a pool that is not a power of two starts as its
// top-level blocks, largest first; they never merge with each other, and
// best fit takes the smallest that holds a request.
func TestTopLevelBlocks(t *testing.T) {
	var p pool
	p.init(13*mem.KiB, mem.KiB) // 8 + 4 + 1
	if got, want := freeMap(&p), "8KiB@0B 4KiB@8KiB 1KiB@12KiB"; got != want {
		t.Fatalf("13 KiB pool: %s, want %s", got, want)
	}
	// 4 KiB: the 4 KiB top-level block itself, not a split of the 8 KiB.
	if off, ok := p.take(2); !ok || off != kib(8) {
		t.Fatalf("take 4KiB = %d, %v", off, ok)
	}
	// 8 KiB: the 8 KiB block; then no 8 KiB is left although 1 KiB is free.
	if off, ok := p.take(3); !ok || off != 0 {
		t.Fatalf("take 8KiB = %d, %v", off, ok)
	}
	if _, ok := p.take(3); ok {
		t.Fatal("a second 8 KiB in a 13 KiB pool")
	}
	// 16 KiB can never be served.
	if _, ok := p.orderFor(16 * mem.KiB); ok {
		t.Fatal("orderFor(16KiB) in a pool whose largest block is 8 KiB")
	}
	// Freed, each top-level block stays what it was: 8 KiB at 0 beside 4 KiB
	// at 8K are adjacent but not buddies (4K at 8K has no 4K buddy at 12K).
	if o, k := p.put(kib(8), 2); o != kib(8) || k != 2 {
		t.Fatalf("put 4KiB ended as order %d at %d", k, o)
	}
	if o, k := p.put(0, 3); o != 0 || k != 3 {
		t.Fatalf("put 8KiB ended as order %d at %d", k, o)
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	if got, want := freeMap(&p), "8KiB@0B 4KiB@8KiB 1KiB@12KiB"; got != want {
		t.Fatalf("after frees: %s, want %s", got, want)
	}
}

func TestOrderFor(t *testing.T) {
	var p pool
	p.init(16*mem.KiB, mem.KiB)
	for _, tc := range []struct {
		n  int64
		k  int
		ok bool
	}{
		{1, 0, true}, {mem.KiB, 0, true}, {mem.KiB + 1, 1, true}, {2 * mem.KiB, 1, true},
		{3 * mem.KiB, 2, true}, {8*mem.KiB + 1, 4, true}, {16 * mem.KiB, 4, true}, {16*mem.KiB + 1, 0, false},
	} {
		if k, ok := p.orderFor(tc.n); k != tc.k || ok != tc.ok {
			t.Errorf("orderFor(%d) = %d, %v; want %d, %v", tc.n, k, ok, tc.k, tc.ok)
		}
	}
}
