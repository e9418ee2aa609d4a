// Results, ranking and the recommendation. See doc.go for the overview.

package advise

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/sim"
)

// Result is one candidate's search result. Its JSON fields are the
// `gpufrag advise --json` contract: the settings, the sustainable rate and
// the figures measured there (ooms, preemptions, frag_p50/p99, health_min,
// ttft_p99_s, tpot_p99_s, output_tokens_per_s...), where the search broke,
// and, once ranked, the rank and the evidence.
type Result struct {
	Index int `json:"index"`
	Candidate
	// SustainableRPS is the highest rate tried that held (0: none held).
	SustainableRPS float64 `json:"sustainable_rate_rps"`
	// Multiplier is SustainableRPS over the trace's own rate.
	Multiplier float64 `json:"rate_multiplier"`
	// Held is false when even the lowest rate tried broke; the figures
	// are then those of the lowest rate tried.
	Held bool `json:"held"`
	Outcome
	// The error bands (AddBands) of the sustainable rate, the p99s and
	// the output throughput; absent when none were added.
	SustainableBand      *sim.Band `json:"sustainable_rate_band,omitempty"`
	TTFTP99Band          *sim.Band `json:"ttft_p99_band,omitempty"`
	TPOTP99Band          *sim.Band `json:"tpot_p99_band,omitempty"`
	ITLP99Band           *sim.Band `json:"itl_p99_band,omitempty"`
	OutputTokensPerSBand *sim.Band `json:"output_tokens_per_s_band,omitempty"`
	// FailedAtRPS is the lowest rate tried that broke, FailReason why;
	// both empty when every rate tried held.
	FailedAtRPS float64 `json:"failed_at_rps,omitempty"`
	FailReason  string  `json:"fail_reason,omitempty"`
	Evaluations int     `json:"evaluations"`

	// Set by NewReport.
	Eligible bool   `json:"eligible"`
	Rank     int    `json:"rank"`
	Evidence string `json:"evidence"`
	// MeetsSLO is true for an eligible candidate: some rate held the SLO
	// with no OOMs. For one that is not, Binding names what broke at the
	// lowest rate tried ("ttft_p99_s", "tpot_p99_s", "itl_p99_s", "ooms",
	// "activation_ooms", "unfinished", "cannot_run", "rejections",
	// "not_deployable"), and for an SLO, BestValue is the p99 it reached
	// there (seconds) at LowestRateRPS: the SLO it would meet.
	MeetsSLO      bool    `json:"meets_slo"`
	Binding       string  `json:"binding,omitempty"`
	BestValue     float64 `json:"best_value,omitempty"`
	LowestRateRPS float64 `json:"lowest_rate_rps,omitempty"`
	// Changes are the settings that differ from the engine's defaults
	// (Settings.Changes), which break ties.
	Changes []string `json:"changes"`
}

// TraceInfo identifies the workload.
type TraceInfo struct {
	File     string `json:"file"` // base name
	SHA256   string `json:"sha256"`
	Format   string `json:"format"`
	Requests int    `json:"requests"`
	Skipped  int    `json:"skipped_rows"`
	MaxRows  int    `json:"max_rows"`
	// Run is the benchmark run of a file of several (1-based, --run);
	// absent (0) for a file of one.
	Run       int     `json:"run,omitempty"`
	NativeRPS float64 `json:"native_rate_rps"`
	// Arrivals says where NativeRPS's arrivals come from when the trace
	// did not record them: "assigned" (a trace without times: Poisson at
	// 1 req/s, untimedRate) or "drawn" (a benchmark run without start
	// times: drawn as its client drew them, at RequestRate, the run's
	// request_rate); absent for the trace's own.
	Arrivals    string  `json:"arrivals,omitempty"`
	RequestRate float64 `json:"request_rate,omitempty"`
}

