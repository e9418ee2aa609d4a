package sim

import (
	"slices"
	"testing"
)

// TestSpreadOf: the smallest, NumPy's median (the mean of the middle two of
// an even count) and the largest, without changing the input.
func TestSpreadOf(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want Spread
	}{
		{[]float64{3}, Spread{3, 3, 3}},
		{[]float64{5, 1, 3}, Spread{1, 3, 5}},
		{[]float64{4, 1, 2, 8}, Spread{1, 3, 8}},
	} {
		in := slices.Clone(tt.xs)
		if got := SpreadOf(tt.xs); got != tt.want || !slices.Equal(in, tt.xs) {
			t.Errorf("SpreadOf(%v) = %+v, want %+v (input now %v)", in, got, tt.want, tt.xs)
		}
	}
}
