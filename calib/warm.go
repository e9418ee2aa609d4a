// Which runs start with their prompts in the prefix cache: a benchmark
// repeated against one server with prefix caching on finds the prompts of
// its earlier runs cached, and a replay that computes them again is slower
// than the server was. See fit.go for where the decision is used.

package calib

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufrag/gpufrag/workload"
)

// WarmMode says which runs a calibration replays warm.
type WarmMode int

const (
	// WarmAuto replays a run warm when the files show that an earlier run
	// sent the same prompts (prefixEvidence), so a server with prefix
	// caching on (vLLM V1's and SGLang's default) had them cached. Earlier
	// is by the files' dates where both runs have one, else by the order
	// the files were given. Each run's Case.WarmReason says what was
	// decided and why.
	WarmAuto WarmMode = iota
	// WarmNone replays every run cold.
	WarmNone
	// WarmAll replays every run warm.
	WarmAll
)

var warmModeNames = [...]string{WarmAuto: "auto", WarmNone: "none", WarmAll: "all"}

// WarmModeNames are the modes ParseWarmMode reads, in order (for hints and
// shell completion).
func WarmModeNames() []string { return slices.Clone(warmModeNames[:]) }

// ParseWarmMode reads auto, none or all ("" is auto).
func ParseWarmMode(s string) (WarmMode, error) {
	if s == "" {
		return WarmAuto, nil
	}
	if i := slices.Index(warmModeNames[:], s); i >= 0 {
		return WarmMode(i), nil
	}
	return 0, fmt.Errorf("%w: warm prompts %q: want auto, none or all", ErrSetup, s)
}

// minOrderBits is how much the order of a run's prompt lengths must tell
// before an earlier run that sent the same lengths in the same order is
// taken to have sent the same prompts (20 bits: odds of one in a million).
// What the order tells is log2 of the number of distinct orders of the
// run's lengths, n! ÷ Π count(length)!: the odds that the same lengths
// sent in an unrelated order would match. Prompts drawn from a dataset
// (ShareGPT, sonnet, a random dataset with a range) vary in length and tell
// hundreds of bits; fixed-length prompts (vLLM's or SGLang's random dataset
// at range 0) have one order and tell nothing, whatever their tokens were.
// The clients write no prompt texts (vLLM's and SGLang's result files hold
// lengths, times and the generated texts), so lengths are the only
// evidence the files give.
const minOrderBits = 20

// orderBits is log2 of the number of distinct orders of the requests'
// prompt lengths.
func orderBits(reqs []workload.BenchRequest) float64 {
	counts := map[int]int{}
	for _, q := range reqs {
		counts[q.InputTokens]++
	}
	lnFact := func(n int) float64 {
		v, _ := math.Lgamma(float64(n) + 1)
		return v
	}
	ln := lnFact(len(reqs))
	for _, l := range slices.Sorted(maps.Keys(counts)) { // a fixed order: the same sum every time
		ln -= lnFact(counts[l])
	}
	return math.Max(0, ln/math.Ln2)
}

// sameLengths reports whether two runs sent the same prompt lengths in the
// same order (at least two requests, both with per-request lengths).
func sameLengths(a, b *workload.BenchResult) bool {
	if a.Detail&workload.DetailLens == 0 || b.Detail&workload.DetailLens == 0 || len(a.Requests) < 2 {
		return false
	}
	return slices.EqualFunc(a.Requests, b.Requests, func(x, y workload.BenchRequest) bool { return x.InputTokens == y.InputTokens })
}

// EarlierSamePrompts returns the earliest run before runs[i] in one file
// (runs in file order: SGLang's bench_serving appends each run as a line)
// that sent the same prompt lengths in the same order, where that order
// tells the prompts from unrelated ones (orderBits at least minOrderBits),
// and those bits; nil when there is none. This is WarmAuto's evidence
// for runs of one file, for a command that replays one run of it.
func EarlierSamePrompts(runs []*workload.BenchResult, i int) (*workload.BenchResult, float64) {
	if i <= 0 || i >= len(runs) || orderBits(runs[i].Requests) < minOrderBits {
		return nil, 0
	}
	for _, b := range runs[:i] {
		if sameLengths(b, runs[i]) {
			return b, orderBits(runs[i].Requests)
		}
	}
	return nil, 0
}

