// Rates a short trace cannot show to be sustainable. See doc.go for the
// overview.

package advise

import (
	"fmt"
	"time"

	"github.com/gpufrag/gpufrag/internal/human"
)

// drainShare is the share of the offered output throughput below which a
// run counts as drained (Outcome.Drains): the engine was still working
// off the trace after its last arrival for more than a fifth of the run.
// At a rate the engine sustains, the run outlasts the arrivals by about
// one request's latency, a small part of a long trace's span; at a rate it
// does not, the backlog grows with the trace and the run ends long after
// the arrivals (the 200-request vLLM sharegpt run at 25.9 req/s: 29% of
// what the rate offers, where 3,000 requests of the same distribution
// sustain 1.05 req/s). Chosen by hand, not tuned.
const drainShare = 0.8

// Drains reports whether o's output throughput is below drainShare of
// what its rate offers (OfferedTokensPerS; false when that is unknown).
func (o Outcome) Drains() bool {
	return o.OfferedTokensPerS > 0 && o.OutputTokensPerS < drainShare*o.OfferedTokensPerS
}

// drainWarnings warns when the recommendation's sustainable rate drains
// (Outcome.Drains): the trace ended before a queue could show, so the rate
// holds for the trace's length, not beyond; and says how many other
// candidates' rates drain too. None for a best effort (no rate held).
func drainWarnings(best *Result, rs []Result) []string {
	if best == nil || !best.Held || !best.Drains() || rejectsMost(best.Outcome) {
		return nil
	}
	o := best.Outcome
	w := fmt.Sprintf("at %s the recommendation's simulated output is %.0f tokens/s, %.0f%% of the %.0f tokens/s the rate offers (%s × %.1f mean output tokens): "+
		"its %s arrive in %s and the engine works them off after, so the rate holds for the trace's length, not beyond it, and a longer run would queue; "+
		"give a longer trace (more requests, a larger --max-rows) for a rate the engine sustains",
		rps(best.SustainableRPS), o.OutputTokensPerS, 100*o.OutputTokensPerS/o.OfferedTokensPerS, o.OfferedTokensPerS, rps(best.SustainableRPS),
		o.OfferedTokensPerS/best.SustainableRPS, human.Count(int64(o.Total), "request"), span(o.Total, best.SustainableRPS))
	n := 0
	for i := range rs {
		if r := &rs[i]; r.Index != best.Index && r.Held && r.Drains() {
			n++
		}
	}
	if n > 0 {
		w += fmt.Sprintf("; the rates of %s drain the same way", human.Count(int64(n), "other candidate"))
	}
	return []string{w}
}

// rejectsMost reports whether o turned away more than half its requests
// as never fitting: its output throughput is then short of what the rate
// offers because of them, not a queue (drainWarnings would misread it).
func rejectsMost(o Outcome) bool { return o.Total > 0 && 2*o.Rejected > o.Total }

// rejectWarnings warns when the recommendation turned requests away as
// never fitting (longer than the context the engine is given, or larger
// than its KV cache): every figure describes the others only, and each
// eligible candidate turns away as many (Result.Eligible). maxContext is
// --max-context (0: the model's own), which the warning names when the
// user set it.
func rejectWarnings(best *Result, maxContext int) []string {
	if best == nil || best.Rejected == 0 || best.Total == 0 {
		return nil
	}
	o := best.Outcome
	w := fmt.Sprintf("%d of %s (%.1f%%) could never be served (longer than the context or than the KV cache holds) and were turned away, by the recommendation and by every eligible candidate: its figures describe the other %d",
		o.Rejected, human.Count(int64(o.Total), "request"), 100*float64(o.Rejected)/float64(o.Total), o.Total-o.Rejected)
	if maxContext > 0 {
		w += fmt.Sprintf("; --max-context %d turns away every request longer than that: a larger one (the model's own, without the flag) serves more", maxContext)
	}
	return []string{w}
}

// span is how long n requests take to arrive at rate, in human units.
func span(n int, rate float64) string {
	d := time.Duration(float64(max(n-1, 0)) / rate * float64(time.Second))
	return d.Round(100 * time.Millisecond).String()
}
