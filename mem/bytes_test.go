package mem

import (
	"errors"
	"math"
	"strconv"
	"strings"
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
		{"1PiB", PiB, false},
		{"2p", 2 * PiB, false},
		{"1PB", 1e15, false},
		{"0.0009765625KiB", 1, false},
		{"2e3MB", 2e9, false},
		{"+5KiB", 5 * KiB, false},
		{"-0", 0, false},
		{"9223372036854775807B", math.MaxInt64, false},
		{"9223372036854775807.0", math.MaxInt64, false},
		// Hostile and careless sizes: too large, silently rounded by a
		// float, not decimal, or costly to expand.
		{"9223372036854775808", 0, true},
		{"9999999999999999999GiB", 0, true},
		{"8192PiB", 0, true},
		{"1e308", 0, true},
		{"1e308GiB", 0, true},
		{"1e999999999", 0, true},
		{"1e-999999999", 0, true},
		{"1e99999999999999999999", 0, true},
		{"9007199254740993.5", 0, true},
		{"0x10", 0, true},
		{"0x1p4", 0, true},
		{"Inf", 0, true},
		{"-Inf", 0, true},
		{"1_000", 0, true},
		{"1.5.5", 0, true},
		{"1e", 0, true},
		{".", 0, true},
		{"-1e308", 0, true},
		{"-1B", 0, true},
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

// TestParseBytesDown: a size copied from a report, rounded to two
// decimals, reads as the whole bytes below it (the flags took "79.65GiB"
// for "not a whole number of bytes"); ParseBytes still refuses it, and
// a positive size below a byte is an error, not 0.
func TestParseBytesDown(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"79.65GiB", 85523536281, false}, // 79.65 × 2^30 = 85523536281.6
		{"1.3B", 1, false},
		{"80GiB", 80 * GiB, false},
		{"0", 0, false},
		{"0.5B", 0, true},
		{"1e-999999999", 0, true},
		{"-1.5GiB", 0, true},
		{"abc", 0, true},
	} {
		got, err := ParseBytesDown(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("ParseBytesDown(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
		var b Bytes
		if err := b.Set(tc.in); tc.bad != (err != nil) || int64(b) != tc.want {
			t.Errorf("Bytes.Set(%q) = %d, %v; want %d (error %v)", tc.in, b, err, tc.want, tc.bad)
		}
	}
	if _, err := ParseBytes("79.65GiB"); err == nil || !strings.Contains(err.Error(), "is not a whole number of bytes") {
		t.Errorf("ParseBytes(79.65GiB): %v, want not a whole number of bytes", err)
	}
	if _, err := ParseBytesDown("0.5B"); err == nil || !strings.Contains(err.Error(), `"0.5B" is less than a byte`) {
		t.Errorf("ParseBytesDown(0.5B): %v", err)
	}
}

// TestParseBytesExact: integers past 2^53, which a float64 would round,
// parse exactly with or without a fraction, and a fraction that would
// round to a whole number is still refused.
func TestParseBytesExact(t *testing.T) {
	for _, in := range []string{"9007199254740993", "9007199254740993.0", "9007199254740993e0", "900719925474099.3e1"} {
		if n, err := ParseBytes(in); err != nil || n != 9007199254740993 {
			t.Errorf("ParseBytes(%q) = %d, %v; want 9007199254740993", in, n, err)
		}
	}
	if n, err := ParseBytes("9007199254740992.5"); err == nil {
		t.Errorf("a fraction of a byte parsed as %d", n)
	}
}

// FuzzParseBytes: no input panics, a size is never negative, every size
// prints back (FormatBytesExact) to text that parses to the same size, and
// an error names the text.
//
//	go test ./mem/ -run '^$' -fuzz FuzzParseBytes -fuzztime 20s
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"80GiB", "1.5g", "0", "-1", "1e3mb", "  7 kib ",
		"9999999999999999999GiB", "1e308", "1e-308", "9223372036854775807", "9223372036854775808",
		"1PiB", "0x10", "9007199254740993.0", "1e999999999", "0.0009765625KiB", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			if !errors.Is(err, ErrBadSize) || !strings.Contains(err.Error(), strconv.Quote(s)) && strings.TrimSpace(s) != "" {
				t.Fatalf("ParseBytes(%q): %v, want ErrBadSize naming the text", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative without error", s, n)
		}
		if back, err := ParseBytes(FormatBytesExact(n)); err != nil || back != n {
			t.Fatalf("ParseBytes(%q) = %d, which prints as %q and reads back as %d, %v", s, n, FormatBytesExact(n), back, err)
		}
	})
}

// TestParseBytesEchoBounded: an error quotes at most 64 bytes of the input
// with its length, however long the input (a spec argument, a flag).
func TestParseBytesEchoBounded(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("x", 1<<20),
		strings.Repeat("9", 1<<20) + "GiB",
		"1e" + strings.Repeat("7", 1<<20),
		"-" + strings.Repeat("1", 5000),
	} {
		_, err := ParseBytes(s)
		if err == nil {
			t.Fatalf("ParseBytes(%d bytes): no error", len(s))
		}
		msg := err.Error()
		if len(msg) > 300 || !strings.Contains(msg, "bytes)") {
			t.Errorf("ParseBytes(%d bytes): error of %d bytes: %.200s", len(s), len(msg), msg)
		}
	}
	// Short inputs are quoted whole, as before.
	if _, err := ParseBytes("12 apples"); err == nil || !strings.Contains(err.Error(), `"12 apples"`) {
		t.Errorf("short input: %v", err)
	}
}
