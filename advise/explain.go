// Following the advice past the space, and explaining a TPOT objective
// that short outputs make unreachable. See doc.go for the overview.

package advise

import (
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/sim"
)

// Follow continues a sweep past its space as its advice says (Extend):
// round after round it runs the candidates Extend returns, with o but
// every candidate bisected to the end (Options.Prune off: they are the
// only ones that can hold), and builds the report again, until Extend
// returns none or budget candidates were added. It returns the inputs
// with the added candidates, their results after the others' and the
// report; onRound, when set, is told each round's candidates before they
// run. in and results are not modified.
func Follow(in Inputs, results []Result, eval Evaluator, o Options, budget int, onRound func([]Candidate)) (Inputs, []Result, *Report, error) {
	in.Candidates = slices.Clone(in.Candidates)
	results = slices.Clone(results)
	rep, err := NewReport(in, results)
	if err != nil {
		return in, results, nil, err
	}
	o.Prune = false
	for budget > 0 {
		next := Extend(rep, budget)
		if len(next) == 0 {
			break
		}
		if onRound != nil {
			onRound(next)
		}
		which := make([]int, len(next))
		for i := range which {
			which[i] = len(in.Candidates) + i
		}
		in.Candidates = append(in.Candidates, next...)
		more, err := Run(in.Candidates, which, eval, o)
		if err != nil {
			return in, results, nil, err
		}
		results = append(results, more...)
		budget -= len(next)
		if rep, err = NewReport(in, results); err != nil {
			return in, results, nil, err
		}
	}
	return in, results, rep, nil
}

// ShortOutputs explains a TPOT p99 objective that requests with few output
// tokens make unreachable: a request's TPOT is (E2E − TTFT) ÷ (output
// tokens − 1), the mean of its decode steps, so with 2 output tokens the
// one step after its first token decides it, and a step that carries other
// requests' prefills (up to max_num_batched_tokens tokens) is long.
// Report.ShortOutputs holds it (`short_outputs` in the JSON) when the best
// effort misses TPOT p99 and the requests with at most MaxOutput output
// tokens set it: alone (LongMeets, the others meet the objective) or for
// the most part (at least shortMost of the requests over the objective
// have at most MaxOutput output tokens, more than their share of all).
type ShortOutputs struct {
	// MaxOutput is the smallest of shortThresholds at which the requests
	// with more output tokens meet the objective and those with 2 to
	// MaxOutput do not; where no threshold splits them so, the smallest at
	// which the short requests are shortMost of those over the objective.
	MaxOutput int `json:"max_output_tokens"`
	// Requests is how many of the completed requests have at most
	// MaxOutput output tokens (those with 0 or 1 have no TPOT), Share
	// their share of the completed requests.
	Requests int     `json:"requests"`
	Share    float64 `json:"share"`
	// Over is how many requests have a TPOT over the objective, ShareOfOver
	// the share of them with at most MaxOutput output tokens.
	Over        int     `json:"over_objective"`
	ShareOfOver float64 `json:"share_of_over"`
	// TPOTP99Short is the TPOT p99 of the requests with 2 to MaxOutput
	// output tokens, TPOTP99Long of the others, in seconds, at RateRPS
	// (the best effort's lowest rate tried); LongMeets says the others
	// meet the objective.
	TPOTP99Short float64 `json:"tpot_p99_short_s"`
	TPOTP99Long  float64 `json:"tpot_p99_long_s"`
	LongMeets    bool    `json:"long_meets"`
	RateRPS      float64 `json:"rate_rps"`
}

// shortThresholds are the output lengths ExplainShortOutputs splits the
// requests at, smallest first: the TPOT of a request with N output tokens
// averages its N − 1 decode steps, so one long step weighs 1 ÷ (N − 1) of
// it, and a run of steps that carry a burst's prefills is averaged out
// only by outputs longer than the run (up to 64 tokens: beyond that an
// output is not short).
var shortThresholds = []int{2, 4, 8, 16, 32, 64}

// shortMost is the share of the requests over the objective that short
// requests must make for ExplainShortOutputs to say that they set it for
// the most part when the others miss it too: three quarters (chosen by
// hand, not tuned).
const shortMost = 0.75

