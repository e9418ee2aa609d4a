package buddy

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Config
		str  string // Config.String(), which must parse back to want
		bad  bool
	}{
		{"", DefaultConfig(), "0.9", false},
		{"  ", DefaultConfig(), "0.9", false},
		{"0.9", DefaultConfig(), "0.9", false},
		{"0.8", Config{Fraction: 0.8, Min: 512}, "0.8", false},
		{"1", Config{Fraction: 1, Min: 512}, "1", false},
		{"64GiB", Config{Size: 64 * mem.GiB, Min: 512}, "64GiB", false},
		{"20MB", Config{Size: 20_000_000, Min: 512}, "20000000B", false},
		{"0.9,min:4KiB", Config{Fraction: 0.9, Min: 4 * mem.KiB}, "0.9,min:4KiB", false},
		{" 0.5 , MIN: 2MiB ", Config{Fraction: 0.5, Min: 2 * mem.MiB}, "0.5,min:2MiB", false},
		{"min:1GiB", Config{Fraction: 0.9, Min: mem.GiB}, "0.9,min:1GiB", false},
		{"64GiB,min:512B", Config{Size: 64 * mem.GiB, Min: 512}, "64GiB", false},
		{"min:1PiB", Config{Fraction: 0.9, Min: mem.MaxCapacity}, "0.9,min:1024TiB", false},
		{"min:4096", Config{Fraction: 0.9, Min: 4 * mem.KiB}, "0.9,min:4KiB", false}, // a bare min is bytes
		{"0", Config{}, "", true},
		{"1.01", Config{}, "", true},
		{"NaN", Config{}, "", true},
		{"4096", Config{}, "", true}, // a size needs a unit
		{"-1GiB", Config{}, "", true},
		{"0GiB", Config{}, "", true},
		{"min:1000", Config{}, "", true},                                             // not a multiple of 512 B
		{"min:3KiB", Config{Fraction: 0.9, Min: 3 * mem.KiB}, "0.9,min:3KiB", false}, // blocks of 3 KiB × 2^k
		{"min:256B", Config{}, "", true},                                             // below 512 B
		{"min:2PiB", Config{}, "", true},                                             // above the largest device
		{"min:", Config{}, "", true},                                                 // empty value
		{"min:4KiB,0.9", Config{}, "", true},
		{"0.9,0.8", Config{}, "", true},
		{"0.9,min:4KiB,min:4KiB", Config{}, "", true},
		{"0.9,,min:4KiB", Config{}, "", true},
		{"0.9,max_split_size_mb:128", Config{}, "", true},
		{",", Config{}, "", true},
	} {
		got, err := ParseConfig(tc.in)
		if tc.bad {
			if !errors.Is(err, alloc.ErrBadSpec) {
				t.Errorf("ParseConfig(%q) = %+v, %v; want ErrBadSpec", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if s := got.String(); s != tc.str {
			t.Errorf("%+v.String() = %q, want %q", got, s, tc.str)
		}
		if back, err := ParseConfig(got.String()); err != nil || back != got {
			t.Errorf("round trip of %+v through %q gave %+v, %v", got, got.String(), back, err)
		}
	}
}

// TestErrorsQuoteLittle: a long argument is cut in the message, so a spec
// from a file never echoes a whole value.
func TestErrorsQuoteLittle(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, in := range []string{long, "0.9,min:" + long, "0.9," + long + ":1", "0.9," + long} {
		_, err := ParseConfig(in)
		if !errors.Is(err, alloc.ErrBadSpec) || len(err.Error()) > 400 {
			t.Errorf("ParseConfig of %d bytes: %d-byte error %.100q", len(in), len(err.Error()), err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{}, {Fraction: 1.5}, {Fraction: -1}, {Size: -5}, {Fraction: math.NaN()},
		{Fraction: 0.5, Min: 1000}, {Fraction: 0.5, Min: 256}, {Fraction: 0.5, Min: -512}} {
		if _, err := New(mem.MustDevice(mem.GiB, 0), c); !errors.Is(err, alloc.ErrBadSpec) {
			t.Errorf("New with %+v: %v, want ErrBadSpec", c, err)
		}
	}
	// Min 0 means the default.
	a, err := New(mem.MustDevice(mem.GiB, 0), Config{Fraction: 0.9})
	if err != nil || a.Config() != DefaultConfig() || a.Spec() != Name {
		t.Errorf("New with Min 0: %v, config %+v, spec %q", err, a.Config(), a.Spec())
	}
}

func TestSpec(t *testing.T) {
	for _, tc := range []struct{ args, spec string }{
		{"", "buddy"},
		{"0.9", "buddy"},
		{"0.9,min:512B", "buddy"},
		{"0.5", "buddy:0.5"},
		{"min:4KiB", "buddy:0.9,min:4KiB"},
		{"64MiB", "buddy:64MiB"},
		{"65MiB,min:1MiB", "buddy:65MiB,min:1MiB"}, // the config, not the rounded pool size
	} {
		a, err := FromSpec(mem.MustDevice(mem.GiB, 0), tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Spec(); got != tc.spec {
			t.Errorf("FromSpec(%q).Spec() = %q, want %q", tc.args, got, tc.spec)
		}
	}
}

func TestPoolIsOneRawAllocation(t *testing.T) {
	dev := mem.MustDevice(10*mem.GiB, 1*mem.GiB)
	a, err := New(dev, Config{Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 × 9 GiB = 4.5 GiB: top-level blocks of 4 GiB and 512 MiB.
	if dev.Used() != 9*mem.GiB/2 || dev.RawAllocs() != 1 || a.Stats().Reserved != dev.Used() {
		t.Errorf("used %d raw allocs %d reserved %d", dev.Used(), dev.RawAllocs(), a.Stats().Reserved)
	}
	if got := a.TopBlocks(); len(got) != 2 || got[0] != 4*mem.GiB || got[1] != 512*mem.MiB {
		t.Errorf("top-level blocks %v", got)
	}
	// Frees and OOMs never touch the device.
	b, _ := a.Alloc(mem.GiB, 0)
	_, err = a.Alloc(3*mem.GiB, 1)
	var oe *alloc.OOMError
	if !errors.As(err, &oe) || oe.AllocSize != 4*mem.GiB || oe.Requested != 3*mem.GiB || oe.Reserved != 9*mem.GiB/2 {
		t.Errorf("3 GiB beside 1 GiB in a 4 GiB block: %v (%+v)", err, oe)
	}
	_ = a.Free(b.Handle)
	a.EmptyCache()
	if dev.Used() != 9*mem.GiB/2 || dev.RawAllocs() != 1 || dev.RawFrees() != 0 {
		t.Errorf("device changed: used %d allocs %d frees %d", dev.Used(), dev.RawAllocs(), dev.RawFrees())
	}
	if a.Stats().OOMs != 1 {
		t.Errorf("OOMs %d, want 1", a.Stats().OOMs)
	}
}

// TestHugeRequests: on the largest device, with and without other use,
// requests past the pool and near 2^63 are out-of-memory errors naming a
// block at least their size, never a panic or a wrapped size, and the
// allocator stays consistent (alloctest.Check) and serves MaxAllocatable.
func TestHugeRequests(t *testing.T) {
	whole, err := New(mem.MustDevice(mem.MaxCapacity, 0), Config{Fraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if whole.PoolSize() != mem.MaxCapacity || whole.MaxAllocatable() != mem.MaxCapacity {
		t.Fatalf("pool %d, max allocatable %d", whole.PoolSize(), whole.MaxAllocatable())
	}
	for _, other := range []int64{0, mem.MaxCapacity - 64*mem.MiB} {
		for _, args := range []string{"", "1", "0.9,min:4KiB", "1,min:1PiB"} {
			a, err := FromSpec(mem.MustDevice(mem.MaxCapacity, other), args)
			if err != nil {
				if args == "1,min:1PiB" && other > 0 {
					continue // a 1 PiB block does not fit beside other use
				}
				t.Fatalf("%q, other %d: %v", args, other, err)
			}
			live := map[alloc.Handle]alloctest.Live{}
			for _, size := range []int64{mem.MiB, math.MaxInt64, math.MaxInt64 - 511, 1<<62 + 1, 1 << 62,
				mem.MaxCapacity + 1, mem.MaxCapacity, mem.MaxCapacity / 2, 3*mem.MiB + 1} {
				b, err := a.Alloc(size, 3)
				var oe *alloc.OOMError
				switch {
				case err == nil:
					live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: size}
				case !errors.As(err, &oe) || oe.Requested != size || oe.AllocSize < size:
					t.Fatalf("%q: Alloc(%d): %v (%+v)", args, size, err, oe)
				}
				if err := alloctest.Check(a, live); err != nil {
					t.Fatalf("%q: after Alloc(%d): %v", args, size, err)
				}
			}
			if err := alloctest.CheckMaxAllocatable(a); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FuzzParseConfig: no input panics, and every accepted config prints in a
// form that parses back to it, builds an allocator on a small and on the
// largest device (or fails with ErrBadSpec when its pool rounds to
// nothing), and serves or refuses a small and a huge request.
//
//	go test ./alloc/buddy/ -run '^$' -fuzz FuzzParseConfig -fuzztime 20s
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "0.9", "64GiB", "0.5,min:4KiB", "min:2MiB", "1,min:1PiB", "0.9,min:3KiB",
		"min:4KiB,0.5", ",", "0.9,,", "NaN", "1e-300", "0x1p-3", "min:-1", "0.9,min:1e3B", "9223372036854775807B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(s)
		if err != nil {
			if !errors.Is(err, alloc.ErrBadSpec) {
				t.Fatalf("ParseConfig(%q): %v, want ErrBadSpec", s, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig(%q) accepted %+v: %v", s, c, err)
		}
		if back, err := ParseConfig(c.String()); err != nil || back != c {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, c, c.String(), back, err)
		}
		for _, capacity := range []int64{mem.GiB, mem.MaxCapacity} {
			a, err := New(mem.MustDevice(capacity, 0), c)
			if err != nil {
				if !errors.Is(err, alloc.ErrBadSpec) {
					t.Fatalf("New with %q: %v", s, err)
				}
				continue
			}
			for _, size := range []int64{1, 3 * mem.MiB, capacity, math.MaxInt64} {
				if _, err := a.Alloc(size, 0); err != nil && !errors.Is(err, alloc.ErrOutOfMemory) {
					t.Fatalf("%q: Alloc(%d): %v", s, size, err)
				}
			}
			if err := a.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
