package registry_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/mem"
)

// hugeSpecs are every allocator with its defaults and its example
// settings, plus the settings whose arithmetic scales with the capacity or
// the request: expandable segments (9/8 of the capacity of address space),
// a memory fraction, garbage collection, an arena of a fixed size.
func hugeSpecs() []string {
	var out []string
	for _, k := range registry.Kinds {
		out = append(out, k.Name, k.Example)
	}
	return append(out,
		"caching:expandable_segments:True",
		"caching:per_process_memory_fraction:0.5,garbage_collection_threshold:0.5",
		"caching:roundup_power2_divisions:4,max_split_size_mb:"+fmt.Sprint(int64(1)<<40),
		"arena:1PiB", "async:release_threshold:max", "vmm:1GiB")
}

// hugeSizes are requests at and past every boundary where a size could
// overflow: near 2^63 (rounding up to 512 B, 2 MiB, a size class or a
// power-of-two division wraps there), the device limit and around it.
var hugeSizes = []int64{
	math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 511, math.MaxInt64 - mem.PageSize,
	math.MaxInt64/2 + 1, math.MaxInt64 / 8 * 7, 1 << 62, 1 << 61,
	mem.MaxCapacity * 2, mem.MaxCapacity + 1, mem.MaxCapacity, mem.MaxCapacity - 1,
	mem.MaxCapacity / 8 * 7, mem.MaxCapacity / 2,
}

