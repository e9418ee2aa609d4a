// The noise of a comparison between a benchmark run and its replay: a run
// whose arrivals (or lengths) the client drew is one draw of many, and the
// replay draws its own, so their metrics differ even with the right
// profile. The spread over seeds measures how much; fit.go weights each
// metric's error by it, and identify.go fits only parameters the runs pin
// beyond it.

package calib

import (
	"context"
	"math"

	"github.com/gpufrag/gpufrag/sim"
)

const (
	// noiseVariants is how many draws of a run (its seed and the next
	// ones) the noise is measured over: 8, whose standard deviation is
	// within about ±27% (1 ÷ √(2 × 7)) of the true one, enough to weight a
	// metric.
	noiseVariants = 8
	// noiseFloor is the relative standard deviation of a benchmark's own
	// repeat on one server (2%): the datacrunch SGLang file holds the same
	// 1,500-request offline run twice (lines 4 and 5), whose median ITL,
	// output throughput and median TTFT differ by 0.8%, 0.1% and 3.9%.
	// Every metric's noise is at least this, so a run whose arrivals are
	// not drawn (all at once, or the client's own times) is not fitted as
	// if exact.
	noiseFloor = 0.02
)

// spread is the sample standard deviation of each metric's log over a
// case's draws.
type spread [numMetrics]float64

// sigma is the standard deviation of a metric's log error when the replay
// is the mean of n draws: σ² = s²·(1 + 1/n) + noiseFloor² (the measured
// value is one draw).
func (sp spread) sigma(m Metric, n int) float64 {
	return math.Sqrt(sp[m]*sp[m]*(1+1/float64(n)) + noiseFloor*noiseFloor)
}

// noise replays each case at the start profile, a fitted one under its
// first noiseVariants variants and a held-out one under judgeDraws, and
// returns the spread of each metric's log over the first noiseVariants of
// them, each case's first-variant result, and each case's geometric mean
// over all of them (a held-out run's replay at the start).
func (f *fitter) noise(ctx context.Context, cases []int) (map[int]spread, map[int]*sim.Result, map[int]*simValues, error) {
	// A fitted run needs only the noise's draws; a held-out one also the
	// judgement's (judgeDraws, more than those under --seeds above 8).
	var js []job
	for _, i := range cases {
		n := noiseVariants
		if f.cases[i].Holdout {
			n = f.judgeDraws()
		}
		js = append(js, f.jobs([]int{i}, n)...)
	}
	res, err := f.simulate(ctx, f.start, js)
	if err != nil {
		return nil, nil, nil, err
	}
	shown, _ := meanValues(js, res)
	logs := map[int][numMetrics][]float64{}
	first := map[int]*sim.Result{}
	for k, j := range js {
		if first[j.c] == nil {
			first[j.c] = &res[k]
		}
		if j.v >= noiseVariants {
			continue // the spread is over the first noiseVariants draws, whatever --seeds
		}
		l := logs[j.c]
		for _, m := range Metrics() {
			if v, ok := simulated(&res[k], m); ok && v > 0 {
				l[m] = append(l[m], math.Log(v))
			}
		}
		logs[j.c] = l
	}
	out := make(map[int]spread, len(cases))
	for _, c := range cases {
		var sp spread
		for m, xs := range logs[c] {
			sp[m] = sampleSD(xs)
		}
		out[c] = sp
	}
	return out, first, shown, nil
}

// sampleSD is the sample standard deviation (n − 1), 0 for fewer than two
// values.
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// draws is how many draws of case c the report's values average.
func (f *fitter) draws(c *Case) int {
	if c.Holdout {
		return f.judgeDraws()
	}
	return f.o.Seeds
}
