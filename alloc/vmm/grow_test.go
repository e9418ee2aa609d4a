package vmm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestGrowScripts runs the commented Grow scenarios in testdata/grow through
// alloctest.RunScripts, with two commands of vmm's own:
//
//	grow id=a size=6MiB    Grow; prints the block or the error
//	map-ops                MapOps and UnmapOps
//
// Rerun with -rewrite to regenerate the output.
func TestGrowScripts(t *testing.T) {
	alloctest.RunScripts(t, "testdata/grow", FromSpec, growHook)
}

func growHook(t *testing.T, env *alloctest.ScriptEnv, td *datadriven.TestData) (string, bool) {
	a := env.A.(*Allocator)
	switch td.Cmd {
	case "grow":
		var id, size string
		td.ScanArgs(t, "id", &id)
		td.ScanArgs(t, "size", &size)
		n, err := mem.ParseBytes(size)
		if err != nil {
			td.Fatalf(t, "size: %v", err)
		}
		h, _ := env.Handle(id)
		b, err := a.Grow(h, n)
		if err != nil {
			return "error: " + err.Error(), true
		}
		env.Track(id, b, n)
		return alloctest.FormatBlock(id, b), true
	case "map-ops":
		return fmt.Sprintf("map=%d unmap=%d", a.MapOps(), a.UnmapOps()), true
	}
	return "", false
}

// TestGrowProperties mixes Alloc, Grow and Free at random and checks after
// every step that the layout matches the reference, that a successful Grow
// keeps the address and covers the new size in whole pages, that a failed
// Grow changes nothing but the OOM count, and alloc.Grower's promise: grows
// within MaxGrowSize that need at most MaxAllocatable bytes, alone or
// together, succeed.
func TestGrowProperties(t *testing.T) {
	var together int // grow-many steps that grew two blocks or more
	rapid.Check(t, func(rt *rapid.T) {
		page := rapid.SampledFrom([]int64{MinPage, 192 * mem.KiB, DefaultPage}).Draw(rt, "page")
		maxRange := page * rapid.Int64Range(1, 64).Draw(rt, "range_pages")
		capacity := rapid.Int64Range(16, 256).Draw(rt, "capacity_2mib") * mem.PageSize
		a, err := New(mem.MustDevice(capacity, 0), Config{Page: page, MaxRange: maxRange})
		if err != nil {
			rt.Fatal(err)
		}
		var g alloc.Grower = a
		if g.GrowUnit() != page || g.MaxGrowSize() != maxRange {
			rt.Fatalf("GrowUnit %d, MaxGrowSize %d; configured page %d, range %d", g.GrowUnit(), g.MaxGrowSize(), page, maxRange)
		}
		live := map[alloc.Handle]alloctest.Live{}
		var hs []alloc.Handle
		sizes := rapid.Int64Range(1, 24*mem.MiB)
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				if err := alloctest.Check(a, live); err != nil {
					rt.Fatal(err)
				}
				if err := alloctest.CheckMaxAllocatable(a); err != nil {
					rt.Fatal(err)
				}
			},
			"alloc": func(rt *rapid.T) {
				n := sizes.Draw(rt, "size")
				b, err := a.Alloc(n, 0)
				if err != nil {
					if e := alloctest.CheckOOM(err, n); e != nil {
						rt.Fatal(e)
					}
					return
				}
				hs = append(hs, b.Handle)
				live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: n}
			},
			"grow": func(rt *rapid.T) {
				if len(live) == 0 {
					rt.Skip("nothing live")
				}
				h := rapid.SampledFrom(hs).Draw(rt, "which")
				old, ok := live[h]
				if !ok { // freed: Grow must refuse the stale handle
					if _, err := a.Grow(h, 1); !errors.Is(err, alloc.ErrInvalidHandle) {
						rt.Fatalf("grow of a freed handle: %v, want ErrInvalidHandle", err)
					}
					return
				}
				n := old.Requested + rapid.Int64Range(0, 8*mem.MiB).Draw(rt, "more")
				before, st := a.Layout(), a.Stats()
				// alloc.Grower's promise: within MaxGrowSize, a grow that
				// needs at most MaxAllocatable bytes succeeds.
				promised := n <= g.MaxGrowSize() && roundUp(n, g.GrowUnit())-old.Size <= a.MaxAllocatable()
				b, err := a.Grow(h, n)
				if err != nil && promised {
					rt.Fatalf("grow of %+v to %d needs %d bytes of %d allocatable, within %d: %v",
						old, n, roundUp(n, g.GrowUnit())-old.Size, a.MaxAllocatable(), g.MaxGrowSize(), err)
				}
				if err != nil {
					if !errors.Is(err, alloc.ErrOutOfMemory) && !errors.Is(err, ErrRangeFull) {
						rt.Fatalf("grow: %v", err)
					}
					if errors.Is(err, alloc.ErrOutOfMemory) {
						st.OOMs++
					}
					if a.Stats() != st || fmt.Sprint(a.Layout()) != fmt.Sprint(before) {
						rt.Fatalf("failed grow changed the allocator")
					}
					return
				}
				if b.Addr != old.Addr || b.Size != roundUp(n, g.GrowUnit()) || b.Handle != h {
					rt.Fatalf("grow of %+v to %d returned %+v", old, n, b)
				}
				live[h] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: n}
			},
			"grow-many": func(rt *rapid.T) {
				// Grows that need at most MaxAllocatable bytes together all
				// succeed (what kv/strategy's vmm:P relies on to grow every
				// sample of a sequence or none).
				var ids []alloc.Handle
				var sizes []int64
				var need int64
				for _, h := range hs {
					l, ok := live[h]
					if !ok {
						continue
					}
					n := l.Requested + rapid.Int64Range(0, 2*page).Draw(rt, "more")
					if n > g.MaxGrowSize() {
						continue
					}
					ids, sizes = append(ids, h), append(sizes, n)
					need += roundUp(n, g.GrowUnit()) - l.Size
				}
				if len(ids) == 0 || need > a.MaxAllocatable() {
					rt.Skip("nothing to grow within memory")
				}
				for i, h := range ids {
					b, err := a.Grow(h, sizes[i])
					if err != nil {
						rt.Fatalf("grow %d of %d (%d bytes needed in all, %d allocatable at the start): %v",
							i, len(ids), need, a.MaxAllocatable(), err)
					}
					live[h] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: sizes[i]}
				}
				if len(ids) >= 2 {
					together++
				}
			},
			"free": func(rt *rapid.T) {
				if len(live) == 0 {
					rt.Skip("nothing live")
				}
				h := rapid.SampledFrom(hs).Draw(rt, "which")
				if _, ok := live[h]; !ok {
					rt.Skip("freed")
				}
				if err := a.Free(h); err != nil {
					rt.Fatal(err)
				}
				delete(live, h)
			},
		})
	})
	if together == 0 {
		t.Fatal("no step grew several blocks together: the promise was never checked")
	}
}

// roundUp is n rounded up to a multiple of unit.
func roundUp(n, unit int64) int64 { return (n + unit - 1) / unit * unit }
