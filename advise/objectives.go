// The SLO's latency objectives, one table for the checks, the ranking of
// best efforts, the bands and the advice. See doc.go for the overview.

package advise

import "github.com/gpufrag/gpufrag/sim"

// objective is one latency objective of an SLO: a p99 no higher than goal.
type objective struct {
	field string  // the figure's JSON field, and Result.Binding when it binds
	early string  // sim.Result.StoppedEarly when a run stopped on it
	name  string  // in text: "TPOT p99"
	flag  string  // the advise flag that sets it
	goal  float64 // seconds, > 0
	what  string  // what more than 1% of are over it when a run stops early
	value func(*Outcome) float64
	band  func(*Result) *sim.Band
}

// objectives are slo's latency objectives: TTFT p99 and TPOT p99, then
// ITL p99 when it is set. Their order breaks ties (binding).
func (slo SLO) objectives() []objective {
	os := []objective{
		{"ttft_p99_s", "ttft_p99", "TTFT p99", "--slo-ttft-p99", slo.TTFTP99, "requests",
			func(o *Outcome) float64 { return o.TTFTP99 }, func(r *Result) *sim.Band { return r.TTFTP99Band }},
		{"tpot_p99_s", "tpot_p99", "TPOT p99", "--slo-tpot-p99", slo.TPOTP99, "requests",
			func(o *Outcome) float64 { return o.TPOTP99 }, func(r *Result) *sim.Band { return r.TPOTP99Band }},
	}
	if slo.ITLP99 > 0 {
		os = append(os, objective{"itl_p99_s", "itl_p99", "ITL p99", "--slo-itl-p99", slo.ITLP99, "inter-token gaps",
			func(o *Outcome) float64 { return o.ITLP99 }, func(r *Result) *sim.Band { return r.ITLP99Band }})
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
	switch field {
	case "ttft_p99_s":
		return o.TTFTP99
	case "itl_p99_s":
		return o.ITLP99
	}
	return o.TPOTP99
}

// latencyBinding reports whether a Binding names a latency objective.
func latencyBinding(field string) bool {
	return field == "ttft_p99_s" || field == "tpot_p99_s" || field == "itl_p99_s"
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
