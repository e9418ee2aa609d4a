// Going on past the space in the direction the advice names. See doc.go
// for the overview.

package advise

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
)

// DefaultExtend bounds the candidates Extend adds past the space, over all
// its rounds: 8, enough to halve max_num_batched_tokens from the default
// space's smallest (2,048) to its floor at the default max_num_seqs (256,
// three halvings) and max_num_seqs from 128 to 8 (four), and at most 8 ×
// Search.MaxEvaluations more simulations.
const DefaultExtend = 8

// limit is an engine limit the sweep varies and the search may follow
// past the space.
type limit struct {
	name string // vLLM's name: max_num_batched_tokens, max_num_seqs
	get  func(Settings) int
	set  func(*Settings, int)
	// bound is the smallest (dir −1) or largest (dir +1) value vLLM takes
	// for s, with the reason in words; ok false when there is none.
	bound func(s Settings, dir int) (v int, why string, ok bool)
}

// limits are the engine limits advice reads and Extend follows. vLLM
// refuses max_num_batched_tokens below max_num_seqs (its SchedulerConfig
// checks max_num_batched_tokens >= max_num_seqs), so each bounds the other.
var limits = []limit{
	{
		name: "max_num_batched_tokens",
		get:  func(s Settings) int { return s.MaxBatchTokens },
		set:  func(s *Settings, v int) { s.MaxBatchTokens = v },
		bound: func(s Settings, dir int) (int, string, bool) {
			if dir > 0 {
				return 0, "", false
			}
			seqs := orValue(s.MaxSeqs, defaultSeqs)
			return seqs, fmt.Sprintf("%d is its floor here: vLLM needs max_num_batched_tokens >= max_num_seqs (%d)", seqs, seqs), true
		},
	},
	{
		name: "max_num_seqs",
		get:  func(s Settings) int { return s.MaxSeqs },
		set:  func(s *Settings, v int) { s.MaxSeqs = v },
		bound: func(s Settings, dir int) (int, string, bool) {
			if dir < 0 {
				return 1, "1 is its floor", true
			}
			toks := orValue(s.MaxBatchTokens, defaultBatchTokens)
			return toks, fmt.Sprintf("%d is its ceiling here: vLLM needs max_num_seqs <= max_num_batched_tokens (%d)", toks, toks), true
		},
	},
}

