package buddy

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// checkBuddyLayout verifies, from Layout and Stats alone (not the
// allocator's own check), what makes a layout a buddy system's: the blocks
// tile the pool, each a power-of-two multiple of min aligned to its size
// from the pool's base; no two free blocks are buddies (free space fully
// merged); each live block is the smallest that holds its request; and the
// bytes add up: live sizes to Allocated, requests to Requested, live plus
// free to the pool, the largest free block to MaxAllocatable.
func checkBuddyLayout(a *Allocator) error {
	l := a.Layout()
	st := a.Stats()
	if len(l.Segments) != 1 {
		return fmt.Errorf("%d segments, want 1", len(l.Segments))
	}
	seg := l.Segments[0]
	min := a.Config().Min
	at := seg.Addr
	free := map[[2]uint64]bool{} // {offset, size} of free blocks
	var allocated, requested, freeBytes, largest int64
	for _, b := range seg.Blocks {
		// In units of min (a power of two or not): a block is 2^k units at
		// a unit offset that is a multiple of 2^k.
		off := b.Addr - seg.Addr
		units := b.Size / min
		switch {
		case b.Addr != at:
			return fmt.Errorf("block at %s, want the next at %s", mem.FormatAddr(b.Addr), mem.FormatAddr(at))
		case b.Size%min != 0 || units&(units-1) != 0 || off%uint64(min) != 0:
			return fmt.Errorf("block at %s of %d bytes is not a power-of-two multiple of min %d", mem.FormatAddr(b.Addr), b.Size, min)
		case off/uint64(min)%uint64(units) != 0:
			return fmt.Errorf("block of %d bytes at offset %d is not aligned to its size (in units of %d)", b.Size, off, min)
		}
		at = b.End()
		if b.State == mem.Free {
			free[[2]uint64{off, uint64(b.Size)}] = true
			freeBytes += b.Size
			largest = max(largest, b.Size)
			continue
		}
		if b.Size > min && 2*b.Requested <= b.Size {
			return fmt.Errorf("live block of %d bytes holds %d: a block of half the size would do", b.Size, b.Requested)
		}
		allocated += b.Size
		requested += b.Requested
	}
	for k := range free {
		u, n := k[0]/uint64(min), k[1]/uint64(min)
		if bud := [2]uint64{(u ^ n) * uint64(min), k[1]}; free[bud] {
			return fmt.Errorf("free blocks of %d bytes at offsets %d and %d are buddies, not merged", k[1], k[0], bud[0])
		}
	}
	switch {
	case at != seg.End():
		return fmt.Errorf("blocks end at %s, pool at %s", mem.FormatAddr(at), mem.FormatAddr(seg.End()))
	case allocated != st.Allocated || requested != st.Requested:
		return fmt.Errorf("live blocks sum to %d/%d bytes, stats say %d/%d", allocated, requested, st.Allocated, st.Requested)
	case allocated+freeBytes != seg.Size || st.Reserved != seg.Size:
		return fmt.Errorf("live %d + free %d bytes, pool %d, reserved %d", allocated, freeBytes, seg.Size, st.Reserved)
	case l.MaxAllocatable != largest:
		return fmt.Errorf("MaxAllocatable %d, largest free block %d", l.MaxAllocatable, largest)
	}
	return nil
}

// bestFit is the reference policy, computed from a layout: the free block
// of the smallest size ≥ need, the lowest address among equals.
func bestFit(l mem.Layout, need int64) (mem.Block, bool) {
	var best mem.Block
	found := false
	for _, b := range l.Segments[0].Blocks {
		if b.State == mem.Free && b.Size >= need && (!found || b.Size < best.Size) {
			best, found = b, true
		}
	}
	return best, found
}

