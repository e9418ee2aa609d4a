package calib

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// warmRun is a run with per-request prompt lengths lens, dated date.
func warmRun(date string, lens ...int) *workload.BenchResult {
	r := &workload.BenchResult{Date: date, Detail: workload.DetailLens, Run: 1, Runs: 1}
	for _, n := range lens {
		r.Requests = append(r.Requests, workload.BenchRequest{InputTokens: n, OutputTokens: 4})
	}
	return r
}

// drawnLens is n prompt lengths drawn from [100, 2000] (a dataset's
// varying lengths).
func drawnLens(n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]int, n)
	for i := range out {
		out[i] = 100 + rng.IntN(1901)
	}
	return out
}

func repeat(n, v int) []int { return slices.Repeat([]int{v}, n) }

// markWarmCases runs markWarm under mode on runs (files f0.json, f1.json,
// ...) and returns the cases.
func markWarmCases(t *testing.T, mode WarmMode, prefixCaching bool, runs ...*workload.BenchResult) []*Case {
	t.Helper()
	var cs []*Case
	for i, r := range runs {
		cs = append(cs, &Case{File: &File{Name: fmt.Sprintf("f%d.json", i)}, Run: r})
	}
	f := &fitter{o: FitOptions{Warm: mode}, cases: cs}
	if err := f.markWarm(prefixCaching); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestMarkWarm: WarmAuto warms a run whose varying prompt lengths an
// earlier run sent in the same order, earlier by date where both have one,
// else by the order given; equal fixed lengths are no evidence (issue 24:
// a concurrency sweep of --random-input-len 1024 at range 0 was replayed
// warm, its TTFT a third of the measured one). WarmNone and WarmAll warm
// none and all. Every run says why.
func TestMarkWarm(t *testing.T) {
	sweep := drawnLens(50, 7)
	other := drawnLens(50, 8)
	few := append(repeat(30, 1024), 1000) // two lengths, the odd one anywhere: 5 bits
	for _, tc := range []struct {
		name   string
		mode   WarmMode
		runs   []*workload.BenchResult
		want   []bool
		reason []string // in each run's WarmReason
	}{
		{"dated, given late first", WarmAuto, []*workload.BenchResult{warmRun("20250414-141706", sweep...), warmRun("20250414-141505", sweep...)},
			[]bool{true, false}, []string{"prefix cache: f1.json sent the same 50 prompt lengths in the same order (dated 20250414-141505, before its 20250414-141706)", "no earlier run"}},
		{"undated: the order given", WarmAuto, []*workload.BenchResult{warmRun("", sweep...), warmRun("", sweep...), warmRun("", sweep...)},
			[]bool{false, true, true}, []string{"no earlier run", "f0.json sent the same 50 prompt lengths in the same order (given before it)", "f0.json"}},
		{"other prompts", WarmAuto, []*workload.BenchResult{warmRun("1", sweep...), warmRun("2", other...)},
			[]bool{false, false}, []string{"no earlier run", "no earlier run"}},
		{"fixed lengths", WarmAuto, []*workload.BenchResult{warmRun("1", repeat(64, 1024)...), warmRun("2", repeat(64, 1024)...)},
			[]bool{false, false}, []string{"no earlier run", "replayed cold, although f0.json sent the same 64 prompt lengths in the same order (dated 1, before its 2): they are all 1024 tokens"}},
		{"two lengths, weak", WarmAuto, []*workload.BenchResult{warmRun("1", few...), warmRun("2", few...)},
			[]bool{false, false}, []string{"", "only 2 distinct lengths (1000 to 1024 tokens), whose order tells them from unrelated prompts' at odds of 1 in 2^5.0, short of 2^20"}},
		{"one request", WarmAuto, []*workload.BenchResult{warmRun("1", 5), warmRun("2", 5)}, []bool{false, false}, nil},
		{"no lengths", WarmAuto, []*workload.BenchResult{{Run: 1, Runs: 1, Date: "1"}, {Run: 1, Runs: 1, Date: "2"}},
			[]bool{false, false}, []string{"no per-request prompt lengths", "no per-request prompt lengths"}},
		{"none", WarmNone, []*workload.BenchResult{warmRun("1", sweep...), warmRun("2", sweep...)}, []bool{false, false},
			[]string{"as --warm-prompts none asks", "as --warm-prompts none asks"}},
		{"all", WarmAll, []*workload.BenchResult{warmRun("1", 5, 7), warmRun("2", 6, 8)}, []bool{true, true},
			[]string{"as --warm-prompts all asks", "as --warm-prompts all asks"}},
	} {
		cs := markWarmCases(t, tc.mode, true, tc.runs...)
		var got []bool
		for i, c := range cs {
			got = append(got, c.Warm)
			if c.WarmReason == "" {
				t.Errorf("%s: run %d has no reason", tc.name, i)
			}
			if i < len(tc.reason) && !strings.Contains(c.WarmReason, tc.reason[i]) {
				t.Errorf("%s: run %d: reason %q lacks %q", tc.name, i, c.WarmReason, tc.reason[i])
			}
			// Under auto, a warm run, and a cold one whose lengths matched,
			// is said on stderr.
			said := len(c.Warnings) > 0
			if want := tc.mode == WarmAuto && (c.Warm || c.warnCold); said != want {
				t.Errorf("%s: run %d: warned %v (%q), want %v", tc.name, i, said, c.Warnings, want)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: warm %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := ParseWarmMode("sometimes"); !errors.Is(err, ErrSetup) {
		t.Errorf("ParseWarmMode(sometimes) = %v", err)
	}
	for i, n := range WarmModeNames() {
		if m, err := ParseWarmMode(n); err != nil || m != WarmMode(i) {
			t.Errorf("ParseWarmMode(%q) = %v, %v; want %v", n, m, err, WarmMode(i))
		}
	}
	if got := WarmModeNames(); !slices.Equal(got, []string{"auto", "none", "all"}) {
		t.Errorf("WarmModeNames() = %v", got)
	}
}

// TestMarkWarmNoPrefixCaching: a setup without prefix caching replays
// every run cold under auto, and refuses all.
func TestMarkWarmNoPrefixCaching(t *testing.T) {
	sweep := drawnLens(50, 7)
	for _, c := range markWarmCases(t, WarmAuto, false, warmRun("1", sweep...), warmRun("2", sweep...)) {
		if c.Warm || !strings.Contains(c.WarmReason, "prefix caching off") {
			t.Errorf("warm %v, reason %q", c.Warm, c.WarmReason)
		}
	}
	f := &fitter{o: FitOptions{Warm: WarmAll}, cases: []*Case{{File: &File{Name: "f"}, Run: warmRun("1", 5, 7)}}}
	if err := f.markWarm(false); !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "prefix caching off") {
		t.Errorf("all without prefix caching: %v", err)
	}
}

// TestOrderBits: log2 of the distinct orders of a run's lengths.
func TestOrderBits(t *testing.T) {
	for _, tc := range []struct {
		lens []int
		want float64
	}{
		{repeat(1000, 1024), 0},
		{[]int{1, 2}, 1},
		{append(repeat(30, 1024), 1000), math.Log2(31)},
		{[]int{1, 2, 3, 4}, math.Log2(24)},
		{append(repeat(2, 5), repeat(2, 6)...), math.Log2(6)},
	} {
		if got := orderBits(warmRun("", tc.lens...).Requests); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%v: %v bits, want %v", tc.lens, got, tc.want)
		}
	}
}
