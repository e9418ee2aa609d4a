package vmm

import (
	"errors"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Config // zero for a bad input (ErrBadSpec)
		str  string // canonical String
	}{
		{"", DefaultConfig(), "2MiB"},
		{"2MiB", DefaultConfig(), "2MiB"},
		{" 64KiB ", Config{Page: 64 * mem.KiB, MaxRange: DefaultMaxRange}, "64KiB"},
		{"page:128KiB", Config{Page: 128 * mem.KiB, MaxRange: DefaultMaxRange}, "128KiB"},
		{"1GiB", Config{Page: mem.GiB, MaxRange: DefaultMaxRange}, "1GiB"},
		{"2112KiB", Config{Page: 2112 * mem.KiB, MaxRange: 64*mem.GiB - 64*mem.GiB%(2112*mem.KiB)}, "2112KiB"}, // largest multiple ≤ 64 GiB
		{"64KiB,max_range:16GiB", Config{Page: 64 * mem.KiB, MaxRange: 16 * mem.GiB}, "64KiB,max_range:16GiB"},
		{"max_range:4MiB", Config{Page: DefaultPage, MaxRange: 4 * mem.MiB}, "2MiB,max_range:4MiB"},
		{"2112KiB,max_range:2112KiB", Config{Page: 2112 * mem.KiB, MaxRange: 2112 * mem.KiB}, "2112KiB,max_range:2112KiB"},
		{"32KiB", Config{}, ""},                 // below 64 KiB
		{"96KiB", Config{}, ""},                 // not a multiple of 64 KiB
		{"2GiB", Config{}, ""},                  // above 1 GiB
		{"0", Config{}, ""},                     // not positive
		{"2MiB,64KiB", Config{}, ""},            // bare size not first
		{"2MiB,page:64KiB", Config{}, ""},       // page twice
		{"2MiB,", Config{}, ""},                 // empty setting
		{"granule:2MiB", Config{}, ""},          // unknown key
		{"two", Config{}, ""},                   // not a size
		{"2MiB,max_range:3MiB", Config{}, ""},   // not a multiple of the page
		{"2MiB,max_range:1MiB", Config{}, ""},   // below the page
		{"2MiB,max_range:256TiB", Config{}, ""}, // above 128 TiB
		{"64KiB,max_range:-1GiB", Config{}, ""}, // negative
	} {
		got, err := ParseConfig(tc.in)
		if tc.want == (Config{}) {
			if !errors.Is(err, alloc.ErrBadSpec) {
				t.Errorf("ParseConfig(%q) = %+v, %v; want ErrBadSpec", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseConfig(%q) = %+v (%q), %v; want %+v (%q)", tc.in, got, got.String(), err, tc.want, tc.str)
			continue
		}
		if back, err := ParseConfig(got.String()); err != nil || back != got {
			t.Errorf("ParseConfig(String()) of %+v = %+v, %v", got, back, err)
		}
	}
}

func TestFormatExact(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{64 * mem.KiB, "64KiB"},
		{2 * mem.MiB, "2MiB"},
		{2*mem.MiB + 64*mem.KiB, "2112KiB"}, // mem.FormatBytes would print 2.06MiB
		{64 * mem.GiB, "64GiB"},
		{128 * mem.TiB, "128TiB"},
		{512, "512B"},
		{0, "0B"},
	} {
		if got := formatExact(tc.in); got != tc.want {
			t.Errorf("formatExact(%d) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestPagesFor(t *testing.T) {
	a, _ := New(mem.MustDevice(mem.GiB, 0), Config{Page: MinPage})
	for _, tc := range []struct{ in, want int64 }{
		{1, 1},
		{MinPage, 1},
		{MinPage + 1, 2},
		{3 * mem.MiB, 48},
		{math.MaxInt64, math.MaxInt64/MinPage + 1},
	} {
		if got := a.pagesFor(tc.in); got != tc.want {
			t.Errorf("pagesFor(%d) with 64KiB pages = %d; want %d", tc.in, got, tc.want)
		}
	}
}

func TestNewRefusesUsedDeviceAndBadConfig(t *testing.T) {
	dev := mem.MustDevice(mem.GiB, 0)
	if _, err := New(dev, Config{Page: 1000}); !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("New with a 1000-byte page: %v; want ErrBadSpec", err)
	}
	dev.Reserve(mem.PageSize)
	if _, err := New(dev, Config{}); !errors.Is(err, mem.ErrConfig) {
		t.Errorf("New on a device in use: %v; want mem.ErrConfig", err)
	}
}

func TestHugeRequestIsOOM(t *testing.T) {
	for _, page := range []int64{MinPage, MaxPage} {
		a, _ := New(mem.MustDevice(mem.GiB, 0), Config{Page: page, MaxRange: page})
		_, err := a.Alloc(math.MaxInt64, 0)
		var oe *alloc.OOMError
		if !errors.As(err, &oe) || oe.AllocSize < oe.Requested-page {
			t.Errorf("page %d: Alloc(MaxInt64) = %v; want an OOMError", page, err)
		}
	}
}
