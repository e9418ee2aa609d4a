// AccelMark's client, reproduced: the Poisson arrivals its load generator
// draws, as Python draws them. See fidelity_accelmark.go.

package calib

import (
	"fmt"
	"math"
	"regexp"
)

// pyRandom is CPython's random.Random: MT19937 (Matsumoto and Nishimura
// 1998, mt19937ar.c) seeded as random.seed(n) seeds it for a small
// non-negative int n (init_by_array with the key [n],
// Modules/_randommodule.c, random_seed), with random() as
// random_random makes it (53 bits from two 32-bit outputs) and
// expovariate(lambd) as Lib/random.py defines it, -log(1 - random()) /
// lambd (Python 3.10, the clients' Python, and after).
type pyRandom struct {
	mt [624]uint32
	i  int
}

// newPyRandom is random.Random(seed).
func newPyRandom(seed uint32) *pyRandom {
	r := &pyRandom{}
	// init_genrand(19650218)
	r.mt[0] = 19650218
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^r.mt[i-1]>>30) + uint32(i)
	}
	// init_by_array(key = [seed])
	key := []uint32{seed}
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ (r.mt[i-1]^r.mt[i-1]>>30)*1664525) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ (r.mt[i-1]^r.mt[i-1]>>30)*1566083941) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	r.i = 624
	return r
}

// uint32 is genrand_uint32 (getrandbits(32)).
func (r *pyRandom) uint32() uint32 {
	const upper, lower = 0x80000000, 0x7fffffff
	if r.i >= 624 {
		for k := range 624 {
			y := r.mt[k]&upper | r.mt[(k+1)%624]&lower
			v := r.mt[(k+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.i = 0
	}
	y := r.mt[r.i]
	r.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// random is random.random(): a double in [0, 1) from 53 random bits.
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// expovariate is random.expovariate(lambd).
func (r *pyRandom) expovariate(lambd float64) float64 {
	return -math.Log(1.0-r.random()) / lambd
}

// fidAccelMarkClientSeed is loadgen.py's SAMPLE_SEED: AccelMarkLoadGen
// draws every online arrival from random.Random(42), made once per
// scenario process (FreedomIntelligence/AccelMark 5797fc4,
// loadgen/loadgen.py, __init__ and _run_online_async; the initial commit
// 3ae358a draws them the same way).
const fidAccelMarkClientSeed = 42

// fidAccelMarkSuite is what a suite's online scenario runs: its rates in
// the order the client sweeps them, the runs at each rate and the requests
// of each run (suites/suite_<X>/suite.json: online_qps_levels, num_runs,
// online_request_count; the result files' results_by_qps list the same
// rates in the same order and task.num_runs the same runs, at a2ec8f6 for
// SGLang and B200, 5797fc4 for the A100-80GB's vLLM 0.20.1). Suite C runs
// each weight format in its own subprocess (suites/suite_C/suite.py sets
// --precision), so each format's client starts from the seed again.
type fidAccelMarkSuite struct {
	rates []float64
	runs  int
	n     int
}

var fidAccelMarkSuites = map[string]fidAccelMarkSuite{
	"A": {rates: []float64{5, 25, 100}, runs: 3, n: 300},
	"B": {rates: []float64{2, 5, 10, 25}, runs: 3, n: 200},
	"C": {rates: []float64{5, 10, 25, 50}, runs: 3, n: 300},
}

var fidAccelMarkSuiteRef = regexp.MustCompile(`_suite_([A-Z])_`)

// fidAccelMarkClientArrivals gives the arrival times (seconds from each
// run's start) of every run the client sends at rate in the suite named
// by ref (a result file's path): for each earlier rate and run, n draws,
// then each run's n inter-arrival times, accumulated as
// itertools.accumulate accumulates them.
func fidAccelMarkClientArrivals(ref string, rate float64, n int) ([][]float64, error) {
	m := fidAccelMarkSuiteRef.FindStringSubmatch(ref)
	if m == nil {
		return nil, fmt.Errorf("ref %q names no AccelMark suite", ref)
	}
	s, ok := fidAccelMarkSuites[m[1]]
	if !ok {
		return nil, fmt.Errorf("suite %s: its online rates are not cited", m[1])
	}
	if n != s.n {
		return nil, fmt.Errorf("suite %s sends %d requests a run, the figure %d", m[1], s.n, n)
	}
	r := newPyRandom(fidAccelMarkClientSeed)
	for _, q := range s.rates {
		var runs [][]float64
		for range s.runs {
			t, at := 0.0, make([]float64, s.n)
			for k := range at {
				t += r.expovariate(q)
				at[k] = t
			}
			runs = append(runs, at)
		}
		if q == rate {
			return runs, nil
		}
	}
	return nil, fmt.Errorf("suite %s has no online rate %g", m[1], rate)
}
