package registry_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
)

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"caching", []string{"caching"}},
		{"caching,vmm:2MiB", []string{"caching", "vmm:2MiB"}},
		{"caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB",
			[]string{"caching:expandable_segments:True,max_split_size_mb:128", "vmm:2MiB"}},
		{"all", registry.Names()},
		{" sizeclass:8MiB/64MiB , direct ", []string{"sizeclass:8MiB/64MiB", "direct"}},
		{"direct,tlsf", []string{"direct", "tlsf"}},
	} {
		got, err := registry.SplitList(tc.in)
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("SplitList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := registry.SplitList(" , "); !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("empty list: %v", err)
	}
}

func TestNew(t *testing.T) {
	dev := func() *mem.Device { return mem.MustDevice(mem.GiB, 0) }
	for _, k := range registry.Kinds {
		for _, s := range []string{k.Name, k.Example} {
			a, err := registry.New(s, dev())
			if err != nil {
				t.Errorf("New(%q): %v", s, err)
				continue
			}
			// Spec() must be accepted back by New (round trip).
			if _, err := registry.New(a.Spec(), dev()); err != nil {
				t.Errorf("New(%q).Spec() = %q does not parse: %v", s, a.Spec(), err)
			}
		}
	}
	for _, bad := range []string{"", "nope", "caching:bogus:1", "vmm:3", "sizeclass:big"} {
		if _, err := registry.New(bad, dev()); !errors.Is(err, alloc.ErrBadSpec) {
			t.Errorf("New(%q): %v, want ErrBadSpec", bad, err)
		}
	}
}

// FuzzAllocators decodes the input into a device and a sequence of
// operations and runs it through every allocator, checking the reference
// invariants after each operation (alloctest.Check). The first byte picks
// the device: odd is one of mem.MaxCapacity (the largest the model takes),
// even one of 512 MiB. Each op is then 3 bytes: kind, and a 16-bit argument
// (a size in 64 KiB units plus a few odd bytes; for kind 5 a huge size,
// math.MaxInt64 >> (arg % 64) less arg / 64 bytes; or which live block to
// free). The kind byte's top five bits pick one of 32 streams.
//
//	go test ./alloc/registry/ -run '^$' -fuzz FuzzAllocators -fuzztime 60s
func FuzzAllocators(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 2, 0, 1, 0, 0, 3, 0, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 16, 0, 0, 255, 1, 0, 0, 1, 1, 0, 0, 0, 32})
	f.Add([]byte{0, 0, 255, 255, 0, 1, 1, 2, 0, 0, 0, 7, 7, 1, 0, 0, 4, 0, 0})
	// The largest device, filled by one huge request, then requests that
	// near 2^63, on several streams.
	f.Add([]byte{1, 5, 0, 14, 0, 255, 255, 13, 0, 0, 5, 0, 1, 45, 0, 2, 2, 0, 0, 4, 0, 0, 5, 0, 12, 3, 0, 0})
	// Huge requests on a small device.
	f.Add([]byte{0, 5, 0, 0, 5, 0, 1, 5, 0, 63, 5, 1, 255, 0, 0, 9, 5, 0, 10})
	// Many streams: allocations on 32 streams, frees pending on each, a
	// sync, and allocations again.
	op := func(kind, stream int) byte { // the kind byte for an op on a stream
		for low := range 8 {
			if b := stream<<3 | low; b%6 == kind {
				return byte(b)
			}
		}
		panic("unreachable: 8 consecutive bytes cover every kind")
	}
	many := []byte{0}
	for st := range 32 {
		many = append(many, op(0, st), 0, byte(1+st))
	}
	for range 32 {
		many = append(many, 2, 0, 0)
	}
	many = append(many, 4, 0, 0)
	for st := range 32 {
		many = append(many, op(1, st), 0, byte(40-st))
	}
	f.Add(many)
	f.Add(append([]byte{1}, many[1:]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		capacity, other := 512*mem.MiB, 32*mem.MiB
		if data[0]%2 == 1 {
			capacity, other = mem.MaxCapacity, 0
		}
		data = data[1:]
		if len(data) > 3*400 {
			data = data[:3*400]
		}
		for _, k := range registry.Kinds {
			a, err := registry.New(k.Example, mem.MustDevice(capacity, other))
			if err != nil {
				t.Fatal(err)
			}
			live := map[alloc.Handle]alloctest.Live{}
			var hs []alloc.Handle
			for i := 0; i+2 < len(data); i += 3 {
				arg := int(data[i+1])<<8 | int(data[i+2])
				switch data[i] % 6 {
				case 0, 1, 5: // alloc
					size := int64(arg)*64*mem.KiB + int64(data[i+2]%7)*100 + 1
					if data[i]%6 == 5 {
						size = max(1, math.MaxInt64>>(arg%64)-int64(arg/64))
					}
					b, err := a.Alloc(size, int(data[i]>>3))
					if err != nil {
						if e := alloctest.CheckOOM(err, size); e != nil {
							t.Fatalf("%s: %v", k.Example, e)
						}
						continue
					}
					live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: size}
					hs = append(hs, b.Handle)
				case 2: // free
					if len(hs) == 0 {
						continue
					}
					j := arg % len(hs)
					if err := a.Free(hs[j]); err != nil {
						t.Fatalf("%s: free: %v", k.Example, err)
					}
					delete(live, hs[j])
					hs = append(hs[:j], hs[j+1:]...)
				case 3:
					a.EmptyCache()
				case 4:
					if s, ok := a.(alloc.Syncer); ok {
						s.Sync()
					}
				}
				if err := alloctest.Check(a, live); err != nil {
					t.Fatalf("%s after op %d: %v", k.Example, i/3, err)
				}
			}
			if err := alloctest.CheckMaxAllocatable(a); err != nil {
				t.Fatalf("%s: %v", k.Example, err)
			}
		}
	})
}

// TestSplitLists: the values of a repeated flag, each split as SplitList
// does, in order; the first bad value's error.
func TestSplitLists(t *testing.T) {
	got, err := registry.SplitLists([]string{"caching:expandable_segments:True,max_split_size_mb:128", "vmm:2MiB,arena"})
	want := []string{"caching:expandable_segments:True,max_split_size_mb:128", "vmm:2MiB", "arena"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SplitLists = %q, %v; want %q", got, err, want)
	}
	if _, err := registry.SplitLists([]string{"caching", " , "}); err == nil {
		t.Error("an empty list: no error")
	}
}
