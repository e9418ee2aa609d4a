package mem

import (
	"math"
	"testing"
)

func TestRoundUpSat(t *testing.T) {
	for _, tc := range []struct{ n, unit, want int64 }{
		{0, 512, 0},
		{1, 512, 512},
		{512, 512, 512},
		{513, 512, 1024},
		{1000, 3, 1002},
		// Within unit of the top: the largest multiple of unit instead of
		// an overflow to a negative size.
		{math.MaxInt64 - 510, 512, math.MaxInt64 &^ 511},
		{math.MaxInt64, 512, math.MaxInt64 &^ 511},
		{math.MaxInt64, 3, math.MaxInt64 - math.MaxInt64%3},
		// Below the saturation range it rounds up exactly.
		{math.MaxInt64 - 511 - 511, 512, math.MaxInt64 &^ 511},
	} {
		if got := RoundUpSat(tc.n, tc.unit); got != tc.want {
			t.Errorf("RoundUpSat(%d, %d) = %d, want %d", tc.n, tc.unit, got, tc.want)
		}
	}
}
