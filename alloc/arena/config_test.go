package arena

import (
	"errors"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
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
		{"0.9", Config{Fraction: 0.9}, "0.9", false},
		{"0.8", Config{Fraction: 0.8}, "0.8", false},
		{"1", Config{Fraction: 1}, "1", false},
		{".25", Config{Fraction: 0.25}, "0.25", false},
		{"64GiB", Config{Size: 64 * mem.GiB}, "64GiB", false},
		{"512 MiB", Config{Size: 512 * mem.MiB}, "512MiB", false},
		{"1.5g", Config{Size: 3 * mem.GiB / 2}, "1.50GiB", false},
		{"20MB", Config{Size: 20_000_000}, "20000000B", false}, // not a whole number of KiB-based units
		{"4096B", Config{Size: 4096}, "4KiB", false},
		{"0", Config{}, "", true},
		{"-0.5", Config{}, "", true},
		{"1.01", Config{}, "", true},
		{"4096", Config{}, "", true}, // a size needs a unit
		{"NaN", Config{}, "", true},
		{"Inf", Config{}, "", true},
		{"0GiB", Config{}, "", true},
		{"-1GiB", Config{}, "", true},
		{"fraction", Config{}, "", true},
		{"0.9,64GiB", Config{}, "", true},
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

func TestValidate(t *testing.T) {
	for _, c := range []Config{{}, {Fraction: 1.5}, {Fraction: -1}, {Size: -5}} {
		if _, err := New(mem.MustDevice(mem.GiB, 0), c); !errors.Is(err, alloc.ErrBadSpec) {
			t.Errorf("New with %+v: %v, want ErrBadSpec", c, err)
		}
	}
}

func TestSpec(t *testing.T) {
	for _, tc := range []struct{ args, spec string }{
		{"", "arena"},
		{"0.9", "arena"},
		{"0.5", "arena:0.5"},
		{"64MiB", "arena:64MiB"},
		{"65MiB", "arena:65MiB"}, // the config, not the rounded pool size
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
	// 0.5 × 9 GiB = 4.5 GiB, a whole number of 2 MiB pages.
	if dev.Used() != 9*mem.GiB/2 || dev.RawAllocs() != 1 || a.Stats().Reserved != dev.Used() {
		t.Errorf("used %d raw allocs %d reserved %d", dev.Used(), dev.RawAllocs(), a.Stats().Reserved)
	}
	// Frees and OOMs never touch the device.
	b, _ := a.Alloc(mem.GiB, 0)
	_, err = a.Alloc(4*mem.GiB, 1)
	if !errors.Is(err, alloc.ErrOutOfMemory) {
		t.Fatalf("4 GiB on top of 1 GiB in a 4.5 GiB pool: %v", err)
	}
	var oe *alloc.OOMError
	if !errors.As(err, &oe) || oe.AllocSize != 4*mem.GiB || oe.Reserved != 9*mem.GiB/2 {
		t.Errorf("OOM error %+v", oe)
	}
	_ = a.Free(b.Handle)
	a.EmptyCache()
	if dev.Used() != 9*mem.GiB/2 || dev.RawAllocs() != 1 || dev.RawFrees() != 0 {
		t.Errorf("device changed: used %d allocs %d frees %d", dev.Used(), dev.RawAllocs(), dev.RawFrees())
	}
}
