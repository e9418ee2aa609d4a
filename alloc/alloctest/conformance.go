package alloctest

import (
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// New builds the allocator under test on a fresh device.
type New func(dev *mem.Device) (alloc.Allocator, error)

// op is one recorded operation, replayed for the determinism check.
type op struct {
	kind   string // alloc, free, empty, sync, reloc
	size   int64
	stream int
	idx    int    // alloc index freed or moved
	dst    uint64 // relocation destination
}

// Conformance runs the property suite against the allocator built by newA.
// Devices are drawn between 64 MiB and 1 GiB so that out-of-memory paths are
// exercised; request sizes mix small (≤ 1 MiB), medium (≤ 24 MiB) and large
// (≤ 160 MiB) requests on two streams. A failing case is shrunk by rapid and
// can be replayed with -rapid.seed (and is saved under testdata/rapid).
func Conformance(t *testing.T, newA New) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.Int64Range(32, 512).Draw(rt, "capacity_2mib") * mem.PageSize
		other := rapid.Int64Range(0, capacity/mem.PageSize/4).Draw(rt, "other_2mib") * mem.PageSize
		dev := mem.MustDevice(capacity, other)
		a, err := newA(dev)
		if err != nil {
			rt.Fatalf("new: %v", err)
		}
		live := map[alloc.Handle]Live{}
		var handles []alloc.Handle // by alloc index; 0 once freed or failed
		var freed []alloc.Handle
		var ops []op

		size := rapid.OneOf(
			rapid.Int64Range(1, mem.MiB),
			rapid.Int64Range(mem.MiB+1, 24*mem.MiB),
			rapid.Int64Range(24*mem.MiB, 160*mem.MiB),
			rapid.SampledFrom([]int64{512, mem.MiB, 2 * mem.MiB, 10 * mem.MiB, 20 * mem.MiB, 64 * mem.MiB}),
		)
		liveIdx := func() []int {
			var idx []int
			for i, h := range handles {
				if h != 0 {
					idx = append(idx, i)
				}
			}
			return idx
		}
		unchanged := func(rt *rapid.T, what string, f func()) {
			before, bs := a.Layout(), a.Stats()
			f()
			if after, as := a.Layout(), a.Stats(); !reflect.DeepEqual(before, after) || bs != as {
				rt.Fatalf("%s changed the allocator", what)
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				if err := Check(a, live); err != nil {
					rt.Fatal(err)
				}
			},
			"alloc": func(rt *rapid.T) {
				s := size.Draw(rt, "size")
				st := rapid.IntRange(0, 1).Draw(rt, "stream")
				ops = append(ops, op{kind: "alloc", size: s, stream: st})
				b, err := a.Alloc(s, st)
				if err != nil {
					if e := CheckOOM(err, s); e != nil {
						rt.Fatal(e)
					}
					handles = append(handles, 0)
					return
				}
				if b.Size < s {
					rt.Fatalf("alloc(%d) returned %d bytes", s, b.Size)
				}
				handles = append(handles, b.Handle)
				live[b.Handle] = Live{Addr: b.Addr, Size: b.Size, Requested: s}
			},
			"free": func(rt *rapid.T) {
				idx := liveIdx()
				if len(idx) == 0 {
					rt.Skip("nothing live")
				}
				i := rapid.SampledFrom(idx).Draw(rt, "which")
				h := handles[i]
				if err := a.Free(h); err != nil {
					rt.Fatalf("free of live handle: %v", err)
				}
				ops = append(ops, op{kind: "free", idx: i})
				delete(live, h)
				handles[i] = 0
				freed = append(freed, h)
			},
			"double_free": func(rt *rapid.T) {
				if len(freed) == 0 {
					rt.Skip("nothing freed")
				}
				h := rapid.SampledFrom(freed).Draw(rt, "freed")
				if _, ok := live[h]; ok { // the slot was not reused with the same generation
					rt.Fatalf("freed handle %x is live again", h)
				}
				unchanged(rt, "double free", func() {
					if err := a.Free(h); !errors.Is(err, alloc.ErrInvalidHandle) {
						rt.Fatalf("double free: got %v, want ErrInvalidHandle", err)
					}
				})
			},
			"foreign_free": func(rt *rapid.T) {
				h := alloc.Handle(rapid.Uint64().Draw(rt, "handle"))
				if _, ok := live[h]; ok {
					rt.Skip("drew a live handle")
				}
				unchanged(rt, "foreign free", func() {
					if err := a.Free(h); !errors.Is(err, alloc.ErrInvalidHandle) {
						rt.Fatalf("foreign free: got %v, want ErrInvalidHandle", err)
					}
				})
			},
			"bad_size": func(rt *rapid.T) {
				s := rapid.Int64Range(-mem.MiB, 0).Draw(rt, "bad")
				unchanged(rt, "bad size", func() {
					if _, err := a.Alloc(s, 0); !errors.Is(err, alloc.ErrInvalidSize) {
						rt.Fatalf("alloc(%d): got %v, want ErrInvalidSize", s, err)
					}
				})
			},
			"empty_cache": func(rt *rapid.T) {
				a.EmptyCache()
				ops = append(ops, op{kind: "empty"})
			},
			"sync": func(rt *rapid.T) {
				if s, ok := a.(alloc.Syncer); ok {
					s.Sync()
					ops = append(ops, op{kind: "sync"})
				}
			},
			"relocate": func(rt *rapid.T) {
				r, ok := a.(alloc.Relocator)
				idx := liveIdx()
				if !ok || len(idx) == 0 {
					rt.Skip("no relocation")
				}
				i := rapid.SampledFrom(idx).Draw(rt, "which")
				h := handles[i]
				// Candidate destinations: starts of free blocks and a few
				// arbitrary (often invalid) addresses.
				l := a.Layout()
				var cands []uint64
				for _, s := range l.Segments {
					for _, b := range s.Blocks {
						if b.State == mem.Free {
							cands = append(cands, b.Addr, b.Addr+512)
						}
					}
				}
				cands = append(cands, live[h].Addr+1, 0)
				sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
				dst := rapid.SampledFrom(cands).Draw(rt, "dst")
				before, bs := a.Layout(), a.Stats()
				nb, err := r.Relocate(h, dst)
				if err != nil {
					if !errors.Is(err, alloc.ErrBadMove) {
						rt.Fatalf("relocate: %v, want nil or ErrBadMove", err)
					}
					if after, as := a.Layout(), a.Stats(); !reflect.DeepEqual(before, after) || bs != as {
						rt.Fatalf("failed relocation changed the allocator")
					}
					return
				}
				if nb.Addr != dst || nb.Handle != h {
					rt.Fatalf("relocate to %#x returned %+v", dst, nb)
				}
				old := live[h]
				live[h] = Live{Addr: nb.Addr, Size: nb.Size, Requested: old.Requested}
				ops = append(ops, op{kind: "reloc", idx: i, dst: dst})
			},
			"max_allocatable": func(rt *rapid.T) {
				if err := CheckMaxAllocatable(a); err != nil {
					rt.Fatal(err)
				}
			},
		})

		// Determinism: the same operations on a fresh allocator give the
		// same layout and stats.
		b, err := newA(mem.MustDevice(capacity, other))
		if err != nil {
			rt.Fatal(err)
		}
		var hs []alloc.Handle
		for _, o := range ops {
			switch o.kind {
			case "alloc":
				blk, err := b.Alloc(o.size, o.stream)
				if err != nil {
					blk.Handle = 0
				}
				hs = append(hs, blk.Handle)
			case "free":
				if err := b.Free(hs[o.idx]); err != nil {
					rt.Fatalf("replay free: %v", err)
				}
			case "empty":
				b.EmptyCache()
			case "sync":
				b.(alloc.Syncer).Sync()
			case "reloc":
				if _, err := b.(alloc.Relocator).Relocate(hs[o.idx], o.dst); err != nil {
					rt.Fatalf("replay relocate: %v", err)
				}
			}
		}
		if !reflect.DeepEqual(a.Layout(), b.Layout()) || a.Stats() != b.Stats() {
			rt.Fatalf("replay differs:\n%s\nvs\n%s", a.Layout().String(), b.Layout().String())
		}
	})
}