// orValue is v, or def for 0 (the base config's value).
func orValue(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// step is the next value of the limit from s in direction dir (−1 halves,
// +1 doubles), kept within vLLM's bound; ok false, with the reason, when s
// is at the bound already (or its value is the base config's, 0).
func (lim limit) step(s Settings, dir int) (next int, why string, ok bool) {
	v := lim.get(s)
	if v <= 0 {
		return 0, "", false
	}
	bound, why, bounded := lim.bound(s, dir)
	switch {
	case dir < 0:
		next = v / 2
		if bounded {
			if v <= bound {
				return 0, why, false
			}
			next = max(next, bound)
		}
	case dir > 0:
		next = v * 2
		if bounded {
			if v >= bound {
				return 0, why, false
			}
			next = min(next, bound)
		}
	default:
		return 0, "", false
	}
	return next, "", next > 0
}

// trend is where a limit leaves the best effort's binding objective among
// the candidates that differ from it in that limit alone.
type trend struct {
	lo, hi int  // the values tried, the best effort's included
	flat   bool // the binding p99 moves less than limitEffect across them
	// dir is −1 when the best effort has the smallest value tried and
	// the others are further from the objective (a smaller one may go
	// further), +1 for the largest, 0 otherwise.
	dir int
	// extended are the values the search tried past the space
	// (group "extend"), in the direction it went.
	extended []int
	// probe is set for the token budget when TPOT (or ITL) p99 binds and does not
	// move across the budgets tried and the search has not gone past
	// them: the steps that set it carry fewer tokens than the smallest
	// budget tried, and a smaller one may split those that carry prefills
	// (the TPOT knob), so Extend tries one below.
	probe bool
	// clash is the candidate nearest the best effort in the limit among
	// those that bring the binding p99 nearer by more than limitEffect
	// and still miss, on another objective or on memory (clashes); nil
	// when none does. With one the limit is a trade-off: no direction,
	// no probe.
	clash *Result
}

// limitTrend reads lim's trend around best among all; ok false when no
// candidate differs from best in lim alone.
func limitTrend(best *Result, all []Result, lim limit) (tr trend, ok bool) {
	b := best.Settings
	metric := func(r *Result) float64 { return r.latency(best.Binding) }
	v := lim.get(b)
	var vals []int
	worst, m := metric(best), metric(best)
	if best.Group == groupExtend {
		tr.extended = append(tr.extended, v)
	}
	for i := range all {
		s := all[i].Settings
		x := lim.get(s)
		if x == v || x == 0 {
			continue
		}
		lim.set(&s, v)
		if !s.Equal(b) {
			continue
		}
		vals = append(vals, x)
		worst = max(worst, metric(&all[i]))
		if all[i].Group == groupExtend {
			tr.extended = append(tr.extended, x)
		}
		if r := &all[i]; !r.Held && metric(r) > 0 && metric(r) < m*(1-limitEffect) && r.Binding != best.Binding && clashes(r.Binding) &&
			(tr.clash == nil || absInt(x-v) < absInt(lim.get(tr.clash.Settings)-v)) {
			tr.clash = r
		}
	}
	if len(vals) == 0 {
		return tr, false
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	tr.lo, tr.hi = min(lo, v), max(hi, v)
	switch {
	case tr.clash != nil:
	case worst <= m*(1+limitEffect):
		tr.flat = true
		tr.probe = lim.name == limits[0].name && (best.Binding == "tpot_p99_s" || best.Binding == "itl_p99_s") && len(tr.extended) == 0
	case v > hi:
		tr.dir = +1
	case v < lo:
		tr.dir = -1
	}
	slices.SortFunc(tr.extended, func(a, c int) int { return (a - c) * tr.dirOr(-1) })
	return tr, true
}

// dirOr is tr.dir, or def when it is 0.
func (tr trend) dirOr(def int) int {
	if tr.dir == 0 {
		return def
	}
	return tr.dir
}

// next is the value of lim Extend tries from s: one step past the best
// effort in the trend's direction, or below the smallest value tried for a
// probe; ok false when the trend points nowhere or a bound is reached.
func (tr trend) next(s Settings, lim limit) (int, bool) {
	switch {
	case tr.probe:
		lim.set(&s, tr.lo)
		next, _, ok := lim.step(s, -1)
		return next, ok
	case tr.flat || tr.dir == 0 || tr.clash != nil:
		return 0, false
	}
	next, _, ok := lim.step(s, tr.dir)
	return next, ok
}

// groupExtend is the group of the candidates Extend adds.
const groupExtend = "extend"

// Extend returns the candidates that take the search past the space in the
// direction the advice names, at most budget of them: when the best
// effort misses a latency objective (TTFT, TPOT or ITL p99) and the candidates
// that differ from it in max_num_batched_tokens (max_num_seqs) alone say
// that the smallest (largest) value tried came nearest, the best effort
// with that limit halved (doubled), within vLLM's bounds (limit.bound);
// where TPOT or ITL p99 binds and no token budget tried moves it (the
// steps that carry prefills set both), the best effort
// with half the smallest budget tried, once (trend.probe).
// Each is of group "extend", a stock setting of the engine in use as the
// best effort is. Nil when there is nowhere to go: the recommendation
// meets the SLO, memory binds, no limit points outward, a bound is
// reached, or budget is 0. The caller runs the candidates, builds the
// report again and calls Extend again, with the budget less what it has
// added, until it returns none (Follow).
func Extend(rep *Report, budget int) []Candidate {
	b := rep.Recommended
	if budget <= 0 || b == nil || b.MeetsSLO || !latencyBinding(b.Binding) {
		return nil
	}
	seen := map[settingsKey]bool{}
	for i := range rep.Candidates {
		seen[rep.Candidates[i].Settings.key()] = true
	}
	var out []Candidate
	for _, lim := range limits {
		tr, ok := limitTrend(b, rep.Candidates, lim)
		if !ok {
			continue
		}
		next, ok := tr.next(b.Settings, lim)
		if !ok {
			continue
		}
		s := b.Settings
		lim.set(&s, next)
		if seen[s.key()] {
			continue
		}
		seen[s.key()] = true
		out = append(out, Candidate{Settings: s, Group: groupExtend, Experimental: len(s.Research()) > 0})
		if len(out) == budget {
			break
		}
	}
	return out
}

// pastSpace says that the recommendation lies past the space and how the
// search got there: the values of each limit the candidates of group
// "extend" tried that the space does not list.
func pastSpace(rs []Result, sp Space) string {
	var parts []string
	n := 0
	for _, lim := range limits {
		listed := sp.MaxBatchTokens
		if lim.name == "max_num_seqs" {
			listed = sp.MaxSeqs
		}
		var vals []int
		for i := range rs {
			if rs[i].Group != groupExtend {
				continue
			}
			if v := lim.get(rs[i].Settings); !slices.Contains(listed, v) && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			parts = append(parts, lim.name+" "+joinInts(vals))
		}
	}
	for i := range rs {
		if rs[i].Group == groupExtend {
			n++
		}
	}
	return fmt.Sprintf("it lies past the space: no candidate of the sweep met the SLO, and the search followed its advice to %s (%s)",
		strings.Join(parts, ", "), human.Count(int64(n), "more candidate"))
}

// joinInts writes xs as "1024, 512 and 256".
func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
