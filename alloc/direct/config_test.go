package direct

import (
	"errors"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in  string
		bad bool
	}{
		{"", false},
		{"  ", false},
		{"2MiB", true},
		{"x:1", true},
	} {
		cfg, err := ParseConfig(tc.in)
		if tc.bad {
			if !errors.Is(err, alloc.ErrBadSpec) {
				t.Errorf("ParseConfig(%q) = %v; want ErrBadSpec", tc.in, err)
			}
			continue
		}
		if err != nil || cfg.String() != "" {
			t.Errorf("ParseConfig(%q) = %q, %v", tc.in, cfg.String(), err)
		}
	}
}

func TestSpec(t *testing.T) {
	a, err := FromSpec(mem.MustDevice(mem.GiB, 0), "")
	if err != nil || a.Spec() != "direct" {
		t.Fatalf("FromSpec(\"\") = %v, %v; want spec \"direct\"", a, err)
	}
}

func TestPageRound(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{1, mem.PageSize},
		{mem.PageSize, mem.PageSize},
		{mem.PageSize + 1, 2 * mem.PageSize},
		{3 * mem.MiB, 4 * mem.MiB},
		{math.MaxInt64 - mem.PageSize, math.MaxInt64 - mem.PageSize + 1}, // the largest size that still rounds: up to 2^63 − 2 MiB
		{math.MaxInt64, math.MaxInt64},                                   // cannot be rounded: returned as is
	} {
		if got := pageRound(tc.in); got != tc.want {
			t.Errorf("pageRound(%d) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

func TestNewRefusesUsedDevice(t *testing.T) {
	dev := mem.MustDevice(mem.GiB, 0)
	dev.Reserve(mem.PageSize)
	if _, err := New(dev, Config{}); !errors.Is(err, mem.ErrConfig) {
		t.Fatalf("New on a device in use: %v; want mem.ErrConfig", err)
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
