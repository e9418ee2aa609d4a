// Results, ranking and the recommendation. See doc.go for the overview.

package advise

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// FailedAtRPS is the lowest rate tried that broke, FailReason why;
	// both empty when every rate tried held.
	FailedAtRPS float64 `json:"failed_at_rps,omitempty"`
	FailReason  string  `json:"fail_reason,omitempty"`
	Evaluations int     `json:"evaluations"`

	// Set by Rank.
	Eligible bool   `json:"eligible"`
	Rank     int    `json:"rank"`
	Evidence string `json:"evidence"`
}

// TraceInfo identifies the workload.
type TraceInfo struct {
	File      string  `json:"file"` // base name
	SHA256    string  `json:"sha256"`
	Format    string  `json:"format"`
	Requests  int     `json:"requests"`
	Skipped   int     `json:"skipped_rows"`
	MaxRows   int     `json:"max_rows"`
	NativeRPS float64 `json:"native_rate_rps"`
}

// Inputs is everything that decides a sweep's results; its digest ties
// shards together.
type Inputs struct {
	Trace      TraceInfo `json:"trace"`
	Model      string    `json:"model"`
	GPU        string    `json:"gpu"`
	TP         int       `json:"tp"`
	KVDType    string    `json:"kv_dtype,omitempty"`
	MaxContext int       `json:"max_context,omitempty"`
	SLO        SLO       `json:"slo"`
	Search     Search    `json:"search"`
	Space      Space     `json:"space"`
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
	// Recommended is the best eligible candidate (nil when none is).
	Recommended *Result `json:"recommended"`
	RunnerUp    *Result `json:"runner_up"`
	// Candidates in index order, ranked.
	Candidates []Result `json:"candidates"`
	Reason     string   `json:"reason"`
	Inputs     Inputs   `json:"inputs"` // without the candidate list
	Digest     string   `json:"digest"`
}

// isOracle reports a strategy no real engine can deploy: it knows every
// output length in advance.
func isOracle(kv string) bool { return strings.HasSuffix(strings.ToLower(kv), ":oracle") }

// NewReport ranks results (one per candidate of in, any order) and picks
// the recommendation. A candidate is eligible when some rate held with no
// OOM failures and no activation OOMs, it rejects no more requests than
// the candidate rejecting fewest (rejections are requests that can never
// fit; a setting that turns away more of the workload does not serve it),
// and it is deployable (not contiguous-max:oracle). Eligible candidates
// rank first, by sustainable rate (highest first), then lower
// fragmentation p99, then lower peak reserved memory, then candidate
// index; the others follow by sustainable rate, then index.
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
		if rs[i].Candidate != in.Candidates[i] {
			return nil, fmt.Errorf("%w: result %d is for %s, candidate %d is %s", ErrBadSpace, i, rs[i].Settings, i, in.Candidates[i].Settings)
		}
	}
	minRej := -1
	for _, r := range rs {
		if r.Held && (minRej < 0 || r.Rejected < minRej) {
			minRej = r.Rejected
		}
	}
	for i := range rs {
		r := &rs[i]
		r.Eligible = r.Held && r.OOMs == 0 && r.ActivationOOMs == 0 && r.Rejected == minRej && !isOracle(r.Settings.KV)
		r.Evidence = evidence(r, minRej)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &rs[i], &rs[j]
		if a.Eligible != b.Eligible {
			if a.Eligible {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.SustainableRPS, a.SustainableRPS); c != 0 {
			return c
		}
		if a.Eligible {
			if c := cmp.Compare(a.FragRate.P99, b.FragRate.P99); c != 0 {
				return c
			}
			if c := cmp.Compare(a.PeakReservedBytes, b.PeakReservedBytes); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Index, b.Index)
	})
	for pos, i := range order {
		rs[i].Rank = pos + 1
	}
	rep := &Report{Candidates: rs, Digest: Digest(in)}
	rep.Inputs = in
	rep.Inputs.Candidates = nil
	if n > 0 && rs[order[0]].Eligible {
		best := rs[order[0]]
		rep.Recommended = &best
		if n > 1 && rs[order[1]].Eligible {
			ru := rs[order[1]]
			rep.RunnerUp = &ru
		}
	}
	rep.Reason = reason(rep.Recommended, rep.RunnerUp)
	return rep, nil
}

// evidence says in one line why r stands where it does.
func evidence(r *Result, minRej int) string {
	var parts []string
	switch {
	case !r.Held && strings.HasPrefix(r.FailReason, "cannot run"):
		parts = append(parts, r.FailReason)
	case !r.Held:
		parts = append(parts, "no rate held: "+r.FailReason+" (the lowest rate tried)")
	case isOracle(r.Settings.KV):
		parts = append(parts, "not deployable: contiguous-max:oracle knows every output length in advance")
	case r.Rejected > minRej:
		parts = append(parts, fmt.Sprintf("rejects %d requests that can never fit (the best settings reject %d)", r.Rejected, minRej))
	}
	if r.Held {
		parts = append(parts, fmt.Sprintf("sustains %.3g rps (%.3g× the trace)", r.SustainableRPS, r.Multiplier))
		if r.FailReason != "" {
			parts = append(parts, "limit: "+r.FailReason)
		} else {
			parts = append(parts, "held at every rate tried (the search's upper limit)")
		}
	}
	return strings.Join(parts, "; ")
}

// reason explains the recommendation against the runner-up.
func reason(best, ru *Result) string {
	if best == nil {
		return "no candidate sustained any rate tried without OOMs; see each candidate's evidence"
	}
	if ru == nil {
		return fmt.Sprintf("%s is the only eligible candidate: %s", best.Settings, best.Evidence)
	}
	var why string
	switch {
	case best.SustainableRPS > ru.SustainableRPS:
		why = fmt.Sprintf("it sustains %.3g rps against %.3g rps with no OOMs", best.SustainableRPS, ru.SustainableRPS)
	case best.FragRate.P99 < ru.FragRate.P99:
		why = fmt.Sprintf("both sustain %.3g rps; it fragments less (frag p99 %.3f against %.3f)", best.SustainableRPS, best.FragRate.P99, ru.FragRate.P99)
	case best.PeakReservedBytes < ru.PeakReservedBytes:
		why = fmt.Sprintf("both sustain %.3g rps at equal fragmentation; it reserves less memory at peak (%d against %d bytes)",
			best.SustainableRPS, best.PeakReservedBytes, ru.PeakReservedBytes)
	default:
		why = fmt.Sprintf("both sustain %.3g rps with equal fragmentation and memory; it comes first in the sweep", best.SustainableRPS)
	}
	if best.FailReason != "" {
		why += "; above that: " + best.FailReason
	}
	return why
}
