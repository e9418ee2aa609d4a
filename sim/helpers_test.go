package sim

import (
	"testing"

	"fmt"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
)

// tinyModel is a toy Llama with round numbers, so that memory and step
// times can be derived by hand in the scripts:
//
//	KV per token   2 × 8 layers × 4 KV heads × 64 × 2 B = 8 KiB (bf16)
//	weights        2^20 params × 2 B = 2 MiB
//	context        2048 tokens (a full sequence is 16 MiB of KV)
//	activations    4 KiB per batched token: 512 B residual + max(qkv and
//	               attention 2 KiB, MLP 512 + 2048 + 1024 B)
func tinyModel() model.Model {
	return model.Model{Name: "tiny", Family: "llama", Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 64,
		Hidden: 256, Intermediate: 512, Vocab: 1000, MaxContext: 2048, Params: 1 << 20, WeightDType: model.BF16}
}

const tinyBPT = 8 * mem.KiB

// toyGPU has 1 TB/s and 1 PFLOP/s, so with the default roofline
// efficiencies (0.8, 0.5) a byte costs 1.25 ps and a FLOP 2 fs.
func toyGPU(capacity int64) model.GPU {
	return model.GPU{Name: "toy", Capacity: capacity, MemBandwidth: 1e12, BF16FLOPS: 1e15}
}

// presetPair looks up a model preset and a GPU preset, failing tb if
// either is unknown.
func presetPair(tb testing.TB, modelName, gpu string) (model.Model, model.GPU) {
	tb.Helper()
	m, err := model.Preset(modelName)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := model.LookupGPU(gpu)
	if err != nil {
		tb.Fatal(err)
	}
	return m, g
}

// tinyConfig is DefaultConfig for tinyModel on a toy GPU of the given
// capacity, without the CUDA context (500 MiB would not fit).
func tinyConfig(capacity int64) Config {
	c := DefaultConfig(tinyModel(), toyGPU(capacity))
	c.ContextBytes = 0
	return c
}

// fataler is what the helpers need of a *testing.T, *testing.B or *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// runEngine builds an engine, runs it, checks the end-of-run accounting
// (checkAccounting) and closes it, checking that nothing is left allocated.
func runEngine(t fataler, cfg Config, reqs []workload.Request) (*Engine, Result) {
	t.Helper()
	e, err := New(cfg, reqs)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	res, err := e.Run()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := checkAccounting(e, res); err != nil {
		t.Fatalf("accounting: %v", err)
	}
	if err := checkClose(e); err != nil {
		t.Fatalf("close: %v", err)
	}
	return e, res
}

