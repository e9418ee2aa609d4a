// The metrics a calibration compares, measured as the benchmark clients
// define them (numpy's median and linear percentiles over the per-request
// arrays) and simulated (sim.Result). See replay.go for the runs they are
// measured on and fit.go for the fit.

package calib

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// Metric is one figure of a benchmark run that a calibration compares.
type Metric int

// The metrics, in the order of the tables. Latencies are in seconds,
// throughput in output tokens per second.
const (
	MedianTTFT       Metric = iota // time to first token, median over successful requests
	P99TTFT                        // time to first token, 99th percentile (numpy linear)
	MedianTPOT                     // (latency − TTFT) ÷ (output tokens − 1), median over requests of more than one token
	MedianITL                      // gap between stream chunks, median over every gap of every request
	MedianE2E                      // end-to-end latency per request, median
	OutputThroughput               // output tokens of successful requests ÷ benchmark duration
	numMetrics
)

var metricNames = [numMetrics]string{"median_ttft", "p99_ttft", "median_tpot", "median_itl", "median_e2e", "output_throughput"}

// benchMetric is each metric's summary field in workload.BenchResult.
var benchMetric = [numMetrics]workload.BenchMetric{
	workload.MedianTTFT, workload.P99TTFT, workload.MedianTPOT, workload.MedianITL, workload.MedianE2E, workload.OutputThroughput,
}

// Metrics lists every metric in table order.
func Metrics() []Metric {
	ms := make([]Metric, numMetrics)
	for i := range ms {
		ms[i] = Metric(i)
	}
	return ms
}

