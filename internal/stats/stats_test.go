package stats

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, math.Inf(1)}, math.Inf(1)},
		{[]float64{2, 2, 2, 9}, 2},
	} {
		in := slices.Clone(tc.xs)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		if !slices.Equal(in, tc.xs) {
			t.Errorf("Median changed its input: %v, was %v", in, tc.xs)
		}
	}
}

// At least half the values are at or below the median and at least half at
// or above it, whatever their order.
func TestMedianHalves(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), 1, 50).Draw(t, "xs")
		m := Median(xs)
		var below, above int
		for _, x := range xs {
			if x <= m {
				below++
			}
			if x >= m {
				above++
			}
		}
		if 2*below < len(xs) || 2*above < len(xs) {
			t.Fatalf("median %v of %v: %d at or below, %d at or above", m, xs, below, above)
		}
	})
}
