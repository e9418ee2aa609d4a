package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
)

// TestSGLangAdmission: requests that all arrive at once, with 100-token
// prompts and max_tokens 200. SGLang's first prefill pass admits a request
// while its prompt and max_new_tokens (300 tokens) stay below the pool's
// room less what it admitted before in the pass (the first always); vLLM
// V1 admits while the prompts' blocks fit, three times as many. The ratio
// stays 0.7 through prefill steps and decays 0.001 a decode step to its
// floor; the whole run keeps the engine's accounting (retractions:
// TestSGLangRetractRatio).
func TestSGLangAdmission(t *testing.T) {
	base := tinyConfig(64 << 20)
	base.ChunkedPrefill = true
	base.MaxTokens = 200
	base.MaxBatchTokens = 4096
	base.MaxSeqs = 1 << 20
	probe, err := New(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	budget := probe.budgetTokens()
	n := int(budget/100) + 20
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), PromptTokens: 100, OutputTokens: 150, N: 1}
	}
	first := func(eng EngineKind) (*Engine, int) {
		c := base
		c.Engine = eng
		e, err := New(c, reqs)
		if err != nil {
			t.Fatal(err)
		}
		e.arrive()
		if err := e.step(); err != nil {
			t.Fatal(err)
		}
		return e, len(e.running)
	}
	want := 1
	for 300*int64(want+1) < budget {
		want++
	}
	e, got := first(EngineSGLang)
	if !e.sgl.on {
		t.Fatal("SGLang's admission rule is off for a paged SGLang engine")
	}
	if got != want {
		t.Errorf("SGLang admitted %d of %d in its first pass, want %d (pool %d tokens, 300 a request)", got, n, want, budget)
	}
	_, v1 := first(EngineVLLMV1)
	t.Logf("pool %d tokens: SGLang admitted %d, vLLM V1 %d", budget, got, v1)
	if v1 < 2*want {
		t.Errorf("vLLM V1 admitted %d, want about three times SGLang's %d (prompts only)", v1, want)
	}
	if r := e.sglRatio(); r != sglInitRatio {
		t.Errorf("ratio %g after a prefill step, want %g", r, sglInitRatio)
	}
	e.sgl.decode += 100
	if r, w := e.sglRatio(), sglInitRatio-100*sglRatioDecay; r < w-1e-12 || r > w+1e-12 {
		t.Errorf("ratio %g after 100 decode steps, want %g", r, w)
	}
	e.sgl.decode += 1000
	if r := e.sglRatio(); r != sglMinRatio {
		t.Errorf("ratio %g after 1,100 decode steps, want the floor %g", r, sglMinRatio)
	}
	c := base
	c.Engine = EngineSGLang
	runEngine(t, c, reqs)
}

// TestSGLangNeedRetracted: a retracted request waits with its output so
// far; SGLang's PrefillAdder charges its re-admission the whole fill
// (prompt + output so far: extend_input_len) and the max_new_tokens left,
// as sglRoom counts it once it runs again (prompt + n × gen held, the rest
// expected). A fresh request's charge is its prompt and max_tokens.
func TestSGLangNeedRetracted(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.Engine = EngineSGLang
	c.MaxTokens = 200
	reqs := []workload.Request{{ID: "a", PromptTokens: 100, OutputTokens: 150, N: 1}}
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	r := &e.reqs[0]
	if got := e.sglNeed(r); got != 300 {
		t.Errorf("fresh request: need %g, want 300 (prompt 100 + max_tokens 200)", got)
	}
	r.gen = 50 // retracted after 50 tokens: 150 to recompute, 150 to go
	r.need = r.prompt + r.gen
	if got := e.sglNeed(r); got != 300 {
		t.Errorf("retracted after 50 tokens: need %g, want 300 (fill 150 + 150 left)", got)
	}
}