// lengthRange is the shortest and longest prompt and the number of
// distinct lengths.
func lengthRange(reqs []workload.BenchRequest) (lo, hi, distinct int) {
	seen := map[int]bool{}
	lo, hi = math.MaxInt, 0
	for _, q := range reqs {
		lo, hi = min(lo, q.InputTokens), max(hi, q.InputTokens)
		seen[q.InputTokens] = true
	}
	return lo, hi, len(seen)
}

// markWarm sets each case's Warm and WarmReason under o.Warm, and warns
// about every run auto replays warm, and every run it replays cold although
// an earlier run sent the same prompt lengths. prefixCaching is the
// setup's: without it no run can start warm.
func (f *fitter) markWarm(prefixCaching bool) error {
	switch f.o.Warm {
	case WarmNone:
		for _, c := range f.cases {
			c.WarmReason = "replayed cold, as --warm-prompts none asks"
		}
		return nil
	case WarmAll:
		if !prefixCaching {
			return fmt.Errorf("%w: warm prompts all puts every run's prompts in the prefix cache, but the setup has prefix caching off", ErrSetup)
		}
		for _, c := range f.cases {
			c.Warm, c.WarmReason = true, "replayed with its prompts in the prefix cache, as --warm-prompts all asks"
		}
		return nil
	}
	for i, c := range f.cases {
		c.WarmReason = f.autoWarm(i, prefixCaching)
		if c.Warm || c.warnCold {
			c.warn("%s", c.WarmReason)
		}
	}
	return nil
}

// autoWarm decides whether case i starts warm under WarmAuto (setting its
// Warm) and says why.
func (f *fitter) autoWarm(i int, prefixCaching bool) string {
	c := f.cases[i]
	r := c.Run
	if !prefixCaching {
		return "replayed cold: the setup has prefix caching off, so no run finds an earlier run's prompts cached"
	}
	if r.Detail&workload.DetailLens == 0 {
		return "replayed cold: the file has no per-request prompt lengths, so nothing tells whether an earlier run sent the same prompts"
	}
	var same *Case // the earliest earlier run with the same lengths in order
	when := ""
	for j, b := range f.cases {
		if i == j || !sameLengths(b.Run, r) {
			continue
		}
		dated := b.Run.Date != "" && r.Date != ""
		if (dated && b.Run.Date < r.Date) || (!dated && j < i) {
			same, when = b, "given before it"
			if dated {
				when = "dated " + clipLabel(b.Run.Date) + ", before its " + clipLabel(r.Date)
			}
			break
		}
	}
	n := len(r.Requests)
	if same == nil {
		return fmt.Sprintf("replayed cold: no earlier run among the files sent the same %d prompt lengths in the same order", n)
	}
	lo, hi, distinct := lengthRange(r.Requests)
	bits := orderBits(r.Requests)
	if bits < minOrderBits {
		c.warnCold = true
		what := fmt.Sprintf("they are all %d tokens (fixed-length prompts, as a random dataset at range ratio 0 sends): equal lengths do not tell whether the prompts were the same", lo)
		if distinct > 1 {
			what = fmt.Sprintf("they take only %d distinct lengths (%d to %d tokens), whose order tells them from unrelated prompts' at odds of 1 in 2^%.1f, short of 2^%d",
				distinct, lo, hi, bits, minOrderBits)
		}
		return fmt.Sprintf("replayed cold, although %s sent the same %d prompt lengths in the same order (%s): %s; "+
			"pass --warm-prompts all if the runs sent the same prompts to one server with prefix caching on", same.where(), n, when, what)
	}
	c.Warm = true
	return fmt.Sprintf("replayed with its prompts in the prefix cache: %s sent the same %d prompt lengths in the same order (%s), %d distinct lengths from %d to %d tokens "+
		"whose order tells them from unrelated prompts' at odds of 1 in 2^%.0f, so a server with prefix caching on "+
		"(vLLM V1's and SGLang's default) had these prompts cached; pass --warm-prompts none if the server ran without it "+
		"or was restarted between the runs", same.where(), n, when, distinct, lo, hi, bits)
}
