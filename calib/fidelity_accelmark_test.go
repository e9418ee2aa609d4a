package calib

import "testing"

// withAccelMarkRunner runs f with fidAccelMarkRunner set to o.
func withAccelMarkRunner(t *testing.T, o fidAccelMarkRunnerOpts, f func()) {
	t.Helper()
	old := fidAccelMarkRunner
	fidAccelMarkRunner = o
	defer func() { fidAccelMarkRunner = old }()
	f()
}

// TestFidelityAccelMarkRunner checks each of the replay's choices that
// follow AccelMark's runners (fidAccelMarkRunner), one switch at a time:
// the prompts of an online run, SGLang's streaming cap, running requests
// and memory share, vLLM 0.20.1's engine limits, and which runs are warm.
func TestFidelityAccelMarkRunner(t *testing.T) {
	// The replay's choice: none of the switches (the screens of
	// docs/calibrate.md, "Issue 24, tenth session").
	if fidAccelMarkRunner != (fidAccelMarkRunnerOpts{}) {
		t.Errorf("fidAccelMarkRunner %+v, want all off", fidAccelMarkRunner)
	}
	fig := publishedFigure(t)
	plan := func(id string) *fidCase {
		t.Helper()
		p, err := fidTranslate(fig(id), fidOpenFixture, nil)
		if err != nil || p.skip != "" || p.sim == nil {
			t.Fatalf("%s: %+v, %v", id, p, err)
		}
		return p.sim
	}
	const (
		sglA100  = "accelmark-a100-80g-sglang-0.5.6-suite-a-online-qps25-tpot-median"
		sglInter = "accelmark-a100-80g-sglang-0.5.6-suite-a-interactive-ttft-median"
		sgl4090  = "accelmark-rtx4090-24g-sglang-0.5.6-suite-a-online-qps25-ttft-median"
		fp84090  = "accelmark-rtx4090-24g-sglang-0.5.6-suite-c-fp8-online-qps25-ttft-median"
		sglA6000 = "accelmark-rtx-a6000-48g-sglang-0.5.6-suite-a-online-qps100-tpot-median"
		vllmA100 = "accelmark-a100-80g-vllm-v1-0.20.1-suite-a-online-qps100-ttft-median"
		vllmIntr = "accelmark-a100-80g-vllm-v1-0.20.1-suite-a-interactive-ttft-median"
	)
	off := fidAccelMarkRunnerOpts{}

	// Every prompt of an online run, or the first 150; the first 150 are
	// the same requests either way. Interactive runs send num_prompts.
	var all, half *fidCase
	withAccelMarkRunner(t, fidAccelMarkRunnerOpts{allPrompts: true}, func() { all = plan(sglA100) })
	withAccelMarkRunner(t, off, func() { half = plan(sglA100) })
	if len(all.reqs) != 300 || len(half.reqs) != fidAccelMarkOnline {
		t.Fatalf("online prompts: %d and %d, want 300 and %d", len(all.reqs), len(half.reqs), fidAccelMarkOnline)
	}
	for i := range half.reqs {
		if a, b := half.reqs[i], all.reqs[i]; a.ID != b.ID || a.Arrival != b.Arrival || a.PromptTokens != b.PromptTokens || a.OutputTokens != b.OutputTokens {
			t.Fatalf("request %d: %+v, %+v", i, half.reqs[i], all.reqs[i])
		}
	}
	// 300 Poisson arrivals at 25 req/s span about 12 s.
	if span := float64(all.reqs[299].Arrival) / 1e9; span < 9 || span > 15 {
		t.Errorf("300 arrivals at 25 req/s span %v s", span)
	}

	// The SGLang runner's streaming cap: max_tokens 224 online, 512 one
	// at a time; vLLM's 512 everywhere.
	withAccelMarkRunner(t, off, func() {
		for id, want := range map[string]int{sglA100: 224, sglInter: 512, vllmA100: 512, vllmIntr: 512} {
			if c := plan(id); c.cfg.MaxTokens != want {
				t.Errorf("%s: max_tokens %d, want %d", id, c.cfg.MaxTokens, want)
			}
		}
	})

	// SGLang's running requests and memory share.
	withAccelMarkRunner(t, fidAccelMarkRunnerOpts{sglangSeqs: true}, func() {
		if c := plan(sglA100); c.cfg.MaxSeqs != fidAccelMarkSGLangRunning || c.cfg.GPUMemoryUtilization != 0.9 {
			t.Errorf("sglangSeqs: max_seqs %d, share %v", c.cfg.MaxSeqs, c.cfg.GPUMemoryUtilization)
		}
	})
	withAccelMarkRunner(t, off, func() {
		if c := plan(sglA100); c.cfg.MaxSeqs != 256 {
			t.Errorf("no sglangSeqs: max_seqs %d, want sim's default 256", c.cfg.MaxSeqs)
		}
	})
	withAccelMarkRunner(t, fidAccelMarkRunnerOpts{sglangSeqs: true, sglangMem: true}, func() {
		c := plan(sgl4090)
		// The KV budget is 0.88 × capacity less the weights and the
		// context, whatever the activation peak.
		res, err := fidSimulate(c.cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := c.cfg.GPU
		want := int64(fidAccelMarkSGLangMem*float64(g.Capacity)) - c.cfg.Model.WeightBytes(c.cfg.TP) - c.cfg.ContextBytes
		if d := res.KVBudgetBytes - want; d < -1<<20 || d > 1<<20 || c.cfg.GPUMemoryUtilization <= fidAccelMarkSGLangMem {
			t.Errorf("sglangMem: budget %d, want %d (share %v)", res.KVBudgetBytes, want, c.cfg.GPUMemoryUtilization)
		}
	})

	// vLLM 0.20.1's AsyncLLMEngine limits, online and one at a time.
	withAccelMarkRunner(t, fidAccelMarkRunnerOpts{vllmLimits: true}, func() {
		for _, id := range []string{vllmA100, vllmIntr} {
			if c := plan(id); c.cfg.MaxSeqs != 128 || c.cfg.MaxBatchTokens != 2048 {
				t.Errorf("%s: vllmLimits: max_seqs %d, batched tokens %d", id, c.cfg.MaxSeqs, c.cfg.MaxBatchTokens)
			}
		}
		if c := plan(sglA100); c.cfg.MaxBatchTokens != 8192 {
			t.Errorf("vllmLimits moved SGLang's chunk to %d", c.cfg.MaxBatchTokens)
		}
	})
	withAccelMarkRunner(t, off, func() {
		if c := plan(vllmA100); c.cfg.MaxSeqs != 256 || c.cfg.MaxBatchTokens != 8192 {
			t.Errorf("no vllmLimits: max_seqs %d, batched tokens %d", c.cfg.MaxSeqs, c.cfg.MaxBatchTokens)
		}
	})

	// Warm or cold.
	warm := func(o fidAccelMarkRunnerOpts, id string) bool {
		var w bool
		withAccelMarkRunner(t, o, func() { w = plan(id).cfg.WarmPrompts })
		return w
	}
	for _, o := range []fidAccelMarkRunnerOpts{off, {allPrompts: true, sglangSeqs: true, sglangMem: true, vllmLimits: true, coldEvicted: true, vllmWarm: true}} {
		if warm(o, sglInter) || warm(o, vllmIntr) {
			t.Errorf("%+v: an interactive run warm", o)
		}
		if !warm(o, sglA100) || !warm(o, sglA6000) {
			t.Errorf("%+v: SGLang's online runs on the A100 or the RTX A6000 cold", o)
		}
	}
	if warm(off, vllmA100) || !warm(fidAccelMarkRunnerOpts{vllmWarm: true}, vllmA100) {
		t.Errorf("vllmWarm does not decide vLLM's online warmth")
	}
	// The RTX 4090's pools (about 46,000 tokens for BF16 and 108,000 for
	// FP8) hold no run's 137,000 tokens of prompts and outputs.
	for _, id := range []string{sgl4090, fp84090} {
		if !warm(off, id) || warm(fidAccelMarkRunnerOpts{coldEvicted: true, sglangMem: true}, id) {
			t.Errorf("%s: coldEvicted does not make the run cold", id)
		}
	}
}
