package kube

import (
	"strings"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	for _, tc := range []struct {
		q     string
		scale float64
		want  int64
	}{
		{"96", 1000, 96000},
		{"500m", 1000, 500},
		{"1.5", 1000, 1500},
		{"384Gi", 1.0 / (1 << 20), 393216}, // MiB
		{"16384Mi", 1.0 / (1 << 20), 16384},
		{"1G", 1.0 / (1 << 20), 954}, // 1e9 bytes = 953.67 MiB, rounded up
		{"0.1", 1000, 100},
		{"2e3", 1, 2000},
		{"8", 1, 8},
		{"1E", 1e-18, 1}, // exa, not an exponent
		{"3e-3", 1000, 3},
	} {
		got, err := ParseQuantity(tc.q, tc.scale)
		if err != nil || got != tc.want {
			t.Errorf("ParseQuantity(%q, %v) = %d, %v; want %d", tc.q, tc.scale, got, err, tc.want)
		}
	}
	// Issue 13: an exponent that would take big.Rat seconds, and a giant
	// string, are refused at once.
	for _, bad := range []string{"", "abc", "-1", "1Xi", "1e400", "1e1000000", "1e31", "1e-31", "1e", strings.Repeat("9", 65)} {
		if _, err := ParseQuantity(bad, 1); err == nil {
			t.Errorf("ParseQuantity(%q) accepted", bad)
		}
	}
}
