package mem

import (
	"errors"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"4096", 4096, false},
		{"80GiB", 80 * GiB, false},
		{"512MiB", 512 * MiB, false},
		{"512 mib", 512 * MiB, false},
		{"1.5GiB", 3 * GiB / 2, false},
		{"20MB", 20_000_000, false},
		{"2m", 2 * MiB, false},
		{"1k", 1024, false},
		{"7B", 7, false},
		{"0", 0, false},
		{"", 0, true},
		{"-1MiB", 0, true},
		{"1.3B", 0, true},
		{"abc", 0, true},
		{"NaN", 0, true},
		{"9999999999TiB", 0, true},
		{"1e30", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrBadSize) {
				t.Errorf("ParseBytes(%q) = %d, %v; want ErrBadSize", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {511, "511B"}, {1024, "1KiB"}, {1536, "1.50KiB"},
		{20 * MiB, "20MiB"}, {80 * GiB, "80GiB"}, {-2 * MiB, "-2MiB"},
		{3 * GiB / 2, "1.50GiB"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatBytesExact(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {20 * MiB, "20MiB"}, {MiB + 512, "1024.50KiB"}, {14*MiB + 1, "14680065B"},
		{3 * GiB / 2, "1.50GiB"}, {1536, "1.50KiB"}, {-2 * MiB, "-2MiB"},
	} {
		if got := FormatBytesExact(tc.in); got != tc.want {
			t.Errorf("FormatBytesExact(%d) = %q; want %q", tc.in, got, tc.want)
		}
		if back, err := ParseBytes(FormatBytesExact(tc.in)); tc.in >= 0 && (err != nil || back != tc.in) {
			t.Errorf("FormatBytesExact(%d) does not parse back: %d, %v", tc.in, back, err)
		}
	}
}

func TestBytesRoundTrip(t *testing.T) {
	for _, n := range []int64{1, 512, KiB, 20 * MiB, 80 * GiB, 3 * TiB} {
		var b Bytes
		if err := b.Set(Bytes(n).String()); err != nil || int64(b) != n {
			t.Errorf("round trip of %d: got %d, %v", n, b, err)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"80GiB", "1.5g", "0", "-1", "1e3mb", "  7 kib "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative without error", s, n)
		}
	})
}
