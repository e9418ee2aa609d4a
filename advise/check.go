// Checks of results read back from files. See doc.go for the overview.

package advise

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// check reports the first field of r that no search under in could have
// written: a digest ties a file's inputs together but not its results, so
// a shard or report edited by hand (or damaged) must not decide the
// recommendation. Rates lie in the range the search explores, from
// StartRPS halved BracketSteps times to StartRPS doubled as often (0 when
// nothing held), and are rates it tries (StartRPS × 2^(k/2^BisectSteps));
// a held candidate broke only above its sustainable rate and its figures
// there hold (Outcome.Check: no OOMs, nothing unfinished, p99s within the
// SLO); one that did not hold broke at some rate, with a reason; every
// figure is finite and non-negative; shares of memory lie in [0, 1];
// request counts add up to no more than the requests run; the evaluations
// are within the search's maximum. It returns the field's name and what is
// wrong with it, or "" when r is plausible.
func (r Result) check(in Inputs) (field, problem string) {
	s := in.Search
	if err := s.Validate(); err != nil {
		return "inputs.search", err.Error()
	}
	// The bracket's ends, with room for the float rounding of repeated
	// doubling and of round6 in the multiplier.
	const slack = 1e-9
	lo := s.StartRPS * math.Ldexp(1, -s.BracketSteps) * (1 - slack)
	hi := s.StartRPS * math.Ldexp(1, s.BracketSteps) * (1 + slack)
	// Every rate tried is the start rate times 2^(k/2^bisect_steps): the
	// bracket doubles or halves it, each bisection takes the geometric
	// mean of two such rates.
	steps := math.Ldexp(1, s.BisectSteps)
	rate := func(name string, v float64, zeroOK bool) (string, string) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return name, fmt.Sprintf("%v is not a number of requests per second", v)
		case v == 0 && zeroOK:
			return "", ""
		case v < lo || v > hi:
			return name, fmt.Sprintf("%g rps is outside the rates the search tries (%.6g to %.6g: start %g rps, %d bracket steps)",
				v, lo, hi, s.StartRPS, s.BracketSteps)
		}
		if k := math.Log2(v/s.StartRPS) * steps; math.Abs(k-math.Round(k)) > 1e-6 {
			return name, fmt.Sprintf("%g rps is not a rate the search tries (start %g rps × 2^(k/%g))", v, s.StartRPS, steps)
		}
		return "", ""
	}
	if f, p := rate("sustainable_rate_rps", r.SustainableRPS, true); f != "" {
		return f, p
	}
	if f, p := rate("failed_at_rps", r.FailedAtRPS, true); f != "" {
		return f, p
	}
	if r.Held != (r.SustainableRPS > 0) {
		return "held", fmt.Sprintf("%t with a sustainable rate of %g rps", r.Held, r.SustainableRPS)
	}
	if r.Held && r.FailedAtRPS != 0 && r.FailedAtRPS <= r.SustainableRPS {
		return "failed_at_rps", fmt.Sprintf("%g rps, not above the sustainable %g rps: a held rate is below every rate that broke", r.FailedAtRPS, r.SustainableRPS)
	}
	if !r.Held && r.FailedAtRPS == 0 && !strings.HasPrefix(r.FailReason, "cannot run") {
		return "failed_at_rps", "0, but nothing held: the lowest rate tried broke"
	}
	if (r.FailedAtRPS != 0) != (r.FailReason != "") && !strings.HasPrefix(r.FailReason, "cannot run") {
		return "fail_reason", fmt.Sprintf("%s with failed_at_rps %g: a rate that broke says why", untrusted.Quote(r.FailReason), r.FailedAtRPS)
	}
	if want := round6(r.SustainableRPS / s.StartRPS); math.Abs(r.Multiplier-want) > 1e-5*math.Max(want, 1) {
		return "rate_multiplier", fmt.Sprintf("%g, but the sustainable rate over the start rate is %g", r.Multiplier, want)
	}
	if r.Evaluations < 0 || r.Evaluations > s.MaxEvaluations() {
		return "evaluations", fmt.Sprintf("%d: want 0 to %d", r.Evaluations, s.MaxEvaluations())
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"ooms", int64(r.OOMs)}, {"activation_ooms", r.ActivationOOMs}, {"rejected", int64(r.Rejected)},
		{"unfinished", int64(r.Unfinished)}, {"completed", int64(r.Completed)}, {"requests", int64(r.Total)},
		{"preemptions", r.Preemptions}, {"peak_reserved_bytes", r.PeakReservedBytes}} {
		if c.v < 0 {
			return c.name, fmt.Sprintf("%d: must not be negative", c.v)
		}
	}
	if sum := int64(r.OOMs) + int64(r.Rejected) + int64(r.Unfinished) + int64(r.Completed); sum > int64(r.Total) {
		return "requests", fmt.Sprintf("%d, fewer than ooms + rejected + unfinished + completed (%d)", r.Total, sum)
	}
	for _, c := range []struct {
		name  string
		v     float64
		share bool
	}{{"frag_rate.p50", r.FragRate.P50, true}, {"frag_rate.p99", r.FragRate.P99, true}, {"health_min", r.HealthMin, true},
		{"ttft_p99_s", r.TTFTP99, false}, {"tpot_p99_s", r.TPOTP99, false}, {"itl_p99_s", r.ITLP99, false}, {"output_tokens_per_s", r.OutputTokensPerS, false}} {
		switch {
		case math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0:
			return c.name, fmt.Sprintf("%v: want a finite, non-negative number", c.v)
		case c.share && c.v > 1:
			return c.name, fmt.Sprintf("%v: want a share from 0 to 1", c.v)
		}
	}
	// A held candidate's figures are those of a rate that held: no OOMs,
	// nothing unfinished, p99s within the SLO (Outcome.Check).
	if r.Held {
		o := r.Outcome
		o.RateRPS = r.SustainableRPS
		if field, why := o.breaks(in.SLO); field != "" {
			return field, "the candidate held, but its figures at the sustainable rate do not: " + why
		}
	}
	return "", ""
}
