package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// TestEarlyStopSound: a run that Config.EarlyStop ends early fails the same
// objective when run to its end (the p99 it stopped on is over the limit,
// or it had an OOM), and a run it does not end is the same run as without
// it, figure for figure.
func TestEarlyStopSound(t *testing.T) {
	stopped := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(20, 150).Draw(rt, "requests")
		gap := rapid.Int64Range(1e6, 2e8).Draw(rt, "gap_ns")
		reqs := make([]workload.Request, n)
		for i := range reqs {
			reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * gap,
				PromptTokens: rapid.IntRange(1, 1500).Draw(rt, "prompt"), OutputTokens: rapid.IntRange(0, 300).Draw(rt, "output"), N: 1}
		}
		c := tinyConfig(rapid.SampledFrom([]int64{48 << 20, 96 << 20, 512 << 20}).Draw(rt, "capacity"))
		c.KV = kvOf(rapid.SampledFrom([]string{"paged:16", "contiguous-grow"}).Draw(rt, "kv"))
		c.Alloc = allocOf("caching")
		full, err := runQuiet(c, reqs)
		if err != nil {
			rt.Skip(err)
		}
		c.EarlyStop = EarlyStop{OnFailure: true,
			TTFTP99: rapid.Float64Range(0, 3*full.TTFT.P99+0.01).Draw(rt, "ttft"),
			TPOTP99: rapid.Float64Range(0, 3*full.TPOT.P99+0.01).Draw(rt, "tpot")}
		es, err := runQuiet(c, reqs)
		if err != nil {
			rt.Fatal(err)
		}
		stopped[es.StoppedEarly]++
		switch es.StoppedEarly {
		case "":
			es.StoppedEarly = full.StoppedEarly
			if fmt.Sprint(es) != fmt.Sprint(full) {
				rt.Fatalf("not stopped, but the run differs:\n%+v\n%+v", es, full)
			}
		case "oom":
			if full.RequestsFailedOOM == 0 {
				rt.Fatalf("stopped on an OOM the full run does not have")
			}
		case "activation_oom":
			if full.ActivationOOMs == 0 {
				rt.Fatalf("stopped on an activation OOM the full run does not have")
			}
		case "ttft_p99":
			if !(full.TTFT.P99 > c.EarlyStop.TTFTP99) {
				rt.Fatalf("stopped on TTFT p99 > %v, the full run's is %v", c.EarlyStop.TTFTP99, full.TTFT.P99)
			}
		case "tpot_p99":
			if !(full.TPOT.P99 > c.EarlyStop.TPOTP99) {
				rt.Fatalf("stopped on TPOT p99 > %v, the full run's is %v", c.EarlyStop.TPOTP99, full.TPOT.P99)
			}
		default:
			rt.Fatalf("stopped: %q", es.StoppedEarly)
		}
		if es.StoppedEarly != "" && !(es.SimulatedSeconds <= full.SimulatedSeconds) {
			rt.Fatalf("stopped at %v s, after the full run's end %v s", es.SimulatedSeconds, full.SimulatedSeconds)
		}
	})
	if !testing.Short() && !invariants.Enabled && (stopped[""] == 0 || stopped["ttft_p99"]+stopped["tpot_p99"] == 0) {
		t.Errorf("the draws never exercised both outcomes: %v", stopped)
	}
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
	for _, es := range []EarlyStop{{TTFTP99: -1}, {TPOTP99: math.NaN()}, {TTFTP99: math.Inf(1)}} {
		c := tinyConfig(64 << 20)
		c.EarlyStop = es
		if _, err := New(c, nil); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", es, err)
		}
	}
}
