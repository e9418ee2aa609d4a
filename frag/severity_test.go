package frag

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Stake
		level Level
		why   string
	}{
		// The analyze case: health 0.025 over 0.9% of reserved
		// free (161 MiB of an 80 GiB device) is little at stake.
		{"sliver", Stake{Health: 0.025, CachedFree: 168 * mem.MiB, Reserved: 19 * mem.GiB, Capacity: 80 * mem.GiB}, LevelMinor, "of the device"},
		// The same ratio over 20 GiB of stranded memory is fragmented.
		{"act", Stake{Health: 0.025, CachedFree: 20 * mem.GiB, Reserved: 60 * mem.GiB, Capacity: 80 * mem.GiB}, LevelAct, "19.50GiB free outside"},
		{"watch", Stake{Health: 0.45, CachedFree: 20 * mem.GiB, Reserved: 60 * mem.GiB}, LevelWatch, "of reserved memory"},
		{"healthy", Stake{Health: 0.9, CachedFree: 20 * mem.GiB, Reserved: 60 * mem.GiB}, LevelHealthy, ""},
		// The replay case: health 1.00 beside 333 OOMs is a full device.
		{"full", Stake{Health: 1, CachedFree: mem.MiB, Reserved: 60 * mem.GiB, OOMs: 333}, LevelFull, "333 out-of-memory failures"},
		{"act with OOMs", Stake{Health: 0.1, CachedFree: 20 * mem.GiB, Reserved: 60 * mem.GiB, OOMs: 1}, LevelAct, "1 out-of-memory failure"},
		{"nothing free", Stake{Health: 1, Reserved: 60 * mem.GiB}, LevelHealthy, ""},
		{"nothing reserved", Stake{Health: 0.2}, LevelMinor, ""},
	} {
		v := Judge(tc.s)
		if v.Level != tc.level || !strings.Contains(v.Why, tc.why) || v.Label == "" {
			t.Errorf("%s: Judge(%+v) = %+v, want level %d and a why containing %q", tc.name, tc.s, v, tc.level, tc.why)
		}
	}
}

func TestStakeStranded(t *testing.T) {
	if got := (Stake{Health: 0.25, CachedFree: 4 * mem.GiB}).Stranded(); got != 3*mem.GiB {
		t.Errorf("Stranded = %d, want 3 GiB", got)
	}
	if got := (Stake{Health: 0, CachedFree: -1}).Stranded(); got != 0 {
		t.Errorf("negative cached free: Stranded = %d, want 0", got)
	}
}