// String names the metric as the JSON report does: "median_ttft", ...
func (m Metric) String() string {
	if m >= 0 && m < numMetrics {
		return metricNames[m]
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// MarshalText writes the metric's name.
func (m Metric) MarshalText() ([]byte, error) {
	if m < 0 || m >= numMetrics {
		return nil, fmt.Errorf("calib: metric %d is not defined", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads a metric's name.
func (m *Metric) UnmarshalText(b []byte) error {
	for i, n := range metricNames {
		if n == string(b) {
			*m = Metric(i)
			return nil
		}
	}
	return fmt.Errorf("calib: metric %q: want one of %v", clipLabel(string(b)), metricNames)
}

// Latency reports whether the metric is a time in seconds (else a rate).
func (m Metric) Latency() bool { return m != OutputThroughput }

// percentile is numpy.percentile(xs, p) with its default linear method on
// sorted xs: the value at rank p/100 × (n − 1), interpolated between the
// two samples around it. numpy.median is percentile 50: the mean of the
// two middle samples of an even count. 0 for no samples, as the clients'
// np.median(xs or 0).
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, n-1)
	frac := rank - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// perRequest holds the samples of the client's metrics over one run's
// per-request arrays.
type perRequest struct {
	ttft, tpot, itl, e2e []float64
	outputs              int64 // output tokens of the successful requests
	gaps, gapTokens      int   // itls entries and output tokens after the first, over requests with more than one
}

// collect gathers the samples of r's per-request arrays as vLLM's
// calculate_metrics (benchmarks/serve.py, and benchmark_serving.py before
// it) does: only successful requests; TPOT for output_len > 1 only, as
// (latency − ttft) ÷ (output_len − 1); latency from latencies when the
// file has it, else ttft + Σ itls (the client's latency is the last
// chunk's time, and its itls are the gaps between chunks after the
// first); every itl gap pooled. ok is false when the run lacks the
// arrays (lengths and ttfts) this needs.
func collect(r *workload.BenchResult) (perRequest, bool) {
	var pr perRequest
	need := workload.DetailLens | workload.DetailTTFTs
	if r.Detail&need != need || (r.Detail&(workload.DetailITLs|workload.DetailLatencies) == 0) {
		return pr, false
	}
	for _, q := range r.Requests {
		if q.Failed() {
			continue
		}
		lat := q.Latency
		if r.Detail&workload.DetailLatencies == 0 {
			lat = q.TTFT
			for _, g := range q.ITLs {
				lat += g
			}
		}
		pr.ttft = append(pr.ttft, q.TTFT)
		pr.e2e = append(pr.e2e, lat)
		pr.itl = append(pr.itl, q.ITLs...)
		pr.outputs += int64(q.OutputTokens)
		if q.OutputTokens > 1 {
			pr.tpot = append(pr.tpot, (lat-q.TTFT)/float64(q.OutputTokens-1))
			pr.gaps += len(q.ITLs)
			pr.gapTokens += q.OutputTokens - 1
		}
	}
	for _, xs := range [][]float64{pr.ttft, pr.tpot, pr.itl, pr.e2e} {
		slices.Sort(xs)
	}
	return pr, true
}

// value is metric m over the samples; ok is false when there are none.
func (pr *perRequest) value(m Metric) (float64, bool) {
	var xs []float64
	p := 50.0
	switch m {
	case MedianTTFT:
		xs = pr.ttft
	case P99TTFT:
		xs, p = pr.ttft, 99
	case MedianTPOT:
		xs = pr.tpot
	case MedianITL:
		xs = pr.itl
	case MedianE2E:
		xs = pr.e2e
	default:
		return 0, false
	}
	if len(xs) == 0 {
		return 0, false
	}
	return percentile(xs, p), true
}

// noTextRequests counts r's successful requests with output_lens 0: a
// stream that carried no text. vLLM's benchmark_serving as the runs cited
// here ran it (0.6.0 Lambda's, 0.6.3 dstack's; async_request_openai_completions)
// sets a request's TTFT when the first chunk with text arrives, so such a
// request keeps a TTFT of 0 and counts as successful; the printed TTFT
// percentiles are taken over that many zeros. Later clients set the TTFT
// at the first chunk with choices, text or not, and mark a stream without
// one failed: a file of theirs with such requests would need its ttfts
// read, not assumed 0. 0 when the file gives no per-request lengths.
func noTextRequests(r *workload.BenchResult) int {
	if r.Detail&workload.DetailLens == 0 {
		return 0
	}
	n := 0
	for _, q := range r.Requests {
		if !q.Failed() && q.OutputTokens == 0 {
			n++
		}
	}
	return n
}

// clientTTFT is a simulated run's TTFT percentile p taken as the
// benchmark client takes it from a file with zeros requests that returned
// no text (noTextRequests): over the first-token times of the simulated
// requests that have one (Result.RequestTimes, so the run needs
// Config.RequestTimes) and that many zeros, with numpy's interpolation.
// ok is false when the run kept no request times.
func clientTTFT(res *sim.Result, zeros int, p float64) (float64, bool) {
	if len(res.RequestTimes) == 0 {
		return 0, false
	}
	xs := make([]float64, zeros, zeros+len(res.RequestTimes))
	for _, t := range res.RequestTimes {
		if t.HasTTFT {
			xs = append(xs, t.TTFT)
		}
	}
	slices.Sort(xs)
	return percentile(xs, p), true
}

// simulated returns metric m of a simulation, and false for a metric the
// simulator does not report. Its percentiles are sim's nearest-rank ones,
// which differ from numpy's interpolated ones by at most the gap between
// two neighbouring samples (the ITL's, from a histogram, within 0.1% more).
func simulated(res *sim.Result, m Metric) (float64, bool) {
	switch m {
	case MedianTTFT:
		return res.TTFT.P50, true
	case P99TTFT:
		return res.TTFT.P99, true
	case MedianTPOT:
		return res.TPOT.P50, true
	case MedianITL:
		return res.ITL.P50, res.ITL.P50 > 0
	case MedianE2E:
		return res.E2E.P50, true
	case OutputThroughput:
		return res.OutputTokensPerS, true
	}
	return 0, false
}
