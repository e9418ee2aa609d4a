package sim

import (
	"slices"
	"testing"
)

// tallyOf counts gaps (ns) in an itlTally and returns its latency next
// to the nearest-rank p50 and p99 of the same gaps.
func tallyOf(gaps []int64) (got, want Latency) {
	var t itlTally
	s := make([]float64, len(gaps))
	for i, g := range gaps {
		t.add(g, 1)
		s[i] = float64(g) / 1e9
	}
	slices.Sort(s)
	return t.latency(), Latency{P50: nearestRank(s, 0.5), P99: nearestRank(s, 0.99)}
}

// TestITLTallyNearestRank: the histogram's p99 is the nearest-rank one
// (rank ⌈0.99 N⌉), as every other latency of a Result is, not HDR's
// rounded rank (⌊0.99 N + 0.5⌋), which is one lower when 0.99 N has a
// fraction below a half: with 160 gaps, 158 short and 2 long, the
// nearest-rank p99 (the 159th) is a long one.
func TestITLTallyNearestRank(t *testing.T) {
	var gaps []int64
	for i := range 160 {
		g := int64(10_000_000)
		if i >= 158 {
			g = 100_000_000
		}
		gaps = append(gaps, g)
	}
	got, want := tallyOf(gaps)
	for _, q := range []struct {
		name string
		g, w float64
	}{{"p50", got.P50, want.P50}, {"p99", got.P99, want.P99}} {
		if q.g < q.w || q.g > q.w*1.001 {
			t.Errorf("%s %.9f s, nearest rank %.9f s", q.name, q.g, q.w)
		}
	}
}

// TestITLTallyPrecision: within 0.1% and never below for gaps from 1 µs
// up (short decode steps of a small model are well under a millisecond).
func TestITLTallyPrecision(t *testing.T) {
	for _, g := range []int64{1_000, 1_999, 37_123, 200_300, 523_777, 1_000_001, 25_123_457, 3_000_000_017} {
		got, _ := tallyOf([]int64{g})
		w := float64(g) / 1e9
		if got.P50 < w || got.P50 > w*1.001 || got.P99 != got.P50 {
			t.Errorf("gap %d ns: p50 %.9f s, p99 %.9f s", g, got.P50, got.P99)
		}
	}
}
