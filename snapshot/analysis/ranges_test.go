package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rangeSet answers overlaps exactly as the map scan it replaced, in uint64
// arithmetic, through random sets, replacements and deletions of ranges
// near 0, in the middle and near 2^64 (some of whose ends wrap), sizes of 0
// and negative ones included.
func TestRangeSetMatchesScan(t *testing.T) {
	scan := func(m map[uint64]int64, a uint64, size int64) bool {
		for lo, n := range m {
			if a < lo+uint64(n) && lo < a+uint64(size) {
				return true
			}
		}
		return false
	}
	rng := rand.New(rand.NewPCG(5, 6))
	addr := func() uint64 {
		base := []uint64{0, 1 << 40, math.MaxUint64 - 1<<30}[rng.IntN(3)]
		return base + uint64(rng.IntN(1<<12))<<18
	}
	size := func() int64 {
		switch rng.IntN(20) {
		case 0:
			return 0
		case 1:
			return -int64(rng.IntN(1 << 20))
		}
		return int64(rng.IntN(1<<12)+1) << 18
	}
	var s rangeSet
	m := map[uint64]int64{}
	var keys []uint64
	for i := range 20000 {
		switch r := rng.IntN(10); {
		case r < 4:
			lo, n := addr(), size()
			s.set(lo, n)
			m[lo] = n
			keys = append(keys, lo)
		case r < 6 && len(keys) > 0:
			lo := keys[rng.IntN(len(keys))]
			s.del(lo)
			delete(m, lo)
		default:
			a, n := addr(), size()
			if got, want := s.overlaps(a, n), scan(m, a, n); got != want {
				t.Fatalf("op %d: overlaps(%#x, %d) = %v, the scan says %v", i, a, n, got, want)
			}
		}
	}
}
