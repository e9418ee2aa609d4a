package async

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
		{"", DefaultConfig(), "release_threshold:0B", false},
		{" , ", DefaultConfig(), "release_threshold:0B", false},
		{"release_threshold:0", Config{}, "release_threshold:0B", false},
		{"release_threshold:1GiB", Config{ReleaseThreshold: mem.GiB}, "release_threshold:1GiB", false},
		{" Release_Threshold : 512 MiB ", Config{ReleaseThreshold: 512 * mem.MiB}, "release_threshold:512MiB", false},
		{"release_threshold:4096", Config{ReleaseThreshold: 4096}, "release_threshold:4KiB", false},
		{"release_threshold:1000001", Config{ReleaseThreshold: 1000001}, "release_threshold:1000001B", false},
		{"release_threshold:max", Config{ReleaseThreshold: NoRelease}, "release_threshold:max", false},
		{"release_threshold:MAX", Config{ReleaseThreshold: NoRelease}, "release_threshold:max", false},
		{"release_threshold", Config{}, "", true},
		{"release_threshold:", Config{}, "", true},
		{"release_threshold=1GiB", Config{}, "", true},
		{"threshold:1GiB", Config{}, "", true},
		{"release_threshold:1GiB,release_threshold:0", Config{}, "", true},
		{"release_threshold:-1", Config{}, "", true},
		{"release_threshold:1.3B", Config{}, "", true},
		{"release_threshold:infinite", Config{}, "", true},
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

func TestNewAndSpec(t *testing.T) {
	if _, err := New(mem.MustDevice(mem.GiB, 0), Config{ReleaseThreshold: -1}); !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("negative threshold: %v, want ErrBadSpec", err)
	}
	for _, tc := range []struct{ args, spec string }{
		{"", "async"},
		{"release_threshold:0", "async"},
		{"release_threshold:1GiB", "async:release_threshold:1GiB"},
		{"release_threshold:max", "async:release_threshold:max"},
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

// TestVirtualRange checks the reservation: 9/8 of the capacity, rounded up
// to whole pages, and nothing physical until the first allocation.
func TestVirtualRange(t *testing.T) {
	for _, tc := range []struct{ capacity, va int64 }{
		{64 * mem.MiB, 72 * mem.MiB},
		{80 * mem.GiB, 90 * mem.GiB},
		{mem.PageSize, 2 * mem.PageSize},                 // 2.25 MiB rounds up to 4 MiB
		{141 * 1000 * 1000 * 1000, 75639 * mem.PageSize}, // H200: ceil(1.125 × 141e9 / 2 MiB) = 75,639 pages
	} {
		dev := mem.MustDevice(tc.capacity, 0)
		a, err := New(dev, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if a.vaSize != tc.va || dev.Used() != 0 || a.Stats().Segments != 0 {
			t.Errorf("capacity %d: va %d (want %d), used %d, segments %d", tc.capacity, a.vaSize, tc.va, dev.Used(), a.Stats().Segments)
		}
	}
}
