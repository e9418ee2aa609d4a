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

// noise measures each case's metrics over its variants at the start
// profile and returns the standard deviation of each metric's log error:
// σ² = s²·(1 + 1/seeds) + noiseFloor², s being the sample standard
// deviation of the metric's log over the variants (the measured value is
// one draw, the replay the mean of seeds draws). It also returns each
// case's first-variant result.
func (f *fitter) noise(ctx context.Context, cases []int) (map[int][numMetrics]float64, map[int]*sim.Result, error) {
	js := f.jobs(cases, noiseVariants)
	res, err := f.simulate(ctx, f.start, js)
	if err != nil {
		return nil, nil, err
	}
	logs := map[int][numMetrics][]float64{}
	first := map[int]*sim.Result{}
	for k, j := range js {
		if first[j.c] == nil {
			first[j.c] = &res[k]
		}
		l := logs[j.c]
		for _, m := range Metrics() {
			if v, ok := simulated(&res[k], m); ok && v > 0 {
				l[m] = append(l[m], math.Log(v))
			}
		}
		logs[j.c] = l
	}
	out := make(map[int][numMetrics]float64, len(cases))
	for _, c := range cases {
		var sig [numMetrics]float64
		for m, xs := range logs[c] {
			s := sampleSD(xs)
			sig[m] = math.Sqrt(s*s*(1+1/float64(f.o.Seeds)) + noiseFloor*noiseFloor)
		}
		out[c] = sig
	}
	return out, first, nil
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
