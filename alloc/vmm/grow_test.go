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

// TestGrowScripts runs the commented Grow scenarios in testdata/grow. They
// cannot go through alloctest.RunScripts: a hook there sees neither the
// script's ids nor the reference model, and a Grow changes the block's size,
// which the reference must learn. So this is a small runner of its own, with
// the same commands plus
//
//	grow id=a size=6MiB    Grow; prints the block or the error
//	map-ops                MapOps and UnmapOps
//
// and the same checks (alloctest.Check) after every command. Rerun with
// -rewrite to regenerate the output.
func TestGrowScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/grow", func(t *testing.T, path string) {
		var a *Allocator
		ids := map[string]alloc.Handle{}
		live := map[alloc.Handle]alloctest.Live{}
		size := func(td *datadriven.TestData, key string) int64 {
			var s string
			td.ScanArgs(t, key, &s)
			n, err := mem.ParseBytes(s)
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return n
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := func() string {
				if td.Cmd == "init" {
					var other int64
					if td.HasArg("other") {
						other = size(td, "other")
					}
					var spec string
					td.MaybeScanArgs(t, "spec", &spec)
					cfg, err := ParseConfig(spec)
					if err != nil {
						return "error: " + err.Error()
					}
					a, err = New(mem.MustDevice(size(td, "capacity"), other), cfg)
					if err != nil {
						return "error: " + err.Error()
					}
					clear(ids)
					clear(live)
					return "ok"
				}
				if a == nil {
					td.Fatalf(t, "%s before init", td.Cmd)
				}
				var id string
				if td.HasArg("id") {
					td.ScanArgs(t, "id", &id)
				}
				switch td.Cmd {
				case "alloc", "grow":
					n := size(td, "size")
					var b alloc.Block
					var err error
					if td.Cmd == "alloc" {
						stream := 0
						td.MaybeScanArgs(t, "stream", &stream)
						b, err = a.Alloc(n, stream)
					} else {
						b, err = a.Grow(ids[id], n)
					}
					if err != nil {
						return "error: " + err.Error()
					}
					ids[id] = b.Handle
					live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: n}
					return fmt.Sprintf("%s: %s size=%s", id, mem.FormatAddr(b.Addr), mem.FormatBytes(b.Size))
				case "free":
					if err := a.Free(ids[id]); err != nil {
						return "error: " + err.Error()
					}
					delete(live, ids[id])
					delete(ids, id)
					return "ok"
				case "layout":
					return a.Layout().String()
				case "stats":
					return a.Stats().String()
				case "max-allocatable":
					if err := alloctest.CheckMaxAllocatable(a); err != nil {
						td.Fatalf(t, "%v", err)
					}
					return mem.FormatBytes(a.MaxAllocatable())
				case "map-ops":
					return fmt.Sprintf("map=%d unmap=%d", a.MapOps(), a.UnmapOps())
				}
				td.Fatalf(t, "unknown command %q", td.Cmd)
				return ""
			}()
			if a != nil {
				if err := alloctest.Check(a, live); err != nil {
					td.Fatalf(t, "after %q: %v", td.Cmd, err)
				}
			}
			return out
		})
	})
}

// TestGrowProperties mixes Alloc, Grow and Free at random and checks after
// every step that the layout matches the reference, that a successful Grow
// keeps the address and covers the new size, and that a failed Grow changes
// nothing but the OOM count.
func TestGrowProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		page := rapid.SampledFrom([]int64{MinPage, 192 * mem.KiB, DefaultPage}).Draw(rt, "page")
		maxRange := page * rapid.Int64Range(1, 64).Draw(rt, "range_pages")
		capacity := rapid.Int64Range(16, 256).Draw(rt, "capacity_2mib") * mem.PageSize
		a, err := New(mem.MustDevice(capacity, 0), Config{Page: page, MaxRange: maxRange})
		if err != nil {
			rt.Fatal(err)
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
				b, err := a.Grow(h, n)
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
				if b.Addr != old.Addr || b.Size < n || b.Handle != h {
					rt.Fatalf("grow of %+v to %d returned %+v", old, n, b)
				}
				live[h] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: n}
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
}
