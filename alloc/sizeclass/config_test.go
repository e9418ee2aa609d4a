package sizeclass

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64 // nil for a bad input (ErrBadSpec)
		str  string  // canonical String
	}{
		{"", DefaultClasses, "8MiB/64MiB/512MiB"},
		{"8MiB/64MiB/512MiB", DefaultClasses, "8MiB/64MiB/512MiB"},
		{" 8m / 64 MiB/0.5GiB ", DefaultClasses, "8MiB/64MiB/512MiB"},
		{"512", []int64{512}, "512B"},
		{"1.5MiB/1025KiB", nil, ""}, // not increasing
		{"512B/1536B/1049088", []int64{512, 1536, mem.MiB + 512}, "512B/1536B/1049088B"},
		{"1TiB", []int64{mem.TiB}, "1TiB"},
		{"2TiB", nil, ""},          // above MaxClass
		{"1000", nil, ""},          // not a multiple of 512
		{"0/8MiB", nil, ""},        // not positive
		{"8MiB/8MiB", nil, ""},     // not strictly increasing
		{"64MiB/8MiB", nil, ""},    // decreasing
		{"8MiB//64MiB", nil, ""},   // empty class
		{"8MiB,64MiB", nil, ""},    // wrong separator
		{"eight", nil, ""},         // not a size
		{"-512", nil, ""},          // negative
		{"9999999999TiB", nil, ""}, // overflows
	} {
		got, err := ParseConfig(tc.in)
		if tc.want == nil {
			if !errors.Is(err, alloc.ErrBadSpec) {
				t.Errorf("ParseConfig(%q) = %v, %v; want ErrBadSpec", tc.in, got.Classes, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got.Classes, tc.want) || got.String() != tc.str {
			t.Errorf("ParseConfig(%q) = %v (%q), %v; want %v (%q)", tc.in, got.Classes, got.String(), err, tc.want, tc.str)
			continue
		}
		if back, err := ParseConfig(got.String()); err != nil || !slices.Equal(back.Classes, got.Classes) {
			t.Errorf("ParseConfig(String()) of %v = %v, %v", got.Classes, back.Classes, err)
		}
	}
}

func TestParseConfigMessage(t *testing.T) {
	_, err := ParseConfig("8MiB/1000")
	if err == nil || err.Error() != "bad allocator spec: sizeclass class 2 (1000B) must be a multiple of 512 bytes" {
		t.Errorf("ParseConfig(\"8MiB/1000\") error %q", err)
	}
	_, err = ParseConfig("8MiB/x")
	if !errors.Is(err, mem.ErrBadSize) || !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("ParseConfig(\"8MiB/x\") = %v; want both ErrBadSpec and mem.ErrBadSize", err)
	}
}

func TestSlabGeometry(t *testing.T) {
	for _, tc := range []struct{ class, slots, bytes int64 }{
		{512, 4096, 2 * mem.MiB},
		{1536, 1365, 2 * mem.MiB}, // 1365 × 1.5 KiB = 2047.5 KiB: a 512 B tail
		{768 * mem.KiB, 2, 2 * mem.MiB},
		{mem.MiB, 2, 2 * mem.MiB},
		{mem.MiB + 512, 1, 2 * mem.MiB},
		{2 * mem.MiB, 1, 2 * mem.MiB},
		{3 * mem.MiB, 1, 4 * mem.MiB},
		{mem.TiB, 1, mem.TiB},
	} {
		if s, b := slabGeometry(tc.class); s != tc.slots || b != tc.bytes {
			t.Errorf("slabGeometry(%d) = %d slots, %d bytes; want %d, %d", tc.class, s, b, tc.slots, tc.bytes)
		}
	}
}

