// The search for a candidate's sustainable rate. See doc.go for the overview.

package advise

import (
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"math"
)

// SLO is the latency objective a sustainable rate must hold, in seconds.
type SLO struct {
	TTFTP99 float64 `json:"ttft_p99_s"`
	TPOTP99 float64 `json:"tpot_p99_s"`
	// ITLP99 bounds the p99 of the gaps between a request's tokens as a
	// streaming client sees them (sim.Result.ITL): the stalls a prefill
	// puts into the decodes of its step, which a request's TPOT averages
	// away. 0: not an objective.
	ITLP99 float64 `json:"itl_p99_s,omitempty"`
}

// DefaultSLO is 2 s TTFT p99 and 0.1 s TPOT p99: an interactive chat
// service (a first token within a couple of seconds; 10 tokens/s, faster
// than people read).
func DefaultSLO() SLO { return SLO{TTFTP99: 2, TPOTP99: 0.1} }

// Outcome is what one simulation of a candidate at one rate measured.
type Outcome struct {
	RateRPS          float64  `json:"-"`               // the rate simulated (Result.SustainableRPS in JSON)
	OOMs             int      `json:"ooms"`            // requests failed by an out-of-memory error
	ActivationOOMs   int64    `json:"activation_ooms"` // steps whose activation buffers ran out of memory
	Rejected         int      `json:"rejected"`        // requests that could never fit (too long or larger than memory)
	Unfinished       int      `json:"unfinished"`
	Completed        int      `json:"completed"`
	Total            int      `json:"requests"`
	Preemptions      int64    `json:"preemptions"`
	FragRate         FragRate `json:"frag_rate"`
	HealthMin        float64  `json:"health_min"`
	TTFTP99          float64  `json:"ttft_p99_s"`
	TPOTP99          float64  `json:"tpot_p99_s"`
	ITLP99           float64  `json:"itl_p99_s"` // over every gap between tokens
	OutputTokensPerS float64  `json:"output_tokens_per_s"`
	// OfferedTokensPerS is what the rate asks of the engine: the rate
	// times the trace's mean output tokens (0: not known, as from a fake
	// evaluator or a shard of an older gpufrag). An output throughput
	// well below it means the engine drained the trace after its
	// arrivals ended (Drains).
	OfferedTokensPerS float64 `json:"offered_output_tokens_per_s,omitempty"`
	PeakReservedBytes int64   `json:"peak_reserved_bytes"`
	// StoppedEarly is sim.Result.StoppedEarly: the run ended once it was
	// certain to fail ("oom", "activation_oom", "ttft_p99", "tpot_p99", "itl_p99"),
	// so its figures are those of the run so far. Not written out: a
	// search re-runs a failing outcome it reports whole (Options.Rerun).
	StoppedEarly string `json:"-"`
	// BatchSizeMean is the run's mean requests per step: the load an
	// error band is chosen for (AddBands).
	BatchSizeMean float64 `json:"batch_size_mean,omitempty"`
}

// FragRate is the distribution of the fragmentation rate (1 − health)
// over the run's samples, as in `gpufrag simulate --json`.
type FragRate struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Check says whether o is sustainable under slo, and if not, why: OOM
// failures or activation OOMs first (memory is what this tool is about),
// then requests left unfinished, then the SLO. Rejections are not checked
// here: the engine rejects only requests that can never fit, whatever the
// rate (Rank compares them across candidates).
func (o Outcome) Check(slo SLO) (ok bool, why string) {
	field, why := o.breaks(slo)
	return field == "", why
}

// breaks is Check with the result field at fault ("ooms", "ttft_p99_s"...),
// "" when o holds.
func (o Outcome) breaks(slo SLO) (field, why string) {
	early := ""
	if o.StoppedEarly != "" {
		early = " (the run stopped there: its outcome was certain)"
	}
	os := slo.objectives()
	for _, ob := range os {
		if o.StoppedEarly == ob.early {
			return ob.field, fmt.Sprintf("SLO broken at %.3g rps: %s > %gs, more than 1%% of %s over it%s", o.RateRPS, ob.name, ob.goal, ob.what, early)
		}
	}
	switch {
	case o.StoppedEarly == "oom":
		return "ooms", fmt.Sprintf("OOM failures at %.3g rps%s", o.RateRPS, early)
	case o.StoppedEarly == "activation_oom":
		return "activation_ooms", fmt.Sprintf("activation OOMs at %.3g rps%s", o.RateRPS, early)
	case o.OOMs > 0:
		return "ooms", fmt.Sprintf("%d OOM failures at %.3g rps", o.OOMs, o.RateRPS)
	case o.ActivationOOMs > 0:
		return "activation_ooms", fmt.Sprintf("%d activation OOMs at %.3g rps", o.ActivationOOMs, o.RateRPS)
	case o.Unfinished > 0:
		return "unfinished", fmt.Sprintf("%s unfinished at %.3g rps", human.Count(int64(o.Unfinished), "request"), o.RateRPS)
	}
	for _, ob := range os {
		if v := ob.value(&o); v > ob.goal {
			return ob.field, fmt.Sprintf("SLO broken at %.3g rps: %s %.3gs > %gs", o.RateRPS, ob.name, v, ob.goal)
		}
	}
	return "", ""
}