// checkAccounting checks, after Run, that every request that arrived ended
// in exactly one state and that the counters agree with the requests:
//
//   - each arrived request is done, failed, rejected or still waiting or
//     running (unfinished); the four counts match the result and add up to
//     RequestsTotal; with no Duration nothing is unfinished and every
//     request arrived;
//   - no output token is lost or double counted: OutputTokens = Σ gen × n
//     over all requests, where gen is the tokens a request has generated
//     (kept across preemptions); a completed request generated exactly its
//     (truncated) output, a failed, rejected or unfinished one less;
//   - a completed request's output never exceeds its context;
//   - with no Duration, the strategy holds nothing for any sequence (every
//     block back in the pool) and nothing is promised under the reserve
//     policy; preemptions happen only under the preempt policy.
func checkAccounting(e *Engine, res Result) error {
	var done, failed, rejected, unfinished, arrived int
	var tokens int64
	var firsts int
	for i := range e.reqs {
		r := &e.reqs[i]
		switch r.ph {
		case phasePending:
			if i < e.next {
				return fmt.Errorf("request %s arrived but is still pending", r.id)
			}
			continue
		case phaseDone:
			done++
			if r.gen != r.output {
				return fmt.Errorf("completed request %s generated %d of %d tokens", r.id, r.gen, r.output)
			}
			if r.admitted {
				return fmt.Errorf("completed request %s still holds KV", r.id)
			}
		case phaseFailed:
			failed++
		case phaseRejected:
			rejected++
		case phaseWaiting, phaseRunning:
			unfinished++
		default:
			return fmt.Errorf("request %s in phase %d", r.id, r.ph)
		}
		arrived++
		if r.ph != phaseDone && r.gen >= r.output && r.output > 0 {
			return fmt.Errorf("request %s (phase %d) generated all %d tokens but did not complete", r.id, r.ph, r.output)
		}
		if r.ph == phaseFailed || r.ph == phaseRejected {
			if r.admitted {
				return fmt.Errorf("request %s (phase %d) still holds KV", r.id, r.ph)
			}
		}
		if r.gen > r.output {
			return fmt.Errorf("request %s generated %d tokens, more than its output %d", r.id, r.gen, r.output)
		}
		if r.ph == phaseDone && r.prompt+r.gen > e.cfg.MaxContext {
			return fmt.Errorf("request %s: prompt %d + output %d exceeds the context %d", r.id, r.prompt, r.gen, e.cfg.MaxContext)
		}
		tokens += int64(r.gen) * int64(r.n)
		if (r.first >= 0) != (r.gen > 0) {
			return fmt.Errorf("request %s (phase %d): first token at %d ns with %d tokens generated", r.id, r.ph, r.first, r.gen)
		}
		if r.first >= 0 {
			firsts++
		}
	}
	if firsts != len(e.tally.ttft) {
		// A TTFT for each request that got a first token, none for a
		// prefill-only one (issue 28).
		return fmt.Errorf("%d TTFTs recorded for %d requests with a first token", len(e.tally.ttft), firsts)
	}
	got := [5]int{res.RequestsCompleted, res.RequestsFailedOOM, res.RequestsRejected, res.RequestsUnfinished, res.RequestsTotal}
	want := [5]int{done, failed, rejected, unfinished, arrived}
	if got != want {
		return fmt.Errorf("result counts completed/failed/rejected/unfinished/total %v, requests say %v", got, want)
	}
	if done+failed+rejected+unfinished != res.RequestsTotal {
		return fmt.Errorf("counts %v do not add up to %d", got, res.RequestsTotal)
	}
	if e.cfg.Duration == 0 && (unfinished != 0 || arrived != len(e.reqs)) {
		return fmt.Errorf("no duration, yet %d unfinished and %d of %d arrived", unfinished, arrived, len(e.reqs))
	}
	if tokens != res.OutputTokens {
		return fmt.Errorf("output tokens %d, Σ gen × n over requests %d", res.OutputTokens, tokens)
	}
	if e.cfg.Duration == 0 {
		// Every request ended, so every block is back in the pool (cached
		// prefix blocks stay, evictable) and nothing is held for a sequence.
		if st, u := e.kv.Stats(), e.kv.Usage(); st.Live != 0 || st.Tokens != 0 || u.Held() != 0 {
			return fmt.Errorf("every request ended, yet the strategy has %d live sequences, %d tokens, %d bytes held", st.Live, st.Tokens, u.Held())
		}
	}
	if e.cfg.Duration == 0 && e.committed != 0 {
		return fmt.Errorf("every request ended, yet %d tokens are still promised under the reserve policy", e.committed)
	}
	if res.Preemptions > 0 && e.cfg.OnOOM != OnOOMPreempt {
		return fmt.Errorf("%d preemptions under on-oom %v", res.Preemptions, e.cfg.OnOOM)
	}
	if res.TTFT.P50 < 0 || res.E2E.P50 < 0 {
		return fmt.Errorf("negative latency: ttft %v e2e %v", res.TTFT, res.E2E)
	}
	return nil
}

// checkClose closes the engine and checks that the KV strategy has no live
// sequence and the allocator holds nothing (every block back to the pool,
// the pool and every activation buffer back to the allocator).
func checkClose(e *Engine) error {
	if err := e.Close(); err != nil {
		return err
	}
	if st := e.Strategy().Stats(); st.Live != 0 || st.Tokens != 0 {
		return fmt.Errorf("strategy after Close: %v", st)
	}
	if st := e.Allocator().Stats(); st.Allocated != 0 || st.LiveBlocks != 0 {
		return fmt.Errorf("allocator after Close: %v", st)
	}
	return nil
}

// kvOf and allocOf parse the specs a test writes as text (sim.Config holds
// them parsed).
func kvOf(s string) strategy.Spec    { return strategy.MustParseSpec(s) }
func allocOf(s string) registry.Spec { return registry.MustParse(s) }

// stepThrough runs e step by step, without its fast paths, until every
// request has arrived and none waits or runs, calling after after each
// step; a run of more than limit steps fails t.
func stepThrough(t *testing.T, e *Engine, limit int, after func()) {
	t.Helper()
	stepAround(t, e, limit, func() {}, after)
}

// stepAround is stepThrough with a hook before each step too.
func stepAround(t *testing.T, e *Engine, limit int, before, after func()) {
	t.Helper()
	e.noFastPaths()
	for steps := 0; ; steps++ {
		if steps > limit {
			t.Fatal("run did not end")
		}
		e.arrive()
		if len(e.running) == 0 && e.waiting.len() == 0 {
			if e.next == len(e.reqs) {
				return
			}
			e.now = max(e.now, e.reqs[e.next].arrival)
			continue
		}
		before()
		if err := e.step(); err != nil {
			t.Fatal(err)
		}
		after()
	}
}