// ExplainShortOutputs runs the best effort of rep once more at its lowest
// rate tried, keeping every request's figures (sim.Config.RequestTimes),
// when it misses the TPOT p99 objective, and says in Report.ShortOutputs
// and Report.Advice whether short outputs are why (see ShortOutputs; the
// short requests must also be at least 1% of those with a TPOT, enough to
// move a p99). Nothing changes when rep meets the SLO, another objective
// binds, or short outputs do not explain it. base and w are the engine
// config and workload the sweep ran (without EarlyStop).
func ExplainShortOutputs(rep *Report, base sim.Config, w *Workload) error {
	b := rep.Recommended
	if b == nil || b.MeetsSLO || b.Binding != "tpot_p99_s" || !(b.LowestRateRPS > 0) {
		return nil
	}
	cfg, err := b.Settings.Apply(base)
	if err != nil {
		return err
	}
	cfg.EarlyStop, cfg.RequestTimes = sim.EarlyStop{}, true
	reqs, err := w.at(b.Settings.Bucket, b.LowestRateRPS)
	if err != nil {
		return err
	}
	e, err := sim.New(cfg, reqs)
	if err != nil {
		return err
	}
	res, err := e.Run()
	if err != nil {
		return err
	}
	so := splitShort(res.RequestTimes, rep.Inputs.SLO.TPOTP99)
	if so == nil {
		return nil
	}
	so.RateRPS = b.LowestRateRPS
	rep.ShortOutputs = so
	rep.Advice += ". " + so.text(b.Settings, rep.Inputs.SLO.TPOTP99)
	return nil
}

// splitShort finds the split ExplainShortOutputs reports, nil when none
// explains the objective: TPOTs are those of times, objective the TPOT p99
// objective in seconds.
func splitShort(times []sim.RequestTime, objective float64) *ShortOutputs {
	withTPOT, over := 0, 0
	for _, t := range times {
		if t.HasTPOT {
			withTPOT++
			if t.TPOT > objective {
				over++
			}
		}
	}
	var most *ShortOutputs
	for _, n := range shortThresholds {
		var short, long []float64
		upTo, overShort := 0, 0
		for _, t := range times {
			if t.Output <= n {
				upTo++
			}
			switch {
			case !t.HasTPOT:
			case t.Output <= n:
				short = append(short, t.TPOT)
				if t.TPOT > objective {
					overShort++
				}
			default:
				long = append(long, t.TPOT)
			}
		}
		if len(short) == 0 || len(long) == 0 || 100*len(short) < withTPOT || over == 0 {
			continue
		}
		s, l := sim.LatencyOf(short).P99, sim.LatencyOf(long).P99
		so := &ShortOutputs{MaxOutput: n, Requests: upTo, Share: round6(float64(upTo) / float64(len(times))),
			Over: over, ShareOfOver: round6(float64(overShort) / float64(over)), TPOTP99Short: s, TPOTP99Long: l, LongMeets: l <= objective}
		switch {
		case s > objective && so.LongMeets:
			return so
		case most == nil && s > objective && so.ShareOfOver >= shortMost && overShort*withTPOT > len(short)*over:
			most = so
		}
	}
	return most
}

// text says it in words, with what would help for the best effort s.
func (so *ShortOutputs) text(s Settings, objective float64) string {
	lead, others := "Short outputs set it", fmt.Sprintf("%s for the others, which meet the %s objective", secs(so.TPOTP99Long), secs(objective))
	if !so.LongMeets {
		lead, others = "Short outputs set it for the most part", fmt.Sprintf("%s for the others, which miss the %s objective too but less often", secs(so.TPOTP99Long), secs(objective))
	}
	out := fmt.Sprintf("%s: %.0f%% of the requests have at most %d output tokens, and they are %.0f%% of the %s over the objective; "+
		"at %s those with 2 to %d have TPOT p99 %s against %s. A request's TPOT is (E2E − TTFT) ÷ (output tokens − 1), "+
		"the mean of its decode steps: with 2 output tokens the one step after its first token decides it, a step that carries "+
		"other requests' prefills (up to max_num_batched_tokens tokens) is long, and only longer outputs average such steps out",
		lead, 100*so.Share, so.MaxOutput, 100*so.ShareOfOver, human.Count(int64(so.Over), "request"),
		rps(so.RateRPS), so.MaxOutput, secs(so.TPOTP99Short), others)
	help := "a smaller token budget shortens those steps (--max-num-batched-tokens)"
	if _, why, ok := limits[0].step(s, -1); !ok && why != "" {
		help = fmt.Sprintf("the token budget is at vLLM's floor already (max_num_batched_tokens %d = max_num_seqs; a smaller --max-num-seqs allows a smaller one)", limits[0].get(s))
	}
	if !so.LongMeets {
		return out + ". What would help: " + help
	}
	return out + fmt.Sprintf(". What would help: %s, or an objective held by the requests with more than %d output tokens (their TPOT p99 is %s here)",
		help, so.MaxOutput, secs(so.TPOTP99Long))
}