// TestBuddyProperties runs random allocs and frees on pools of random
// size (often not a power of two) and smallest block. Before each alloc
// the expected block is computed from the layout (bestFit of the rounded
// request, or an out-of-memory error when there is none); after every
// operation checkBuddyLayout holds. Given the live blocks, the free blocks
// of a fully merged buddy system are determined, so these checks pin the
// allocator's every answer.
func TestBuddyProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pages := rapid.Int64Range(2, 64).Draw(rt, "pool_pages")
		// Powers of two, and units that are not (3 KiB; 800 KiB, one token's
		// KV of OPT-13B in fp16: 40 layers × 5120 × 2 × 2 B).
		min := rapid.SampledFrom([]int64{512, 4 * mem.KiB, 64 * mem.KiB, mem.MiB, 4 * mem.MiB, 3 * mem.KiB, 819200}).Draw(rt, "min")
		cfg := Config{Size: pages * mem.PageSize, Min: min}
		a, err := New(mem.MustDevice(256*mem.MiB, 0), cfg)
		if err != nil {
			rt.Fatal(err)
		}
		pool := a.PoolSize()
		if unit := cfg.poolUnit(); pool != cfg.Size/unit*unit || unit%min != 0 {
			rt.Fatalf("pool %d for %+v", pool, cfg)
		}
		var live []alloc.Handle
		size := rapid.OneOf(
			rapid.Int64Range(1, 4*min),
			rapid.Int64Range(1, pool+pool/4),
			rapid.SampledFrom([]int64{min, min + 1, pool, pool/2 + 1}),
		)
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				if err := checkBuddyLayout(a); err != nil {
					rt.Fatal(err)
				}
			},
			"alloc": func(rt *rapid.T) {
				s := size.Draw(rt, "size")
				need := roundPow2(s, min)
				before := a.Layout()
				want, ok := bestFit(before, need)
				b, err := a.Alloc(s, rapid.IntRange(0, 3).Draw(rt, "stream"))
				if !ok {
					var oe *alloc.OOMError
					if !errors.As(err, &oe) || oe.Requested != s || oe.AllocSize != need {
						rt.Fatalf("alloc(%d) with no free block of %d: %v (%+v), want an OOM of %d", s, need, err, oe, need)
					}
					if !reflect.DeepEqual(before, a.Layout()) {
						rt.Fatalf("a failed alloc changed the layout")
					}
					return
				}
				if err != nil || b.Addr != want.Addr || b.Size != need {
					rt.Fatalf("alloc(%d) = %+v, %v; want %d bytes at %s (best fit)", s, b, err, need, mem.FormatAddr(want.Addr))
				}
				live = append(live, b.Handle)
			},
			"free": func(rt *rapid.T) {
				if len(live) == 0 {
					rt.Skip("nothing live")
				}
				i := rapid.IntRange(0, len(live)-1).Draw(rt, "which")
				if err := a.Free(live[i]); err != nil {
					rt.Fatal(err)
				}
				live = append(live[:i], live[i+1:]...)
			},
		})
		// Everything freed, the pool is its top-level blocks again.
		for _, h := range live {
			if err := a.Free(h); err != nil {
				rt.Fatal(err)
			}
		}
		var sizes []int64
		for _, b := range a.Layout().Segments[0].Blocks {
			sizes = append(sizes, b.Size)
		}
		if !reflect.DeepEqual(sizes, a.TopBlocks()) {
			rt.Fatalf("all freed: blocks %v, top-level blocks %v", sizes, a.TopBlocks())
		}
	})
}

func TestRoundPow2(t *testing.T) {
	for _, tc := range []struct{ n, min, want int64 }{
		{1, 512, 512}, {512, 512, 512}, {513, 512, 1024}, {3 * mem.MiB, 512, 4 * mem.MiB},
		{1 << 62, 512, 1 << 62}, {1<<62 + 1, 512, math.MaxInt64}, {math.MaxInt64, 4096, math.MaxInt64},
	} {
		if got := roundPow2(tc.n, tc.min); got != tc.want {
			t.Errorf("roundPow2(%d, %d) = %d, want %d", tc.n, tc.min, got, tc.want)
		}
	}
}