// Search bounds the rate search. Rates are absolute requests per second;
// the trace's arrivals are rescaled to each (workload.Rescale).
type Search struct {
	// StartRPS is the first rate tried (the CLI uses the trace's own mean
	// rate, so multiplier 1 is the recorded load).
	StartRPS float64 `json:"start_rps"`
	// BracketSteps bounds the doublings (when StartRPS holds) or halvings
	// (when it does not) that look for a rate on the other side. 5: a
	// factor of 32 either way, enough to go from a recorded peak-hour trace
	// to the load a small GPU sustains.
	BracketSteps int `json:"bracket_steps"`
	// BisectSteps is the number of geometric bisections inside the
	// bracket [r, 2r]; each halves the bracket in log space, so 4 steps
	// resolve the rate to a factor of 2^(1/16), about 4.4%.
	BisectSteps int `json:"bisect_steps"`
}

// DefaultSearch returns the documented bounds with StartRPS unset.
func DefaultSearch() Search { return Search{BracketSteps: 5, BisectSteps: 4} }

// MaxEvaluations is the most simulations one candidate's search runs.
func (s Search) MaxEvaluations() int { return 1 + s.BracketSteps + s.BisectSteps }

// Validate checks the bounds.
func (s Search) Validate() error {
	switch {
	case !(s.StartRPS > 0) || math.IsInf(s.StartRPS, 0):
		return fmt.Errorf("%w: start rate %v: want a positive number of requests per second", ErrBadSpace, s.StartRPS)
	case s.BracketSteps < 0 || s.BracketSteps > 30:
		return fmt.Errorf("%w: bracket steps %d: want 0 to 30", ErrBadSpace, s.BracketSteps)
	case s.BisectSteps < 0 || s.BisectSteps > 30:
		return fmt.Errorf("%w: bisect steps %d: want 0 to 30", ErrBadSpace, s.BisectSteps)
	}
	return nil
}

// Found is the result of one candidate's search.
type Found struct {
	// Sustainable is the outcome at the highest rate that held; its
	// RateRPS is 0 when no rate tried held (then Outcome is the lowest
	// failing one, for the evidence).
	Sustainable Outcome
	// Held is false when no rate tried held.
	Held bool
	// Failed is the outcome at the lowest rate that broke, with Why; nil
	// when every rate tried held (the search limit was reached first).
	Failed      *Outcome
	Why         string
	Evaluations int
}

// ErrEvaluate wraps an evaluator's error with the rate it was asked for.
var ErrEvaluate = errors.New("advise: evaluation failed")

// FindSustainable searches for the highest rate at which eval's outcome
// passes Check: from s.StartRPS it doubles while the rate holds (or halves
// while it does not) for at most s.BracketSteps steps, then bisects the
// bracket [lo, hi] geometrically s.BisectSteps times. The rates tried
// depend only on s and on which rates held, so the search is deterministic
// for a deterministic eval. It assumes "holds" is monotone in the rate
// (true of queueing delay; OOMs under heavy preemption mostly are).
func FindSustainable(eval func(rate float64) (Outcome, error), slo SLO, s Search) (Found, error) {
	if err := s.Validate(); err != nil {
		return Found{}, err
	}
	var f Found
	try := func(rate float64) (bool, error) { return f.try(eval, slo, rate) }
	lo, hi := 0.0, 0.0 // lo held, hi broke; 0 = not found
	rate := s.StartRPS
	ok, err := try(rate)
	if err != nil {
		return f, err
	}
	if ok {
		lo = rate
		for range s.BracketSteps {
			rate *= 2
			if ok, err = try(rate); err != nil {
				return f, err
			}
			if !ok {
				hi = rate
				break
			}
			lo = rate
		}
	} else {
		hi = rate
		for range s.BracketSteps {
			rate /= 2
			if ok, err = try(rate); err != nil {
				return f, err
			}
			if ok {
				lo = rate
				break
			}
			hi = rate
		}
	}
	if err := f.bisect(eval, slo, s.BisectSteps, lo, hi); err != nil {
		return f, err
	}
	if !f.Held {
		f.Sustainable = *f.Failed
		f.Sustainable.RateRPS = 0
	}
	return f, nil
}

// ResumeSustainable continues a search that FindSustainable ran with
// fewer bisections (a coarse pass): it bisects f's bracket, from the
// highest rate that held to the lowest that broke, `more` times, trying
// exactly the rates a search with that many more bisections would have
// tried. A search that did not bracket a rate (nothing held, or
// everything did) is returned as it is.
func ResumeSustainable(eval func(rate float64) (Outcome, error), slo SLO, f Found, more int) (Found, error) {
	if !f.Held || f.Failed == nil || more <= 0 {
		return f, nil
	}
	err := f.bisect(eval, slo, more, f.Sustainable.RateRPS, f.Failed.RateRPS)
	return f, err
}

// try evaluates one rate and records it in f: the highest that held, the
// lowest that broke and why.
func (f *Found) try(eval func(rate float64) (Outcome, error), slo SLO, rate float64) (bool, error) {
	o, err := eval(rate)
	f.Evaluations++
	if err != nil {
		return false, fmt.Errorf("%w at %.4g rps: %w", ErrEvaluate, rate, err)
	}
	o.RateRPS = rate
	ok, why := o.Check(slo)
	if ok {
		if !f.Held || rate > f.Sustainable.RateRPS {
			f.Sustainable, f.Held = o, true
		}
	} else if f.Failed == nil || rate < f.Failed.RateRPS {
		oc := o
		f.Failed, f.Why = &oc, why
	}
	return ok, nil
}

// bisect halves the bracket [lo, hi) geometrically steps times (nothing
// when either end is 0: no bracket).
func (f *Found) bisect(eval func(rate float64) (Outcome, error), slo SLO, steps int, lo, hi float64) error {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	for range steps {
		mid := math.Sqrt(lo * hi)
		ok, err := f.try(eval, slo, mid)
		if err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}