// TestHugeCapacityAndSizes builds every allocator on a device of
// mem.MaxCapacity, fills it partly, then asks for each of hugeSizes. Every
// answer must be a block or an out-of-memory error, never a panic or a
// wrapped size, and the allocator must stay consistent (alloctest.Check,
// MaxAllocatable served exactly) and usable for small requests after.
func TestHugeCapacityAndSizes(t *testing.T) {
	for _, s := range hugeSpecs() {
		t.Run(s, func(t *testing.T) {
			for _, other := range []int64{0, mem.MaxCapacity - 64*mem.MiB} {
				a, err := registry.New(s, mem.MustDevice(mem.MaxCapacity, other))
				if err != nil {
					if strings.HasPrefix(s, "arena:1PiB") && other > 0 {
						continue // a 1 PiB arena does not fit beside 1 PiB − 64 MiB of other use
					}
					t.Fatalf("New on a %s device: %v", mem.FormatBytes(mem.MaxCapacity), err)
				}
				live := map[alloc.Handle]alloctest.Live{}
				alloc1 := func(size int64, stream int) {
					t.Helper()
					b, err := a.Alloc(size, stream)
					if err != nil {
						if e := alloctest.CheckOOM(err, size); e != nil {
							t.Fatalf("Alloc(%d): %v", size, e)
						}
					} else {
						if b.Size < size {
							t.Fatalf("Alloc(%d) returned %d bytes", size, b.Size)
						}
						live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: size}
					}
					if err := alloctest.Check(a, live); err != nil {
						t.Fatalf("after Alloc(%d): %v", size, err)
					}
				}
				alloc1(mem.MiB, 0)
				alloc1(3*mem.MiB+1, 1)
				for _, size := range hugeSizes {
					alloc1(size, 0)
					alloc1(size, 7)
				}
				if err := alloctest.CheckMaxAllocatable(a); err != nil {
					t.Fatal(err)
				}
				for h := range live {
					if err := a.Free(h); err != nil {
						t.Fatal(err)
					}
					delete(live, h)
				}
				a.EmptyCache()
				if sy, ok := a.(alloc.Syncer); ok {
					sy.Sync()
				}
				alloc1(mem.MiB, 0)
				if err := alloctest.CheckMaxAllocatable(a); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestCapacityLimit: a device above mem.MaxCapacity cannot be built, and
// the error names both figures, so "replay --capacity 8EiB" says what the
// limit is instead of panicking in an allocator.
func TestCapacityLimit(t *testing.T) {
	_, err := mem.NewDevice(mem.MaxCapacity+1, 0)
	if !errors.Is(err, mem.ErrConfig) || !strings.Contains(err.Error(), "1024TiB") {
		t.Fatalf("NewDevice above the limit: %v", err)
	}
	for _, s := range hugeSpecs() {
		if _, err := registry.New(s, mem.MustDevice(mem.MaxCapacity, 0)); err != nil && !strings.HasPrefix(s, "arena:") {
			t.Errorf("New(%q) at the limit: %v", s, err)
		}
	}
}

// TestAddressSpaceExhaustion allocates and frees requests of a whole
// mem.MaxCapacity device, with an empty_cache after each, past the point
// where the 64-bit virtual address space is used up for the allocators
// that take a fresh range per request or segment (16,383 of them): past
// that point the allocators that give their ranges back (direct, vmm) go
// on with those, the others' requests fail as out of memory, every
// allocator stays consistent, and nothing panics.
func TestAddressSpaceExhaustion(t *testing.T) {
	if testing.Short() || invariants.Enabled {
		t.Skip("17,000 allocations per allocator, each self-checked under invariants")
	}
	for _, s := range hugeSpecs() {
		t.Run(s, func(t *testing.T) {
			a, err := registry.New(s, mem.MustDevice(mem.MaxCapacity, 0))
			if err != nil {
				t.Skip(err) // arena:1PiB: New itself needs the device's whole VA of its size
			}
			size := mem.MaxCapacity
			ooms := 0
			for i := range 17000 {
				b, err := a.Alloc(size, i%3)
				if err != nil {
					if e := alloctest.CheckOOM(err, size); e != nil {
						t.Fatalf("alloc %d: %v", i, e)
					}
					ooms++
					continue
				}
				if err := a.Free(b.Handle); err != nil {
					t.Fatal(err)
				}
				a.EmptyCache()
			}
			if err := alloctest.Check(a, map[alloc.Handle]alloctest.Live{}); err != nil {
				t.Fatal(err)
			}
			// direct and vmm take a range per request and give it back:
			// 2^64 bytes hold 16,383 of 1 PiB above the first address,
			// and the rest reuse them.
			if k := strings.Split(s, ":")[0]; (k == "direct" || k == "vmm") && ooms != 0 {
				t.Errorf("%s: %d out of memory past the end of the fresh address space, want 0 (the ranges given back are reused)", s, ooms)
			}
		})
	}
}

// TestManyStreams gives every allocator 70,000 streams, one small block
// each, then frees them all: more streams than the caching allocator's
// former 16-bit stream index held (it panicked at 65,537), and enough that
// a cost per operation in proportion to the stream count (the async pool's
// former per-stream sets) would take minutes. Every block must be served
// and the allocator consistent after.
func TestManyStreams(t *testing.T) {
	longtest.Skip(t)
	n := 70000
	if testing.Short() || invariants.Enabled {
		// Self-checks after every operation cost O(blocks) each.
		n = 100
	}
	for _, k := range registry.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			a, err := registry.New(k.Name, mem.MustDevice(mem.TiB, 0))
			if err != nil {
				t.Fatal(err)
			}
			live := map[alloc.Handle]alloctest.Live{}
			for st := range n {
				b, err := a.Alloc(512, st)
				if err != nil {
					t.Fatalf("stream %d: %v", st, err)
				}
				live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: 512}
			}
			if err := alloctest.Check(a, live); err != nil {
				t.Fatal(err)
			}
			for h := range live {
				if err := a.Free(h); err != nil {
					t.Fatal(err)
				}
				delete(live, h)
			}
			if sy, ok := a.(alloc.Syncer); ok {
				sy.Sync()
			}
			a.EmptyCache()
			if err := alloctest.Check(a, live); err != nil {
				t.Fatal(err)
			}
		})
	}
}
