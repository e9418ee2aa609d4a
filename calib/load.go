// What one load can pin (issue 24): the fitted runs' load, read from the
// files and from the start's replay, and the rule that keeps the
// parameters a single load cannot see at the start's values. identify
// applies it before its standard-error test (identify.go).

package calib

import (
	"fmt"
	"math"

	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

const (
	// lightBatch is the largest mean number of sequences a step (the
	// start's replay of the fitted runs) at which a load is light: its
	// steps hold one to a few sequences, so what each added sequence costs
	// (and anything else that grows with the batch) moves its metrics by
	// no more than the noise lets the step's fixed cost move them, and the
	// two cannot be told apart. Chosen from identifiability, not tuned:
	// with 4 sequences a step the per-sequence share of a step's host
	// time is 4·per_seq ÷ (step + 4·per_seq), within a few percent of the
	// step's own for every overhead class of sim/profiles/joint.yaml, so
	// a fixed cost and a per-sequence cost move a light load's figures the
	// same way.
	lightBatch = 4.0
	// saturatedShare: a run at a drawn rate whose measured output
	// throughput is below this share of the output its requests asked for
	// over the time they were sent in served less than it was offered: a
	// queue grew, and its TTFT is mostly that queue. (Benchmarks' own
	// repeats differ by up to 4% and a run's tail drains after the last
	// send: 0.9 leaves that room.)
	saturatedShare = 0.9
	// queueGrowth: a run whose throughput falls short of what was offered
	// is saturated only if its TTFTs show the queue, when it has them: the
	// median TTFT of its last quarter of requests (in the order they were
	// sent) at least this many times its first quarter's. A run short
	// enough for its drain after the last send to dominate its duration
	// falls short with no queue at all (surajssd's 16 req/s run: 200
	// requests sent over 12 s, 32 s in all, every TTFT about 60 ms).
	// Chosen from the mechanism, not tuned: a queue that grows over the
	// whole run multiplies the late TTFTs many times over (datacrunch's
	// 16 req/s run: median 614 ms against 86 ms at 1 req/s), while a run
	// without one varies its quarters' medians by tens of percent.
	queueGrowth = 2.0
	// minGrowthRequests is the fewest successful requests with a TTFT the
	// growth test reads (quarters of at least 4).
	minGrowthRequests = 16
)

// The load regimes of LoadReport.Regime.
const (
	RegimeSeveral   = "several loads" // the rule does not apply: the fit sees more than one load
	RegimeLight     = "light"
	RegimeLoaded    = "loaded"
	RegimeSaturated = "saturated"
)

// LoadReport says what load the fitted runs are and what a fit to it may
// move (the rule of load.go).
type LoadReport struct {
	// Regime is RegimeSeveral, or the one load's: RegimeLight,
	// RegimeLoaded or RegimeSaturated.
	Regime string `json:"regime"`
	// MeanBatch is the mean number of sequences a step in the start's
	// replay of the fitted runs (their mean).
	MeanBatch float64 `json:"mean_batch"`
	// Served is the smallest share, over the fitted runs with a drawn
	// rate, of the output tokens asked for that the run measured per
	// second (1: everything offered was served as it came; 0 when no run
	// has a drawn rate).
	Served float64 `json:"served_share"`
	// Why says how the regime was decided, in words.
	Why string `json:"why"`
}

// loadOf decides the fitted runs' load from their files (rates, the
// measured throughput) and the start's replay of them (first).
func (f *fitter) loadOf(first map[int]*sim.Result) LoadReport {
	var lr LoadReport
	if len(f.fitIdx) == 0 { // newFitter refuses this; no load to read
		lr.Regime, lr.Why = RegimeSeveral, "no run is fitted"
		return lr
	}
	one := true
	c0 := f.cases[f.fitIdx[0]]
	sum, n := 0.0, 0
	lr.Served = math.Inf(1)
	queued := false // a run served short of its offer and (as far as its TTFTs tell) queued
	var drained string
	for _, i := range f.fitIdx {
		c := f.cases[i]
		if c.Run.RequestRate != c0.Run.RequestRate || c.Run.MaxConcurrency != c0.Run.MaxConcurrency {
			one = false
		}
		if r := first[i]; r != nil && r.Steps > 0 {
			sum += r.BatchSizeMean
			n++
		}
		s, ok := c.servedShare()
		if !ok {
			continue
		}
		lr.Served = math.Min(lr.Served, s)
		if s >= saturatedShare {
			continue
		}
		if early, late, known := c.ttftQuarters(); known && late < queueGrowth*early {
			if drained == "" {
				drained = fmt.Sprintf("%.0f%% of the output tokens asked for were served per second, but its TTFTs do not grow from the first "+
					"quarter of its requests to the last (medians %s, then %s): the shortfall is the run's drain after its last send, not a queue",
					100*s, msOf(early), msOf(late))
			}
			continue
		}
		queued = true
	}
	if n > 0 {
		lr.MeanBatch = sum / float64(n)
	}
	if math.IsInf(lr.Served, 1) {
		lr.Served = 0
	}
	switch {
	case !one:
		lr.Regime = RegimeSeveral
		lr.Why = "the runs fitted to are at more than one load (request rate or concurrency)"
	case queued:
		lr.Regime = RegimeSaturated
		lr.Why = fmt.Sprintf("one load, saturated: %.0f%% of the output tokens asked for were served per second (below %.0f%%), so a queue grew and sets TTFT",
			100*lr.Served, 100*saturatedShare)
	case lr.MeanBatch <= lightBatch:
		lr.Regime = RegimeLight
		lr.Why = fmt.Sprintf("one load, light: the start's replay holds %.1f sequences a step on average (at most %g), too few to tell what grows with the batch from a step's fixed cost",
			lr.MeanBatch, lightBatch)
	default:
		lr.Regime = RegimeLoaded
		lr.Why = fmt.Sprintf("one load, loaded but not saturated: %.1f sequences a step on average", lr.MeanBatch)
	}
	if one && !queued && drained != "" {
		lr.Why += "; " + drained
	}
	return lr
}

// ttftQuarters returns the median TTFT of the first and of the last
// quarter of the run's successful requests in the order the client sent
// them (the per-request arrays' order), and false when the run has fewer
// than minGrowthRequests of them with a TTFT.
func (c *Case) ttftQuarters() (early, late float64, ok bool) {
	var ttft []float64
	if c.Run.Detail&workload.DetailTTFTs != 0 {
		for _, q := range c.Run.Requests {
			if !q.Failed() && q.TTFT > 0 {
				ttft = append(ttft, q.TTFT)
			}
		}
	}
	if len(ttft) < minGrowthRequests {
		return 0, 0, false
	}
	k := len(ttft) / 4
	return stats.Median(ttft[:k]), stats.Median(ttft[len(ttft)-k:]), true
}

// msOf is seconds as milliseconds in a message ("58.2 ms").
func msOf(s float64) string { return fmt.Sprintf("%.3g ms", 1e3*s) }

// servedShare is the run's measured output throughput over the output
// its requests asked for per second of sending: false for a run whose
// requests are sent at once or in a closed loop (no rate offered), or
// without a measured throughput, or with one the report leaves out as not
// the replayed requests' (a cut file: measure).
func (c *Case) servedShare() (float64, bool) {
	m := c.measured[OutputThroughput]
	if !m.ok || m.excluded != "" || c.Run.MaxConcurrency > 0 || !(c.Run.RequestRate > 0) || math.IsInf(c.Run.RequestRate, 1) || len(c.Requests) < 2 {
		return 0, false
	}
	lo, hi, out := c.Requests[0].Arrival, c.Requests[0].Arrival, 0
	for _, q := range c.Requests {
		lo, hi = min(lo, q.Arrival), max(hi, q.Arrival)
		out += q.OutputTokens
	}
	span := float64(hi-lo) / 1e9
	if span <= 0 || out == 0 {
		return 0, false
	}
	return m.v / (float64(out) / span), true
}

// loadKeeps says why the load rule keeps parameter pm at its start ("" when
// it may be fitted). The rule, from what one load shows:
//   - A light load's steps hold a few sequences: what grows with the batch
//     (per sequence, per streamed token, the KV reads' growth, the blend
//     from weight-bound to compute-bound) cannot be told from the step's
//     fixed cost, so none of it is fitted, and the step's fixed cost is
//     not fitted apart from those either: the host's speed
//     (overhead.host_step_ns, the joint model's split kept) is.
//   - A loaded one's steps hold many: where the start's cost per
//     sequence makes up at least half the host time of a step at the
//     load's mean batch, the host time the load shows beyond it is taken
//     first as a cost per sequence (overhead.per_seq_ns, tried before the
//     host's speed: order); when that is fitted, neither the host's speed
//     nor the fixed cost moves. Where the step's fixed part is the larger
//     share, the host's speed is tried first, as at a light load: one load
//     pins one host time a step, and moving the part that is already most
//     of it is the smaller move and keeps the joint model's split.
//   - A saturated load's TTFT is the queue: the front end's cost per
//     request (overhead.request_ns) cannot be told from it.
func (lr LoadReport) loadKeeps(pm *param, perSeqChosen bool) string {
	switch lr.Regime {
	case RegimeLight:
		switch {
		case pm.name == "overhead.step_ns":
			return fmt.Sprintf("one light load (%.1f sequences a step) cannot tell the step's fixed host cost from the host costs that grow with the batch: only the host's speed (%s, the joint model's split kept) may move",
				lr.MeanBatch, hostParam)
		case pm.growsWithBatch:
			return fmt.Sprintf("its cost grows with the batch, and one light load (%.1f sequences a step) cannot see that growth: the joint model's value is kept", lr.MeanBatch)
		}
	case RegimeLoaded, RegimeSaturated:
		switch {
		case (pm.name == hostParam || pm.name == "overhead.step_ns") && perSeqChosen:
			return fmt.Sprintf("one load pins one host time per step, here at %.1f sequences a step, and overhead.per_seq_ns, which is fitted, carries it: the step's fixed part is what light loads show (the joint model's, from every source's)",
				lr.MeanBatch)
		case pm.name == "overhead.request_ns" && lr.Regime == RegimeSaturated:
			return fmt.Sprintf("one saturated load (%.0f%% of the offered output served): its TTFT is mostly the queue, which hides the front end's cost per request", 100*lr.Served)
		}
	}
	return ""
}

// loadFits says, for a fitted parameter, why the load lets it move.
func (lr LoadReport) loadFits(pm *param) string {
	switch {
	case lr.Regime == RegimeSeveral:
		return "the runs, at several loads, pin it"
	case pm.name == hostParam:
		return "one load pins the host's time per step at its batch size; the joint model's split between fixed and growing host costs is kept"
	case pm.name == "overhead.request_ns":
		return "an unqueued load's TTFT pins the front end's cost beside the prefill"
	case pm.name == "overhead.per_seq_ns" && lr.Regime != RegimeLight:
		return fmt.Sprintf("at %.1f sequences a step the host time beyond the step's fixed part is what each sequence costs", lr.MeanBatch)
	case lr.Regime == RegimeLight:
		return "its effect at this light load is pinned apart from the host's"
	default:
		return fmt.Sprintf("this %s load pins it", lr.Regime)
	}
}

// order returns the indexes of paramTable in the order identify tries
// them at this load: the table's, but for a loaded or saturated one load
// whose start spends at least half of a step's host time on its sequences
// at the load's mean batch (MeanBatch × per_seq_ns ≥ step_ns), whose host
// time is then tried first as a cost per sequence. (Half is the line where
// the per-sequence part is the larger; not tuned. On the 27 one-load fits of docs/calibrate.md it
// moved two from the per-sequence cost to the host's speed: surajssd's
// qps-1 fit, whose per_seq_ns had gone 7.9 µs → 418 µs, and crusoe's 8B
// at qps 5.)
func (lr LoadReport) order(start *sim.Profile) []int {
	idx := make([]int, 0, len(paramTable))
	first := -1
	perSeqHost := lr.MeanBatch * float64(start.Overhead.PerSeqNs)
	if (lr.Regime == RegimeLoaded || lr.Regime == RegimeSaturated) && perSeqHost >= float64(start.Overhead.StepNs) {
		for j := range paramTable {
			if paramTable[j].name == "overhead.per_seq_ns" {
				first = j
				idx = append(idx, j)
			}
		}
	}
	for j := range paramTable {
		if j != first {
			idx = append(idx, j)
		}
	}
	return idx
}