func TestWasteTable(t *testing.T) {
	// The default classes are whole pages: one slot per slab, no tail, and
	// the worst rounding is a request one byte above the class below.
	want := []ClassWaste{
		{Class: 8 * mem.MiB, SlotsPerSlab: 1, SlabBytes: 8 * mem.MiB, TailWaste: 0, MaxRoundingWaste: 8*mem.MiB - 1},
		{Class: 64 * mem.MiB, SlotsPerSlab: 1, SlabBytes: 64 * mem.MiB, TailWaste: 0, MaxRoundingWaste: 56*mem.MiB - 1},
		{Class: 512 * mem.MiB, SlotsPerSlab: 1, SlabBytes: 512 * mem.MiB, TailWaste: 0, MaxRoundingWaste: 448*mem.MiB - 1},
	}
	if got := WasteTable(Config{}); !slices.Equal(got, want) {
		t.Errorf("WasteTable(defaults) = %+v\nwant %+v", got, want)
	}
	// Design bound of the defaults: no tail, and rounding at most 7/8 of a
	// block beyond the first class.
	for _, r := range WasteTable(DefaultConfig())[1:] {
		if r.TailWaste != 0 || 8*r.MaxRoundingWaste > 7*r.Class {
			t.Errorf("class %d: tail %d, max rounding %d exceed the bound", r.Class, r.TailWaste, r.MaxRoundingWaste)
		}
	}
	// A class that does not fill its slab leaves a tail.
	got := WasteTable(Config{Classes: []int64{768 * mem.KiB, 3 * mem.MiB}})
	want = []ClassWaste{
		{Class: 768 * mem.KiB, SlotsPerSlab: 2, SlabBytes: 2 * mem.MiB, TailWaste: 512 * mem.KiB, MaxRoundingWaste: 768*mem.KiB - 1},
		{Class: 3 * mem.MiB, SlotsPerSlab: 1, SlabBytes: 4 * mem.MiB, TailWaste: mem.MiB, MaxRoundingWaste: 3*mem.MiB - 768*mem.KiB - 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("WasteTable(768KiB/3MiB) = %+v\nwant %+v", got, want)
	}
}

func TestClassFor(t *testing.T) {
	a, err := New(mem.MustDevice(mem.GiB, 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size int64
		want int
	}{
		{1, 0}, {8 * mem.MiB, 0}, {8*mem.MiB + 1, 1}, {64 * mem.MiB, 1},
		{64*mem.MiB + 1, 2}, {512 * mem.MiB, 2}, {512*mem.MiB + 1, -1}, {math.MaxInt64, -1},
	} {
		if got := a.classFor(tc.size); got != tc.want {
			t.Errorf("classFor(%d) = %d; want %d", tc.size, got, tc.want)
		}
	}
}

func TestNewRefusesUsedDeviceAndBadConfig(t *testing.T) {
	dev := mem.MustDevice(mem.GiB, 0)
	if _, err := New(dev, Config{Classes: []int64{100}}); !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("New with a 100-byte class: %v; want ErrBadSpec", err)
	}
	dev.Reserve(mem.PageSize)
	if _, err := New(dev, Config{}); !errors.Is(err, mem.ErrConfig) {
		t.Errorf("New on a device in use: %v; want mem.ErrConfig", err)
	}
}

func TestNewCopiesClasses(t *testing.T) {
	classes := []int64{mem.MiB, 2 * mem.MiB}
	a, err := New(mem.MustDevice(mem.GiB, 0), Config{Classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	classes[0] = 512
	if a.Spec() != "sizeclass:1MiB/2MiB" {
		t.Errorf("spec %q changed with the caller's slice", a.Spec())
	}
}

func TestHugeRequestIsOOM(t *testing.T) {
	a, _ := New(mem.MustDevice(mem.GiB, 0), Config{})
	_, err := a.Alloc(math.MaxInt64, 0)
	var oe *alloc.OOMError
	if !errors.As(err, &oe) || oe.AllocSize != math.MaxInt64 {
		t.Fatalf("Alloc(MaxInt64) = %v; want an OOMError", err)
	}
}
