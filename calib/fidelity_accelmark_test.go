package calib

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/sim"
)

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
	// The replay's choice: the runs as the client and the runners ran
	// them, every switch but coldEvicted, which the RTX 4090 FP8's
	// measured TTFTs contradict (docs/calibrate.md, "Issue 24, fifteenth
	// session").
	if want := (fidAccelMarkRunnerOpts{allPrompts: true, sglangSeqs: true, sglangMem: true, vllmLimits: true,
		vllmWarm: true, clientArrivals: true, allRuns: true}); fidAccelMarkRunner != want {
		t.Errorf("fidAccelMarkRunner %+v, want %+v", fidAccelMarkRunner, want)
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

// TestFidelityAccelMarkClientRuns checks clientArrivals and allRuns: the
// client's own arrival times for the figure's rate (suite A at 25 req/s is
// the second rate, so three runs of 300 draws at 5 req/s come first), the
// runs one after another with the same prompts and outputs, their prompts
// shared between the runs where the replay is warm and not where it is
// cold, and the replay's own draws (the outputs) untouched.
func TestFidelityAccelMarkClientRuns(t *testing.T) {
	fig := publishedFigure(t)
	plan := func(o fidAccelMarkRunnerOpts, id string) *fidCase {
		t.Helper()
		var c *fidCase
		withAccelMarkRunner(t, o, func() {
			p, err := fidTranslate(fig(id), fidOpenFixture, nil)
			if err != nil || p.skip != "" || p.sim == nil {
				t.Fatalf("%s: %+v, %v", id, p, err)
			}
			c = p.sim
		})
		return c
	}
	const (
		sglA100  = "accelmark-a100-80g-sglang-0.5.6-suite-a-online-qps25-tpot-median"
		vllmA100 = "accelmark-a100-80g-vllm-v1-0.20.1-suite-a-online-qps25-ttft-median"
		sglInter = "accelmark-a100-80g-sglang-0.5.6-suite-a-interactive-ttft-median"
		sgl4090  = "accelmark-rtx4090-24g-sglang-0.5.6-suite-a-online-qps25-ttft-median"
	)
	runs, err := fidAccelMarkClientArrivals("_suite_A_", 25, 300)
	if err != nil {
		t.Fatal(err)
	}
	main := plan(fidAccelMarkRunnerOpts{}, sglA100)
	one := plan(fidAccelMarkRunnerOpts{clientArrivals: true}, sglA100)
	if len(one.reqs) != fidAccelMarkOnline {
		t.Fatalf("clientArrivals: %d requests, want %d", len(one.reqs), fidAccelMarkOnline)
	}
	for i, r := range one.reqs {
		m := main.reqs[i]
		if r.Arrival != int64(runs[0][i]*1e9) || r.PromptTokens != m.PromptTokens || r.OutputTokens != m.OutputTokens || r.PrefixHashes != nil {
			t.Fatalf("clientArrivals, request %d: %+v, want main's %+v at %v s", i, r, m, runs[0][i])
		}
	}
	// The first arrival of the run at 25 req/s is 0.19675 s after its
	// start (python3, TestFidelityAccelMarkClientArrivals' loop).
	if a := one.reqs[0].Arrival; a != 196751664 {
		t.Errorf("clientArrivals: first arrival %d ns, want 196751664", a)
	}

	all := plan(fidAccelMarkRunnerOpts{clientArrivals: true, allRuns: true, allPrompts: true}, sglA100)
	if len(all.reqs) != 900 || !all.cfg.WarmPrompts {
		t.Fatalf("allRuns: %d requests (warm %v), want 3 runs of 300, warm", len(all.reqs), all.cfg.WarmPrompts)
	}
	for k := range 3 {
		start := int64(0)
		if k > 0 {
			start = all.reqs[300*k-1].Arrival + fidAccelMarkRunGap
		}
		for i := range 300 {
			r, first := all.reqs[300*k+i], all.reqs[i]
			if r.Arrival != start+int64(runs[k][i]*1e9) || r.PromptTokens != first.PromptTokens || r.OutputTokens != first.OutputTokens ||
				len(r.PrefixHashes) == 0 || len(r.PrefixHashes) != len(first.PrefixHashes) || r.PrefixHashes[0] != first.PrefixHashes[0] {
				t.Fatalf("allRuns, run %d request %d: %+v, want request %d's prompt at %v s after %d", k, i, r, i, runs[k][i], start)
			}
		}
	}
	if all.reqs[0].PrefixHashes[0] == all.reqs[1].PrefixHashes[0] {
		t.Errorf("allRuns: two prompts share a prefix id")
	}
	// The page's note says where the pool cannot hold a run: warm at the
	// start, then the sim's own cache (the RTX 4090's BF16 pool finds
	// nothing of a prompt again), not "the prefix cache keeps the prompts".
	for id, small := range map[string]bool{sglA100: false, sgl4090: true} {
		withAccelMarkRunner(t, fidAccelMarkRunnerOpts{clientArrivals: true, allRuns: true, allPrompts: true, sglangMem: true, vllmWarm: true}, func() {
			p, err := fidTranslate(fig(id), fidOpenFixture, nil)
			if err != nil || p.sim == nil || !p.sim.cfg.WarmPrompts {
				t.Fatalf("%s: %+v, %v", id, p, err)
			}
			if strings.Contains(p.note, "warm: the prefix cache keeps") == small || strings.Contains(p.note, "least-recently-used prefix cache decides") != small {
				t.Errorf("%s: note %q", id, p.note)
			}
		})
	}
	// vLLM's online replay is cold (without vllmWarm): no prompt is shared.
	cold := plan(fidAccelMarkRunnerOpts{clientArrivals: true, allRuns: true}, vllmA100)
	if len(cold.reqs) != 3*fidAccelMarkOnline || cold.cfg.WarmPrompts {
		t.Fatalf("allRuns, vLLM: %d requests (warm %v), want 3 runs of %d, cold", len(cold.reqs), cold.cfg.WarmPrompts, fidAccelMarkOnline)
	}
	for _, r := range cold.reqs {
		if r.PrefixHashes != nil {
			t.Fatalf("allRuns, cold: %s carries prefix ids", r.ID)
		}
	}
	// The page's note says whose arrivals the replay runs.
	for _, o := range []fidAccelMarkRunnerOpts{{}, {clientArrivals: true}} {
		withAccelMarkRunner(t, o, func() {
			p, err := fidTranslate(fig(sglA100), fidOpenFixture, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(p.note, "the client's own arrivals"); got != o.clientArrivals || strings.Contains(p.note, "arrivals drawn") == o.clientArrivals {
				t.Errorf("clientArrivals %v: note %q", o.clientArrivals, p.note)
			}
		})
	}
	// One at a time, the switches change nothing.
	a, b := plan(fidAccelMarkRunnerOpts{}, sglInter), plan(fidAccelMarkRunnerOpts{clientArrivals: true, allRuns: true}, sglInter)
	if len(a.reqs) != len(b.reqs) || a.reqs[0].Arrival != b.reqs[0].Arrival || a.reqs[0].OutputTokens != b.reqs[0].OutputTokens {
		t.Errorf("interactive: the switches changed the run")
	}
}

// TestFidelityAccelMarkRunGap: under allRuns the replay starts each run
// fidAccelMarkRunGap after the last arrival of the one before, which holds
// the client's order (a run starts when the last one has finished) only
// while every run of the sim is done within the gap: checked for every
// replayed online figure under the embedded joint model, the first runs
// replayed alone.
func TestFidelityAccelMarkRunGap(t *testing.T) {
	if !fidAccelMarkRunner.allRuns {
		t.Skip("the runs are not replayed one after another")
	}
	if testing.Short() {
		t.Skip("simulates every online AccelMark replay (0.8 s; minutes under -race)")
	}
	if invariants.Enabled {
		// The run's end times it checks are the plain build's; the
		// engine's self-checks on every step make it take 4.5 minutes,
		// most of CI's -tags invariants step.
		t.Skip("simulates every online AccelMark replay: the plain build checks it (0.8 s; 275 s under -tags invariants)")
	}
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	j := sim.DefaultJoint()
	n := 0
	for i := range d.Figures {
		f := &d.Figures[i]
		if f.Source != "accelmark" || f.Use != "fit" || f.Setup.Workload.MaxConcurrency == 1 || f.Metric != "ttft_median" {
			continue
		}
		p, err := fidTranslate(f, fidOpenFixture, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.skip != "" {
			continue
		}
		c := p.sim
		prof, err := caseProfile(j, c)
		if err != nil {
			t.Fatal(err)
		}
		runs := len(c.reqs) / f.Setup.Workload.NumPrompts
		for k := 1; k < runs; k++ {
			res, err := fidSimulate(c.cfg, prof, c.reqs[:k*f.Setup.Workload.NumPrompts])
			if err != nil {
				t.Fatal(err)
			}
			if next := float64(c.reqs[k*f.Setup.Workload.NumPrompts].Arrival) / 1e9; !(res.SimulatedSeconds < next) {
				t.Errorf("%s: run %d ends at %.1f s, after run %d starts (%.1f s)", f.ID, k, res.SimulatedSeconds, k+1, next)
			}
		}
		n++
	}
	if n == 0 {
		t.Error("no online AccelMark figure replayed")
	}
}
