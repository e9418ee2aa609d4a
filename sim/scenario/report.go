package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// Report is the document `gpufrag simulate --json` prints (docs/json.md):
// what ran, the result of every run in the plan's order, and the
// recommendation.
type Report struct {
	Scenario string  `json:"scenario"`
	About    string  `json:"about,omitempty"`
	Model    string  `json:"model"`
	GPU      string  `json:"gpu"`
	TP       int     `json:"tp"`
	Source   string  `json:"source"`
	Requests int     `json:"requests"`
	Skipped  int     `json:"skipped_rows"`
	Duration float64 `json:"duration_s"`
	Seed     uint64  `json:"seed"`
	// Timing says how step time was modelled: the engine, the profile (or
	// the roofline), the weights' type and the client's cap; absent when
	// all four are as they were before profiles existed (vllm-v1, the
	// roofline, the model's weights, an open loop) and the trace is not a
	// benchmark file.
	Timing *Timing `json:"timing,omitempty"`
	// Bench is a vllm-bench trace's own measured figures; absent for other
	// workloads.
	Bench   *BenchReport `json:"bench,omitempty"`
	Results []sim.Result `json:"results"`
	// Recommended is the index in Results of the best run (see Recommend);
	// -1 when no run qualifies.
	Recommended int    `json:"recommended"`
	Reason      string `json:"recommendation"`
}

// NewReport assembles the report of scenario s, built into plan, from the
// results of plan.Configs (in that order) and recommends one.
func NewReport(s *Scenario, plan *Plan, results []sim.Result) *Report {
	r := &Report{Scenario: s.Name, About: s.About, Model: plan.Model.Name, GPU: plan.GPU.Name, TP: max(s.TP, 1),
		Source: plan.Source, Requests: len(plan.Requests), Skipped: plan.Skipped,
		Duration: time.Duration(s.Duration).Seconds(), Seed: s.Seed, Timing: newTiming(plan), Bench: newBenchReport(plan.Bench),
		Results: results}
	r.Recommended, r.Reason = Recommend(results)
	if r.Bench != nil && plan.DrawnFrom != nil {
		seed := *plan.DrawnFrom
		r.Bench.ArrivalSeed = &seed
	}
	if r.Bench != nil {
		r.Bench.NotComparable = benchNotComparable(s, plan, results)
	}
	return r
}

// benchNotComparable says how plan's replay of its benchmark run differs
// from the run as it ran, in the scenario's terms; "" when it does not.
func benchNotComparable(s *Scenario, plan *Plan, results []sim.Result) string {
	var why []string
	b := plan.Bench
	if tr := s.Workload.Trace; tr != nil && tr.Rate > 0 {
		// Even at the run's own rate the arrivals are respaced to it.
		why = append(why, fmt.Sprintf("its arrivals are respaced to %g requests/s (workload.trace.rate, --rate; the run's: %g)", tr.Rate, b.RequestRate))
	}
	if n := len(b.Requests); b.NumPrompts > n && n > 0 && plan.benchLeftOut == 0 {
		why = append(why, fmt.Sprintf("the file's per-request arrays hold %d of the run's %d requests (a cut file), and its figures are the whole run's", n, b.NumPrompts))
	}
	if plan.benchLeftOut > 0 {
		why = append(why, fmt.Sprintf("%d of the run's requests are left out (workload.trace.max_rows, --max-rows)", plan.benchLeftOut))
	}
	if mc := s.Workload.MaxConcurrency; mc != nil && *mc != b.MaxConcurrency {
		why = append(why, fmt.Sprintf("its client holds at most %d requests in flight (workload.max_concurrency, --max-concurrency; 0: no cap), the run's %d", *mc, b.MaxConcurrency))
	}
	if s.Duration > 0 && slices.ContainsFunc(results, func(r sim.Result) bool { return r.RequestsUnfinished > 0 || r.RequestsTotal < len(plan.Requests) }) {
		why = append(why, "it stops at the scenario's duration (--duration) with requests unfinished, the run did not")
	}
	return strings.Join(why, "; ")
}

// RunConfig runs one configuration of a plan over reqs. With a defrag
// policy it runs the same configuration again with defrag off, the
// counterfactual that the result's defrag.ooms_without reports. It is
// deterministic and single-threaded: callers run configurations side by side.
func RunConfig(c sim.Config, reqs []workload.Request) (sim.Result, error) {
	e, err := sim.New(c, reqs)
	if err != nil {
		return sim.Result{}, err
	}
	r, err := e.Run()
	if err != nil || c.Defrag.Policy == sim.DefragOff {
		return r, err
	}
	c.Defrag.Policy = sim.DefragOff
	e, err = sim.New(c, reqs)
	if err != nil {
		return sim.Result{}, err
	}
	off, err := e.Run()
	if err != nil {
		return sim.Result{}, err
	}
	r.Defrag.OOMsWithout = off.RequestsFailedOOM
	return r, nil
}

// Recommend picks, among runs a real engine could deploy (not
// contiguous-max:oracle, which knows every output length in advance), the
// one that serves the most requests (fewest failed and rejected, then most
// completed), then the lowest p99 time to first token, then the highest
// output throughput, then the lowest peak reserved memory; ties keep the
// earlier run. It returns the run's index and why, or -1 and "" when no run
// qualifies.
func Recommend(rs []sim.Result) (int, string) {
	best := -1
	for i := range rs {
		if strings.HasSuffix(rs[i].KV, ":oracle") {
			continue
		}
		if best < 0 || better(rs[i], rs[best]) {
			best = i
		}
	}
	if best < 0 {
		return -1, ""
	}
	r := rs[best]
	reason := fmt.Sprintf("%s on %s: %d of %d requests completed, %d failed or rejected, %.0f output tokens/s, peak reserved %s, TTFT p99 %s",
		r.KV, r.Allocator, r.RequestsCompleted, r.RequestsTotal, r.RequestsFailedOOM+r.RequestsRejected,
		r.OutputTokensPerS, human.Bytes(r.PeakReservedBytes), human.Seconds(r.TTFT.P99))
	return best, reason
}

// better reports whether a ranks before b (see Recommend).
func better(a, b sim.Result) bool {
	fa, fb := a.RequestsFailedOOM+a.RequestsRejected, b.RequestsFailedOOM+b.RequestsRejected
	if fa != fb {
		return fa < fb
	}
	if a.RequestsCompleted != b.RequestsCompleted {
		return a.RequestsCompleted > b.RequestsCompleted
	}
	if a.TTFT.P99 != b.TTFT.P99 {
		return a.TTFT.P99 < b.TTFT.P99
	}
	if a.OutputTokensPerS != b.OutputTokensPerS {
		return a.OutputTokensPerS > b.OutputTokensPerS
	}
	return a.PeakReservedBytes < b.PeakReservedBytes
}
