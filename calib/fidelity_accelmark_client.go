// AccelMark's client, reproduced: the Poisson arrivals its load generator
// draws, as Python draws them. See fidelity_accelmark.go.

package calib

import (
	"fmt"
	"regexp"

	"github.com/gpufrag/gpufrag/internal/pyrand"
)

// newPyRandom is CPython's random.Random(seed) for a small non-negative
// int seed: the Mersenne Twister of fidelity_anyscale.go (pyrand.MT), seeded
// by init_by_array with the key [seed] (Modules/_randommodule.c,
// random_seed).
func newPyRandom(seed uint32) *pyrand.MT {
	m := new(pyrand.MT)
	m.SeedInt(seed)
	return m
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
				t += r.Expovariate(q)
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
