package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// TestEarlyStopSound: a run that Config.EarlyStop ends early fails the same
// objective when run to its end (the p99 it stopped on is over the limit,
// or it had an OOM), and a run it does not end is the same run as without
// it, figure for figure. The random draws check soundness; two fixed
// cases check that both outcomes happen (the draws may, by chance, give
// only one: a coverage check on them failed about once in 70 runs).
func TestEarlyStopSound(t *testing.T) {
	stopped := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(20, 150).Draw(rt, "requests")
		gap := rapid.Int64Range(1e6, 2e8).Draw(rt, "gap_ns")
		reqs := make([]workload.Request, n)
		for i := range reqs {
			reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * gap,
				PromptTokens: rapid.IntRange(1, 1500).Draw(rt, "prompt"), OutputTokens: rapid.IntRange(0, 300).Draw(rt, "output"),
				N: rapid.IntRange(1, 4).Draw(rt, "n")} // samples: each adds its own gaps
		}
		c := tinyConfig(rapid.SampledFrom([]int64{48 << 20, 96 << 20, 512 << 20}).Draw(rt, "capacity"))
		c.KV = kvOf(rapid.SampledFrom([]string{"paged:16", "contiguous-grow"}).Draw(rt, "kv"))
		c.Alloc = allocOf("caching")
		full, err := runQuiet(c, reqs)
		if err != nil {
			rt.Skip(err)
		}
		ttft := rapid.Float64Range(0, 3*full.TTFT.P99+0.01).Draw(rt, "ttft")
		tpot := rapid.Float64Range(0, 3*full.TPOT.P99+0.01).Draw(rt, "tpot")
		itl := rapid.Float64Range(0, 3*full.ITL.P99+0.01).Draw(rt, "itl")
		if rapid.Bool().Draw(rt, "itl only") { // else TTFT and TPOT stop most runs first
			ttft, tpot = 0, 0
			itl = full.ITL.P99 * rapid.SampledFrom([]float64{0.5, 0.9, 0.99, 0.999, 1, 1.001}).Draw(rt, "itl share")
		}
		stopped[checkEarlyStop(rt, c, reqs, full, ttft, tpot, itl)]++
	})
	t.Logf("outcomes of the draws: %v", stopped)

	// Fixed cases: limits far above the run's p99s never stop it; a TTFT
	// limit at half its p99 does.
	reqs := make([]workload.Request, 100)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * 2e7, PromptTokens: 400 + 7*i, OutputTokens: 50 + i, N: 1}
	}
	c := tinyConfig(512 << 20)
	c.KV, c.Alloc = kvOf("paged:16"), allocOf("caching")
	full, err := runQuiet(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkEarlyStop(t, c, reqs, full, 10*full.TTFT.P99+1, 10*full.TPOT.P99+1, 10*full.ITL.P99+1); got != "" {
		t.Errorf("limits ten times the p99s: stopped on %q", got)
	}
	if got := checkEarlyStop(t, c, reqs, full, full.TTFT.P99/2, 10*full.TPOT.P99+1, 0); got != "ttft_p99" {
		t.Errorf("a TTFT limit at half the p99 (%v s): stopped on %q, want ttft_p99", full.TTFT.P99/2, got)
	}
	if got := checkEarlyStop(t, c, reqs, full, 0, 0, full.ITL.P99/2); got != "itl_p99" {
		t.Errorf("an ITL limit at half the p99 (%v s): stopped on %q, want itl_p99", full.ITL.P99/2, got)
	}
	// The limit at the p99 itself holds (the p99 is not over it); a
	// nanosecond below, the run stops on it, at the latest after its last
	// step (every request here completes, so every planned gap is made).
	if got := checkEarlyStop(t, c, reqs, full, 0, 0, full.ITL.P99); got != "" {
		t.Errorf("an ITL limit at the p99 (%v s): stopped on %q", full.ITL.P99, got)
	}
	if got := checkEarlyStop(t, c, reqs, full, 0, 0, full.ITL.P99-1e-9); got != "itl_p99" {
		t.Errorf("an ITL limit a nanosecond under the p99: stopped on %q, want itl_p99", got)
	}
}

// checkEarlyStop runs c on reqs with early stops at the p99 limits ttft,
// tpot and itl, checks the outcome against full (the run without them) and
// returns why it stopped ("" when it did not).
func checkEarlyStop(t interface{ Fatalf(string, ...any) }, c Config, reqs []workload.Request, full Result, ttft, tpot, itl float64) string {
	c.EarlyStop = EarlyStop{OnFailure: true, TTFTP99: ttft, TPOTP99: tpot, ITLP99: itl}
	es, err := runQuiet(c, reqs)
	if err != nil {
		t.Fatalf("%v", err)
	}
	why := es.StoppedEarly
	switch why {
	case "":
		es.StoppedEarly = full.StoppedEarly
		if fmt.Sprint(es) != fmt.Sprint(full) {
			t.Fatalf("not stopped, but the run differs:\n%+v\n%+v", es, full)
		}
	case "oom":
		if full.RequestsFailedOOM == 0 {
			t.Fatalf("stopped on an OOM the full run does not have")
		}
	case "activation_oom":
		if full.ActivationOOMs == 0 {
			t.Fatalf("stopped on an activation OOM the full run does not have")
		}
	case "ttft_p99":
		if !(full.TTFT.P99 > ttft) {
			t.Fatalf("stopped on TTFT p99 > %v, the full run's is %v", ttft, full.TTFT.P99)
		}
	case "tpot_p99":
		if !(full.TPOT.P99 > tpot) {
			t.Fatalf("stopped on TPOT p99 > %v, the full run's is %v", tpot, full.TPOT.P99)
		}
	case "itl_p99":
		if !(itl > 0 && full.ITL.P99 > itl) {
			t.Fatalf("stopped on ITL p99 > %v, the full run's is %v", itl, full.ITL.P99)
		}
	default:
		t.Fatalf("stopped: %q", why)
	}
	if why != "" && !(es.SimulatedSeconds <= full.SimulatedSeconds) {
		t.Fatalf("stopped at %v s, after the full run's end %v s", es.SimulatedSeconds, full.SimulatedSeconds)
	}
	return why
}

// runQuiet runs cfg on reqs and closes the engine.
func runQuiet(cfg Config, reqs []workload.Request) (Result, error) {
	e, err := New(cfg, reqs)
	if err != nil {
		return Result{}, err
	}
	res, err := e.Run()
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// Bad limits are refused.
func TestEarlyStopValidate(t *testing.T) {
	for _, es := range []EarlyStop{{TTFTP99: -1}, {TPOTP99: math.NaN()}, {TTFTP99: math.Inf(1)}, {ITLP99: -0.1}, {ITLP99: math.Inf(1)}, {ITLP99: math.NaN()}} {
		c := tinyConfig(64 << 20)
		c.EarlyStop = es
		if _, err := New(c, nil); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", es, err)
		}
	}
}
