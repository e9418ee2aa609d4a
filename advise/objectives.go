// The SLO's latency objectives, one table for the checks, the ranking of
// best efforts, the bands and the advice. See doc.go for the overview.

package advise

import (
	"slices"

	"github.com/gpufrag/gpufrag/sim"
)

// objective is one latency objective of an SLO: a p99 no higher than goal.
type objective struct {
	field string  // the figure's JSON field, and Result.Binding when it binds
	early string  // sim.Result.StoppedEarly when a run stopped on it
	name  string  // in text: "TPOT p99"
	flag  string  // the advise flag that sets it
	goal  float64 // seconds, > 0 (set by SLO.objectives)
	what  string  // what more than 1% of are over it when a run stops early
	value func(*Outcome) float64
	band  func(*Result) *sim.Band
}

// latencies are the latency objectives advise knows, without their goals,
// in the order that breaks ties (binding).
var latencies = []objective{
	{field: "ttft_p99_s", early: "ttft_p99", name: "TTFT p99", flag: "--slo-ttft-p99", what: "requests",
		value: func(o *Outcome) float64 { return o.TTFTP99 }, band: func(r *Result) *sim.Band { return r.TTFTP99Band }},
	{field: "tpot_p99_s", early: "tpot_p99", name: "TPOT p99", flag: "--slo-tpot-p99", what: "requests",
		value: func(o *Outcome) float64 { return o.TPOTP99 }, band: func(r *Result) *sim.Band { return r.TPOTP99Band }},
	{field: "itl_p99_s", early: "itl_p99", name: "ITL p99", flag: "--slo-itl-p99", what: "inter-token gaps",
		value: func(o *Outcome) float64 { return o.ITLP99 }, band: func(r *Result) *sim.Band { return r.ITLP99Band }},
}

// objectives are slo's latency objectives, with their goals: TTFT p99 and
// TPOT p99, then ITL p99 when it is set (0: none).
func (slo SLO) objectives() []objective {
	goals := []float64{slo.TTFTP99, slo.TPOTP99, slo.ITLP99}
	var os []objective
	for i, ob := range latencies {
		if i < 2 || goals[i] > 0 {
			ob.goal = goals[i]
			os = append(os, ob)
		}
	}
	return os
}

// objective returns slo's objective whose field is field.
func (slo SLO) objective(field string) (objective, bool) {
	for _, ob := range slo.objectives() {
		if ob.field == field {
			return ob, true
		}
	}
	return objective{}, false
}

// latency is o's p99 of the latency objective named field (TPOT's for
// another).
func (o *Outcome) latency(field string) float64 {
	for _, ob := range latencies {
		if ob.field == field {
			return ob.value(o)
		}
	}
	return o.TPOTP99
}

// latencyBinding reports whether a Binding names a latency objective.
func latencyBinding(field string) bool {
	return slices.ContainsFunc(latencies, func(ob objective) bool { return ob.field == field })
}

// nearness is how near o came to slo: its p99s over their objectives, the
// largest (1 or less meets every objective), and the objective that sets
// it (the first of equals).
func (slo SLO) nearness(o *Outcome) (float64, objective) {
	os := slo.objectives()
	worst, at := 0.0, os[0]
	for i, ob := range os {
		if v := ob.value(o) / ob.goal; i == 0 || v > worst {
			worst, at = v, ob
		}
	}
	return worst, at
}

// earlyStop is the sim.EarlyStop of slo's objectives.
func (slo SLO) earlyStop() sim.EarlyStop {
	return sim.EarlyStop{OnFailure: true, TTFTP99: slo.TTFTP99, TPOTP99: slo.TPOTP99, ITLP99: slo.ITLP99}
}
