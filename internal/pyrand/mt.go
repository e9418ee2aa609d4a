// Package pyrand reproduces the random draws of Python clients exactly:
// the Mersenne Twister MT19937 as CPython's random module and NumPy's
// legacy RandomState run it, with the few draws benchmark clients use
// (CPython's random(), randint and expovariate; NumPy's legacy randint and
// standard_exponential). Benchmark replays use it to send the requests a
// client sent (its lengths, its arrivals) instead of new draws from the
// same distribution. Test vectors: calib's TestPyRandom and
// TestFidelityAnyscaleDraws (printed by python3), workload's SGLang runs
// (NumPy's draws against the totals the files print).
package pyrand

import (
	"math"
	"math/bits"
)

// MT is the Mersenne Twister MT19937 as CPython's random module and
// NumPy's legacy RandomState run it.
type MT struct {
	mt [624]uint32
	i  int
}

// InitGenrand is MT19937's init_genrand: NumPy's RandomState.seed(s) for
// an integer s (mt19937_seed).
func (m *MT) InitGenrand(s uint32) {
	m.mt[0] = s
	for i := 1; i < 624; i++ {
		m.mt[i] = 1812433253*(m.mt[i-1]^(m.mt[i-1]>>30)) + uint32(i)
	}
	m.i = 624
}

// SeedInt is CPython's random.seed(a) for a non-negative int a below
// 2^32: init_by_array over a's 32-bit words (here one).
func (m *MT) SeedInt(a uint32) {
	key := []uint32{a}
	m.InitGenrand(19650218)
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			m.mt[0] = m.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			m.mt[0] = m.mt[623]
			i = 1
		}
	}
	m.mt[0] = 0x80000000
	m.i = 624
}

// Uint32 is genrand_uint32.
func (m *MT) Uint32() uint32 {
	if m.i >= 624 {
		for k := range 624 {
			y := m.mt[k]&0x80000000 | m.mt[(k+1)%624]&0x7fffffff
			v := m.mt[(k+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			m.mt[k] = v
		}
		m.i = 0
	}
	y := m.mt[m.i]
	m.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// RandInt is random.randint(a, b) (b − a + 1 < 2^32): _randbelow by
// getrandbits(k) with k the bit length of the width, redrawn while out of
// range (CPython 3.2 on).
func (m *MT) RandInt(a, b int) int {
	n := uint32(b - a + 1)
	k := bits.Len32(n)
	for {
		r := m.Uint32() >> (32 - k)
		if r < n {
			return a + int(r)
		}
	}
}

// random is random.Random() and NumPy's legacy random_sample: 53 bits
// from two words.
func (m *MT) Random() float64 {
	a, b := m.Uint32()>>5, m.Uint32()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// StandardExponential is NumPy's legacy_standard_exponential: −log(1 − U).
func (m *MT) StandardExponential() float64 {
	return -math.Log(1 - m.Random())
}

// NPRandint is NumPy's legacy RandomState.randint(low, high) for one value
// of the default int64 dtype with high − low ≤ 2^32: the smallest bit mask
// covering high − low − 1 applied to 32-bit draws, redrawn while above it
// (random_bounded_uint64_fill with use_masked, buffered 32-bit draws).
func (m *MT) NPRandint(low, high int) int {
	if high-low <= 1 { // one value draws nothing; an empty range (NumPy raises) gives low
		return low
	}
	rng := uint32(high - low - 1)
	mask := uint32(1)<<bits.Len32(rng) - 1
	for {
		if v := m.Uint32() & mask; v <= rng {
			return low + int(v)
		}
	}
}

// Expovariate is random.Expovariate(lambd) as Lib/random.py defines it,
// -log(1 - random()) / lambd (Python 3.10, the clients' Python, and
// after).
func (m *MT) Expovariate(lambd float64) float64 {
	return m.StandardExponential() / lambd
}