// TestSGLangRetractRatio: a retraction sets new_token_ratio to (tokens
// decoded + 20 × requests) ÷ their max_new_tokens over the requests still
// running, at most 1 (ScheduleBatch.retract_decode), below the floor if so
// it comes out: the retraction's decode step sets the ratio instead of
// decaying it, and the next decode step decays it, max(ratio − decay,
// 0.098) (Scheduler.update_running_batch). A run that retracts keeps the
// engine's accounting.
func TestSGLangRetractRatio(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.Engine = EngineSGLang
	c.MaxTokens = 1000
	reqs := []workload.Request{
		{ID: "a", PromptTokens: 100, OutputTokens: 500, N: 1},
		{ID: "b", PromptTokens: 100, OutputTokens: 500, N: 1},
	}
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	e.running = append(e.running, 0, 1)
	e.reqs[0].gen, e.reqs[1].gen = 30, 10
	e.sgl.decode = 77
	e.sglRetracted()
	low := (30.0 + 10 + 2*sglRetractSteps) / 2000
	if r := e.sglRatio(); r != low {
		t.Errorf("ratio %g after a retraction, want (30 + 10 + 2 × 20) ÷ 2,000 = %g, below the floor", r, low)
	}
	e.sgl.decoded(1) // the retraction's own decode step
	if r := e.sglRatio(); r != low {
		t.Errorf("ratio %g after the retraction's decode step, want %g (set, not decayed)", r, low)
	}
	e.sgl.decoded(1)
	if r := e.sglRatio(); r != sglMinRatio {
		t.Errorf("ratio %g a decode step later, want the floor %g", r, sglMinRatio)
	}
	e.reqs[0].gen, e.reqs[1].gen = 990, 990
	e.sglRetracted()
	e.sgl.decoded(3) // a decode run of 3 steps: the first is the retraction's
	if r, w := e.sglRatio(), 1-2*sglRatioDecay; r < w-1e-12 || r > w+1e-12 {
		t.Errorf("ratio %g 3 decode steps from a retraction late in the outputs, want 1 (the cap) decayed twice, %g", r, w)
	}
	e.sglSetRatio(sglInitRatio) // idle
	e.sgl.decoded(1)
	if r, w := e.sglRatio(), sglInitRatio-sglRatioDecay; r < w-1e-12 || r > w+1e-12 {
		t.Errorf("ratio %g a decode step after an idle reset, want %g", r, w)
	}

	// A run that retracts: requests of 1,000 tokens every 5 ms on a pool
	// of a few thousand.
	c.MaxTokens = 0
	probe, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := int(probe.budgetTokens() / 200)
	reqs = reqs[:0]
	for i := range 4 * n {
		reqs = append(reqs, workload.Request{ID: fmt.Sprintf("r%d", i), PromptTokens: 100, OutputTokens: 900, N: 1, Arrival: int64(i) * 5e6})
	}
	c.MaxTokens = 1000
	e, res := runEngine(t, c, reqs)
	t.Logf("%d requests, %d retractions, ratio at the end %g", len(reqs), res.Preemptions, e.sglRatio())
	if res.Preemptions == 0 {
		t.Errorf("no retraction in a run of %d requests of 1,000 tokens on a pool of %d", len(reqs), probe.budgetTokens())
	}
	if r := e.sglRatio(); r < 0 || r > 1 {
		t.Errorf("ratio %g at the end, want within [0, 1]", r)
	}
}

// BenchmarkSGLangAdmission is BenchmarkEngine's paged:16 on caching run
// (2,000 requests of Llama-3.1-8B on one H100: Poisson arrivals at 10 a
// second, prompts log-uniform in [100, 8000], outputs uniform in [50,
// 500]) as engine sglang, whose admission sums the running requests on
// every prefill pass while requests wait (sglRoom). Instructions:
//
//	go test -c -o /tmp/sim.test ./sim && cd sim && GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 \
//	  valgrind --tool=callgrind /tmp/sim.test -test.run '^$' -test.bench SGLangAdmission -test.benchtime 3x
func BenchmarkSGLangAdmission(b *testing.B) {
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		b.Fatal(err)
	}
	g, err := model.LookupGPU("h100-80g")
	if err != nil {
		b.Fatal(err)
	}
	arr, err := workload.Poisson(10, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	lens := rand.New(rand.NewPCG(1, 2))
	reqs := make([]workload.Request, 2000)
	var at int64
	for i := range reqs {
		if i > 0 {
			at += arr.Gap()
		}
		prompt := int(100 * math.Pow(8000.0/100, lens.Float64()))
		reqs[i] = workload.Request{ID: fmt.Sprintf("b%d", i), Arrival: at, PromptTokens: prompt, OutputTokens: 50 + lens.IntN(451), N: 1}
	}
	c := DefaultConfig(m, g)
	c.KV, c.Alloc = strategy.MustParseSpec("paged:16"), registry.MustParse("caching")
	c.Engine = EngineSGLang
	var res Result
	for range b.N {
		e, err := New(c, reqs)
		if err != nil {
			b.Fatal(err)
		}
		if res, err = e.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Steps), "steps/op")
	b.ReportMetric(float64(res.RequestsCompleted), "completed/op")
}
