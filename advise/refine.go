// The second stage: crossing the best setups of a first sweep. See doc.go
// for the overview.

package advise

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultRefineTop is how many memory setups a refinement crosses: 3, so
// the default space's 4 utilizations × 2 buckets give 24 candidates,
// about half the first stage.
const DefaultRefineTop = 3

// Refine returns the candidates of a second stage: the top distinct setups
// (KV strategy, allocator, defrag policy, token budget, sequence limit,
// prefix caching) among prev's eligible candidates, best rank first, each
// crossed with every utilization and bucket size of sp. This is the "cross the best few" step of the design:
// the first stage varies one dimension at a time around the base, so the
// best allocator was only tried at the base utilization; the second tries
// it at all of them.
func Refine(prev *Report, sp Space, top int) ([]Candidate, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	if top < 1 {
		return nil, fmt.Errorf("%w: refine: top %d: want at least 1", ErrBadSpace, top)
	}
	ranked := slices.Clone(prev.Candidates)
	slices.SortFunc(ranked, func(a, b Result) int { return a.Rank - b.Rank })
	// A setup is a candidate's settings at utilization 0 and bucket 0.
	var setups []Settings
	seenSetup := map[settingsKey]bool{}
	for _, r := range ranked {
		s := r.Settings
		s.GPUMemoryUtilization, s.Bucket = 0, 0
		if !r.Eligible || seenSetup[s.key()] {
			continue
		}
		seenSetup[s.key()] = true
		setups = append(setups, s)
		if len(setups) == top {
			break
		}
	}
	if len(setups) == 0 {
		return nil, fmt.Errorf("%w: refine: the first stage has no eligible candidate to refine", ErrBadSpace)
	}
	var out []Candidate
	seen := map[settingsKey]bool{}
	for _, s := range setups {
		for _, u := range sp.Utils {
			for _, b := range sp.Buckets {
				st := s
				st.GPUMemoryUtilization, st.Bucket = u, b
				if !seen[st.key()] {
					seen[st.key()] = true
					out = append(out, Candidate{Settings: st, Group: "refine", Experimental: len(st.Research()) > 0})
				}
			}
		}
	}
	return out, nil
}

// MaxReportBytes bounds a report file read for refinement (64 MiB).
const MaxReportBytes = 64 << 20

// ErrBadReport means a report file (gpufrag advise --json) that cannot be
// read; the message names the file and the byte offset or field.
var ErrBadReport = errors.New("bad report")

// ReadReport reads a report written by `gpufrag advise --json` (or
// `advise merge --json`); name is used in messages. It checks that the
// digest matches the inputs recorded in it and that the candidates are
// numbered 0..n−1 with ranks 1..n.
func ReadReport(r io.Reader, name string) (*Report, error) {
	var rep Report
	if err := decodeStrict(r, name, MaxReportBytes, ErrBadReport, &rep); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) (*Report, error) {
		return nil, fmt.Errorf("%w: %s: field %q: %s", ErrBadReport, name, field, fmt.Sprintf(format, args...))
	}
	if len(rep.Candidates) == 0 {
		return bad("candidates", "none (is this the output of gpufrag advise --json?)")
	}
	in := rep.Inputs
	in.Candidates = make([]Candidate, len(rep.Candidates))
	ranks := make([]bool, len(rep.Candidates)+1)
	for i, c := range rep.Candidates {
		if c.Index != i {
			return bad(fmt.Sprintf("candidates[%d].index", i), "%d, want %d", c.Index, i)
		}
		if c.Rank < 1 || c.Rank > len(rep.Candidates) || ranks[c.Rank] {
			return bad(fmt.Sprintf("candidates[%d].rank", i), "%d: want each of 1..%d once", c.Rank, len(rep.Candidates))
		}
		ranks[c.Rank] = true
		in.Candidates[i] = c.Candidate
		if field, problem := c.check(in); field != "" {
			return bad(fmt.Sprintf("candidates[%d].%s", i, field), "%s", problem)
		}
	}
	if d := Digest(in); rep.Digest != d {
		return bad("digest", "%q does not match the inputs and candidates recorded in the file (%s); was it edited?", rep.Digest, d)
	}
	// The ranking must be the one these results give: a file whose ranks
	// or recommendation were edited would otherwise steer --refine.
	want, err := NewReport(in, rep.Candidates)
	if err != nil {
		return bad("candidates", "%v", err)
	}
	for i, c := range want.Candidates {
		if rep.Candidates[i].Rank != c.Rank || rep.Candidates[i].Eligible != c.Eligible {
			return bad(fmt.Sprintf("candidates[%d].rank", i), "rank %d (eligible %t), but its results rank it %d (eligible %t)",
				rep.Candidates[i].Rank, rep.Candidates[i].Eligible, c.Rank, c.Eligible)
		}
	}
	if (rep.Recommended == nil) != (want.Recommended == nil) || (want.Recommended != nil && rep.Recommended.Index != want.Recommended.Index) {
		return bad("recommended", "not the candidate its results rank first")
	}
	return &rep, nil
}