// Inputs is everything that decides a sweep's results; its digest ties
// shards together.
type Inputs struct {
	Trace TraceInfo `json:"trace"`
	Model string    `json:"model"`
	// ModelID is the model's Hugging Face id for the deploy command (a
	// benchmark run's model id where it agrees with the model, else a
	// preset's repository or a config's _name_or_path), empty when
	// unknown.
	ModelID string `json:"model_id,omitempty"`
	GPU     string `json:"gpu"`
	TP      int    `json:"tp"`
	KVDType string `json:"kv_dtype,omitempty"`
	// WeightDType is --weight-dtype's type (a quantized checkpoint's);
	// empty for the model's own.
	WeightDType string `json:"weight_dtype,omitempty"`
	MaxContext  int    `json:"max_context,omitempty"`
	// StepTime is the step-time model the candidates ran under
	// (sim.StepTimeJoint or sim.StepTimeRoofline), EngineVersion the
	// vLLM release whose overheads the joint model's profile has.
	StepTime      string `json:"step_time,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
	SLO           SLO    `json:"slo"`
	Search        Search `json:"search"`
	Space         Space  `json:"space"`
	// RefinedFrom is the digest of the first-stage report a refinement
	// (Refine) crossed; empty for a first stage.
	RefinedFrom string      `json:"refined_from,omitempty"`
	Candidates  []Candidate `json:"candidates,omitempty"`
}

// Digest is the hex SHA-256 of in's JSON encoding.
func Digest(in Inputs) string {
	b, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("advise: inputs do not encode: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Report is the whole advice: `gpufrag advise --json`.
type Report struct {
	// Recommended is the best eligible candidate; when none is eligible,
	// the best effort (MeetsSLO false): the candidate that comes nearest
	// the SLO. Nil only when no candidate could run at all.
	Recommended *Result `json:"recommended"`
	RunnerUp    *Result `json:"runner_up"`
	// MeetsSLO repeats Recommended.MeetsSLO (false with no recommendation).
	MeetsSLO bool `json:"meets_slo"`
	// Candidates in index order, ranked.
	Candidates []Result `json:"candidates"`
	Reason     string   `json:"reason"`
	// Advice says what to change when the recommendation misses the SLO
	// (empty when it meets it).
	Advice string `json:"advice,omitempty"`
	// ShortOutputs, when the best effort misses TPOT p99 because of
	// requests with few output tokens, says so with figures
	// (ExplainShortOutputs, which the CLI runs after the sweep; absent
	// otherwise).
	ShortOutputs *ShortOutputs `json:"short_outputs,omitempty"`
	// WithinBand lists the candidates (by index) whose ranked figure and
	// the recommendation's are within each other's error band, best
	// ranked first, and BandNote says so (AddBands; absent otherwise).
	WithinBand []int  `json:"within_band,omitempty"`
	BandNote   string `json:"band_note,omitempty"`
	// Warnings say where the figures mislead: requests the recommendation
	// turned away as never fitting, whom its figures leave out; a
	// recommended rate whose run drained the trace after its arrivals
	// ended (Outcome.Drains), so the trace is too short to show it
	// sustained (not said when most requests were turned away). Absent
	// when none.
	Warnings []string `json:"warnings,omitempty"`
	// Deploy applies the recommendation (NewDeploy: what the text's "To
	// deploy it" lines print); absent with no recommendation.
	Deploy *Deploy `json:"deploy,omitempty"`
	// TieTolerance is the ratio of sustainable rates within which two
	// candidates count as equal: the search's resolution,
	// 2^(1/2^bisect_steps) (4.4% with the default 4 bisections).
	TieTolerance float64 `json:"tie_tolerance"`
	Inputs       Inputs  `json:"inputs"` // without the candidate list
	Digest       string  `json:"digest"`
}

// isOracle reports a strategy no real engine can deploy: it knows every
// output length in advance.
func isOracle(kv strategy.Spec) bool { return strings.HasSuffix(kv.String(), ":oracle") }

// NewReport ranks results (one per candidate of in, any order) and picks
// the recommendation. A candidate is eligible when some rate held with no
// OOM failures and no activation OOMs, it rejects no more requests than
// the candidate rejecting fewest (rejections are requests that can never
// fit; a setting that turns away more of the workload does not serve it),
// and it is deployable (not contiguous-max:oracle).
//
// Eligible candidates rank first. Those whose sustainable rate is within
// the search's resolution of the best (TieTolerance: the rates are only
// known to one bisection step) are tied, and among them fewer changes from
// the engine's defaults win (Settings.Changes), then stock before
// experimental, then the higher rate, lower fragmentation p99, lower peak
// reserved memory and candidate index; the other eligible candidates
// follow by sustainable rate, then the same keys. The candidates that are
// not eligible follow: first those of the engine in use (Space.InEngine)
// that ran without OOMs, rejections beyond the fewest or research-only
// settings, nearest the SLO at the lowest rate tried (the largest of p99 ÷
// objective), then the rest, those of the engine in use first, by
// sustainable rate and index. With no eligible candidate, the first of
// those is recommended as the best effort (MeetsSLO false) when it is a
// setting of the engine in use: a best effort is never another engine's.
func NewReport(in Inputs, results []Result) (*Report, error) {
	n := len(in.Candidates)
	if len(results) != n {
		return nil, fmt.Errorf("%w: %d results for %d candidates", ErrBadSpace, len(results), n)
	}
	rs := slices.Clone(results)
	slices.SortFunc(rs, func(a, b Result) int { return cmp.Compare(a.Index, b.Index) })
	for i := range rs {
		if rs[i].Index != i {
			return nil, fmt.Errorf("%w: results do not cover candidate %d exactly once", ErrBadSpace, i)
		}
		if !rs[i].Candidate.Equal(in.Candidates[i]) {
			return nil, fmt.Errorf("%w: result %d is for %s, candidate %d is %s", ErrBadSpace, i, rs[i].Settings, i, in.Candidates[i].Settings)
		}
	}
	minRej := -1
	for _, r := range rs {
		if r.Held && (minRej < 0 || r.Rejected < minRej) {
			minRej = r.Rejected
		}
	}
	if minRej < 0 { // nothing held: the fewest any candidate that ran rejected
		for _, r := range rs {
			if !strings.HasPrefix(r.FailReason, "cannot run") && (minRej < 0 || r.Rejected < minRej) {
				minRej = r.Rejected
			}
		}
	}
	best := 0.0
	for i := range rs {
		r := &rs[i]
		r.Eligible = r.Held && r.OOMs == 0 && r.ActivationOOMs == 0 && r.Rejected == minRej && !isOracle(r.Settings.KV)
		r.MeetsSLO = r.Eligible
		r.Changes = r.Settings.Changes()
		if r.Changes == nil {
			r.Changes = []string{}
		}
		if !r.Eligible {
			r.Binding, r.BestValue, r.LowestRateRPS = binding(r, in.SLO, minRej)
		}
		r.Evidence = evidence(r, minRej, in.Space)
		if r.Eligible {
			best = max(best, r.SustainableRPS)
		}
	}
	tol := tieTolerance(in.Search)
	own := func(r *Result) bool { return in.Space.InEngine(r.Settings.KV) }
	tied := func(r *Result) bool { return r.Eligible && r.SustainableRPS*tol >= best*(1-1e-12) }
	nearness := func(r *Result) (float64, bool) {
		if !latencyBinding(r.Binding) {
			return 0, false
		}
		v, _ := in.SLO.nearness(&r.Outcome)
		return v, true
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &rs[i], &rs[j]
		if c := boolFirst(a.Eligible, b.Eligible); c != 0 {
			return c
		}
		if a.Eligible {
			if c := boolFirst(tied(a), tied(b)); c != 0 {
				return c
			}
			if tied(a) {
				if c := cmp.Compare(len(a.Changes), len(b.Changes)); c != 0 {
					return c
				}
				if c := boolFirst(!a.Experimental, !b.Experimental); c != 0 {
					return c
				}
			}
			if c := cmp.Compare(b.SustainableRPS, a.SustainableRPS); c != 0 {
				return c
			}
			if c := cmp.Compare(a.FragRate.P99, b.FragRate.P99); c != 0 {
				return c
			}
			if c := cmp.Compare(a.PeakReservedBytes, b.PeakReservedBytes); c != 0 {
				return c
			}
			return cmp.Compare(a.Index, b.Index)
		}
		na, oka := nearness(a)
		nb, okb := nearness(b)
		oka = oka && !a.Experimental && own(a)
		okb = okb && !b.Experimental && own(b)
		if c := boolFirst(oka, okb); c != 0 {
			return c
		}
		if oka {
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(len(a.Changes), len(b.Changes)); c != 0 {
				return c
			}
		}
		if c := boolFirst(own(a), own(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.SustainableRPS, a.SustainableRPS); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	for pos, i := range order {
		rs[i].Rank = pos + 1
	}
	rep := &Report{Candidates: rs, Digest: Digest(in), TieTolerance: tol}
	rep.Inputs = in
	rep.Inputs.Candidates = nil
	if n > 0 {
		first := rs[order[0]]
		_, near := nearness(&first)
		memory := first.Binding == "ooms" || first.Binding == "activation_ooms" || first.Binding == "unfinished"
		if first.Eligible || (own(&first) && ((near && !first.Experimental) || memory)) {
			rep.Recommended = &first
			rep.MeetsSLO = first.MeetsSLO
		}
		if rep.Recommended != nil && n > 1 && (rs[order[1]].Eligible == first.Eligible) {
			ru := rs[order[1]]
			rep.RunnerUp = &ru
		}
	}
	rep.Reason = reason(rep.Recommended, rep.RunnerUp, tol)
	if b := rep.Recommended; b != nil && b.MeetsSLO && b.Group == groupExtend {
		rep.Reason += "; " + pastSpace(rs, in.Space)
	}
	rep.Advice = advice(rep.Recommended, rs, in.SLO)
	rep.Warnings = append(rejectWarnings(rep.Recommended, in.MaxContext), drainWarnings(rep.Recommended, rs)...)
	if b := rep.Recommended; b != nil {
		d := NewDeploy(b.Settings, in)
		rep.Deploy = &d
	}
	return rep, nil
}

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// tieTolerance is the search's resolution: one bisection step of the
// bracket [r, 2r] in log space, 2^(1/2^bisect), or 2 with no bisection.
func tieTolerance(s Search) float64 {
	return math.Pow(2, 1/math.Pow(2, float64(s.BisectSteps)))
}

// binding says what kept r from being eligible: at its lowest rate tried
// (its figures when no rate held), the first of Check's conditions that
// failed, and for an SLO the p99 it reached and that rate.
func binding(r *Result, slo SLO, minRej int) (string, float64, float64) {
	switch {
	case strings.HasPrefix(r.FailReason, "cannot run"):
		return "cannot_run", 0, 0
	case isOracle(r.Settings.KV):
		return "not_deployable", 0, 0
	case r.Held && r.Rejected > minRej:
		return "rejections", 0, 0
	case r.Held:
		return "", 0, 0
	}
	rate := r.FailedAtRPS // with no rate held, the lowest tried
	switch {
	case r.OOMs > 0:
		return "ooms", 0, rate
	case r.ActivationOOMs > 0:
		return "activation_ooms", 0, rate
	case r.Unfinished > 0:
		return "unfinished", 0, rate
	case r.Rejected > minRej:
		return "rejections", 0, rate
	}
	_, ob := slo.nearness(&r.Outcome)
	return ob.field, ob.value(&r.Outcome), rate
}

// evidence says in one line why r stands where it does, in human units.
func evidence(r *Result, minRej int, sp Space) string {
	var parts []string
	switch {
	case !r.Held && strings.HasPrefix(r.FailReason, "cannot run"):
		parts = append(parts, r.FailReason)
	case !r.Held:
		parts = append(parts, "no rate held: "+r.FailReason+" (the lowest rate tried)")
	case isOracle(r.Settings.KV):
		parts = append(parts, "not deployable: contiguous-max:oracle knows every output length in advance")
	case r.Rejected > minRej:
		parts = append(parts, fmt.Sprintf("rejects %s that can never fit (the best settings reject %d)", human.Count(int64(r.Rejected), "request"), minRej))
	}
	if r.Held {
		parts = append(parts, fmt.Sprintf("sustains %s (%.3g× the trace) with peak reserved %s", rps(r.SustainableRPS), r.Multiplier,
			mem.FormatBytes(r.PeakReservedBytes)))
		if r.FailReason != "" {
			parts = append(parts, "limit: "+r.FailReason)
		} else {
			parts = append(parts, "held at every rate tried (the search's upper limit)")
		}
	}
	if r.Experimental {
		parts = append(parts, "experimental: "+strings.Join(r.Settings.Research(), "; "))
	}
	if !sp.InEngine(r.Settings.KV) {
		parts = append(parts, fmt.Sprintf("another engine than the one in use (%s KV, not %s): never a best effort", r.Settings.KV.Family(), sp.KVs[0].Family()))
	}
	return strings.Join(parts, "; ")
}

// upperLimit reports whether r's rate is only the search's upper limit:
// it held at every rate tried, so it sustains that much or more.
func upperLimit(r *Result) bool { return r.Held && r.FailReason == "" && r.FailedAtRPS == 0 }

// upperLimitNote says how to search past the upper limit.
const upperLimitNote = "it held at every rate tried, the search's upper limit: a higher --start-rate or more --bracket-steps search further"

// rateOf writes r's sustainable rate, "at least" it when it is only the
// search's upper limit (upperLimit).
func rateOf(r *Result) string {
	if upperLimit(r) {
		return "at least " + rps(r.SustainableRPS)
	}
	return rps(r.SustainableRPS)
}

// rps writes a request rate in human units.
func rps(x float64) string { return fmt.Sprintf("%.3g req/s", x) }

// changesText says which settings differ from the engine's defaults.
func changesText(c []string) string {
	switch len(c) {
	case 0:
		return "the engine's defaults"
	case 1:
		return "1 change from the engine's defaults (" + c[0] + ")"
	}
	return fmt.Sprintf("%d changes from the engine's defaults (%s)", len(c), strings.Join(c, ", "))
}

// reason explains the recommendation against the runner-up.
func reason(best, ru *Result, tol float64) string {
	switch {
	case best == nil:
		return "no candidate could run on this model and GPU; see each candidate's evidence"
	case !best.MeetsSLO:
		return fmt.Sprintf("no candidate met the SLO at any rate tried; %s comes nearest: %s", best.Settings, best.Evidence)
	case ru == nil:
		return fmt.Sprintf("%s is the only candidate that meets the SLO: %s", best.Settings, best.Evidence)
	}
	var why string
	within := ru.SustainableRPS*tol >= best.SustainableRPS*(1-1e-12)
	switch {
	case within && len(best.Changes) < len(ru.Changes):
		about := "about " + rps(best.SustainableRPS)
		if upperLimit(best) {
			about = rateOf(best)
		}
		why = fmt.Sprintf("both sustain %s (within the search's %.1f%% resolution, so a tie) and it keeps closer to the engine's defaults: %s against the runner-up's %s",
			about, 100*(tol-1), changesText(best.Changes), changesText(ru.Changes))
	case best.SustainableRPS > ru.SustainableRPS && !within:
		why = fmt.Sprintf("it sustains %s against %s with no OOMs", rateOf(best), rateOf(ru))
	case best.SustainableRPS > ru.SustainableRPS:
		why = fmt.Sprintf("it sustains %s against %s (within the search's %.1f%% resolution) with %s as well",
			rateOf(best), rateOf(ru), 100*(tol-1), changesText(best.Changes))
	case best.FragRate.P99 < ru.FragRate.P99:
		why = fmt.Sprintf("both sustain %s with %s; it fragments less (frag p99 %.3f against %.3f)",
			rateOf(best), changesText(best.Changes), best.FragRate.P99, ru.FragRate.P99)
	case best.PeakReservedBytes < ru.PeakReservedBytes:
		why = fmt.Sprintf("both sustain %s at equal fragmentation; it reserves less memory at peak (%s against %s)",
			rateOf(best), mem.FormatBytes(best.PeakReservedBytes), mem.FormatBytes(ru.PeakReservedBytes))
	default:
		why = fmt.Sprintf("both sustain %s with equal fragmentation and memory; it comes first in the sweep", rateOf(best))
	}
	if best.FailReason != "" {
		why += "; above that: " + best.FailReason
	} else if upperLimit(best) {
		why += "; " + upperLimitNote
	}
	return why
}

// advice says what to change when the recommendation misses the SLO: the
// objective it would meet at the lowest rate tried, and how the engine
// limits the sweep tried moved it (the candidates that differ from the
// best effort only in max_num_batched_tokens or max_num_seqs), with how
// far the search went past the space (Extend).
func advice(best *Result, all []Result, slo SLO) string {
	if best == nil || best.MeetsSLO {
		return ""
	}
	at := rps(best.LowestRateRPS)
	if ob, ok := slo.objective(best.Binding); ok {
		out := fmt.Sprintf("%s binds: the best reached is %s at %s, the lowest rate tried (the objective is %s). Relax %s to %s",
			ob.name, secs(best.BestValue), at, secs(ob.goal), ob.flag, secs(best.BestValue))
		for _, lim := range limits {
			if hint := limitHint(best, all, lim, slo); hint != "" {
				out += "; " + hint
			}
		}
		return out
	}
	switch best.Binding {
	case "ooms", "activation_ooms", "unfinished":
		return fmt.Sprintf("memory binds: even at %s every candidate fails requests (%s); the model leaves too little memory for the "+
			"workload's contexts on this GPU: raise --tp, use a larger GPU, or cap the context (--max-context)", at, best.Binding)
	}
	return ""
}

// limitHint says where an engine limit the sweep varied leaves the best
// effort's binding objective: the values tried beside it that differ in
// that limit alone, whether a value past the ones tried may help, and how
// far the search already went past the space in that direction (the
// candidates of group "extend") and why it stopped there.
func limitHint(best *Result, all []Result, lim limit, slo SLO) string {
	tr, ok := limitTrend(best, all, lim)
	if !ok {
		return ""
	}
	name, v := lim.name, lim.get(best.Settings)
	var out string
	why := clash(best, tr.clash, lim, slo)
	switch {
	case why != "":
		out = fmt.Sprintf("%s cannot bring it nearer without breaking another requirement (%d to %d tried, %d nearest)", name, tr.lo, tr.hi, v)
	case tr.flat:
		out = fmt.Sprintf("%s does not move it (%d to %d tried, all within %.0f%%)", name, tr.lo, tr.hi, 100*limitEffect)
		if _, ok := tr.next(best.Settings, lim); tr.probe && ok {
			out += ": the steps that set it may carry fewer tokens than that, and a smaller one may split those that carry prefills"
		}
	case tr.dir == +1:
		out = fmt.Sprintf("of the %s tried (%d to %d) the largest came nearest", name, tr.lo, v)
	case tr.dir == -1:
		out = fmt.Sprintf("of the %s tried (%d to %d) the smallest came nearest", name, v, tr.hi)
	default:
		out = fmt.Sprintf("%s does not move it further (%d to %d tried, %d nearest)", name, tr.lo, tr.hi, v)
	}
	if len(tr.extended) > 0 {
		out += fmt.Sprintf(", the search going on past the space to %s (%s)", joinInts(tr.extended), human.Count(int64(len(tr.extended)), "more candidate"))
	}
	if why != "" {
		return out + ": " + why
	}
	if tr.flat || tr.dir == 0 {
		return out
	}
	if _, why, ok := lim.step(best.Settings, tr.dir); !ok && why != "" {
		return out + ": " + why
	}
	word := "smaller"
	if tr.dir > 0 {
		word = "larger"
	}
	if len(tr.extended) > 0 {
		return out + fmt.Sprintf(": a %s one may go further than --extend let the search go", word)
	}
	return out + fmt.Sprintf(": a %s one may go further", word)
}

// clashes reports whether a candidate bound by binding misses on
// something a clash can name: a latency objective or memory.
func clashes(binding string) bool {
	_, mem := clashMemory[binding]
	return latencyBinding(binding) || mem
}

// clashMemory says what a candidate bound by memory does, in the advice.
var clashMemory = map[string]string{"ooms": "fails requests out of memory", "activation_ooms": "runs out of activation memory",
	"unfinished": "leaves requests unfinished"}

// clash says what the trend's clash (a value of lim that brings the
// binding objective nearer) breaks instead: another objective, or memory.
func clash(best, at *Result, lim limit, slo SLO) string {
	bind, ok := slo.objective(best.Binding)
	if !ok || at == nil {
		return ""
	}
	x, got := lim.get(at.Settings), secs(at.latency(bind.field))
	if other, ok := slo.objective(at.Binding); ok && other.field != bind.field {
		return fmt.Sprintf("%d brings %s to %s but %s to %s against %s; relax one of the two", x, bind.name, got, other.name, secs(other.value(&at.Outcome)), secs(other.goal))
	}
	if what := clashMemory[at.Binding]; what != "" {
		return fmt.Sprintf("%d brings %s to %s but %s", x, bind.name, got, what)
	}
	return ""
}

// absInt is |x|.
func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// limitEffect is the spread of the binding p99 across an engine limit's
// values below which advice says the limit does not move it (2%: about the
// run-to-run spread of a p99 over a few thousand requests; chosen by hand,
// not tuned).
const limitEffect = 0.02
