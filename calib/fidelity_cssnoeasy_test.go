package calib

import (
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// TestCssnoeasyFigures: the per-run figures of the short load average to
// the source's own means (its section 八 prints the mean of the three runs
// of section 十), so a misread cell fails here; every figure is a
// cross-check (calib/README.md: the repeats' cache state is not logged, the
// short load's first run is a start-up transient).
func TestCssnoeasyFigures(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Figure{}
	n := 0
	for i := range d.Figures {
		f := &d.Figures[i]
		if f.Source != "cssnoeasy-a100-pcie" {
			continue
		}
		n++
		byID[f.ID] = f
		if f.Use != "cross-check" {
			t.Errorf("line %d: %s: use %q, want cross-check", f.Line, f.ID, f.Use)
		}
		if strings.Contains(f.ID, "-r1-") && !strings.Contains(f.UseNote, "start-up transient") {
			t.Errorf("line %d: %s: a first run is a start-up transient: %q", f.Line, f.ID, f.UseNote)
		}
		w := f.Setup.Workload
		if w.InputLen*w.OutputLen == 0 || w.NumPrompts != 100 || f.Setup.GPUs != f.Setup.TP {
			t.Errorf("line %d: %s: setup %+v", f.Line, f.ID, f.Setup)
		}
	}
	if n != 24 {
		t.Fatalf("%d figures of cssnoeasy-a100-pcie, want 24 (6 loads x 2 metrics, 6 short runs x 2)", n)
	}
	val := func(id string) float64 {
		f := byID["cssnoeasy-a100pcie-qwen2.5-7b-"+id]
		if f == nil {
			t.Fatalf("no figure %s", id)
		}
		return f.Value
	}
	for _, tp := range []string{"tp1", "tp2"} {
		var ttft, tput float64
		for _, r := range []string{"r1", "r2", "r3"} {
			ttft += val(tp+"-512x256-c8-"+r+"-ttft-median") / 3
			tput += val(tp+"-512x256-c8-"+r+"-output-throughput") / 3
		}
		// Cells of 2 decimals; a request rate of 2 decimals is ±1.28 tok/s.
		if m := val(tp + "-512x256-c8-mean3-ttft-median"); math.Abs(ttft-m) > 0.01 {
			t.Errorf("%s: mean of the runs' TTFT %.3f, the source's mean %.2f", tp, ttft, m)
		}
		if m := val(tp + "-512x256-c8-mean3-output-throughput"); math.Abs(tput-m) > 1.28 {
			t.Errorf("%s: mean of the runs' throughput %.2f, the source's mean %.2f", tp, tput, m)
		}
	}
}

// TestCssnoeasyTranslate: the runs replay on the A100 PCIe built in
// fidGPUs (its link is PCIe: the joint model's all_reduce_pcie times TP 2),
// at vLLM 0.19's A100 defaults; a repeat runs warm, a mean over three runs
// is one cold and two warm runs.
func TestCssnoeasyTranslate(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	p, err := fidTranslate(fig("cssnoeasy-a100pcie-qwen2.5-7b-tp2-512x256-c8-r2-ttft-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || p.sim == nil {
		t.Fatalf("r2: %+v, %v", p, err)
	}
	c := p.sim.cfg
	if c.GPU.Name != "a100-80g-pcie" || c.GPU.LinkBandwidth > sim.PCIeLinkBytesPerS || c.GPU.MemBandwidth != 1935e9 || c.TP != 2 ||
		c.Engine != sim.EngineVLLMV1 || c.EngineVersion != "0.19.0" || c.MaxBatchTokens != 2048 || c.MaxSeqs != 256 ||
		!c.PrefixCaching || !c.WarmPrompts || c.MaxConcurrency != 8 || c.GPUMemoryUtilization != 0.75 || c.MaxContext != 4096 ||
		len(p.sim.reqs) != 100 || p.sim.reqs[0].PromptTokens != 512 || p.sim.reqs[0].OutputTokens != 256 || p.base != nil {
		t.Errorf("r2: %+v (base %v)", c, p.base)
	}
	p, err = fidTranslate(fig("cssnoeasy-a100pcie-qwen2.5-7b-tp1-512x256-c8-r1-ttft-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || p.sim == nil || p.sim.cfg.WarmPrompts || p.base != nil {
		t.Errorf("r1 is one cold run: %+v, %v", p, err)
	}
	p, err = fidTranslate(fig("cssnoeasy-a100pcie-qwen2.5-7b-tp1-2048x128-c16-mean3-output-throughput"), fidOpenFixture, files)
	if err != nil || p.skip != "" || p.sim == nil || p.base == nil || p.combine == nil {
		t.Fatalf("mean3: %+v, %v", p, err)
	}
	if !p.sim.cfg.WarmPrompts || p.base.cfg.WarmPrompts || p.sim.key == p.base.key || p.sim.reqs[0].PromptTokens != 2048 ||
		p.sim.cfg.MaxConcurrency != 16 {
		t.Errorf("mean3: warm %v cold %v keys %q %q", p.sim.cfg.WarmPrompts, p.base.cfg.WarmPrompts, p.sim.key, p.base.key)
	}
	if got := p.combine(10, 40); got != 20 {
		t.Errorf("mean of one cold run (40) and two warm (10): %v, want 20", got)
	}
	res := []sim.Result{{}, {}}
	if _, ok, err := p.value(nil, res, 0, 1); err != nil || ok {
		t.Errorf("empty results give a value: ok %v, %v", ok, err)
	}
	// A repeat without prefix caching, or a repeat that is also a mean,
	// is a misread setup: an error naming the figure, not a replay.
	f := *fig("cssnoeasy-a100pcie-qwen2.5-7b-tp2-512x256-c8-r2-ttft-median")
	off := false
	f.Setup.Workload.PrefixCaching = &off
	if _, err := fidTranslate(&f, fidOpenFixture, files); err == nil || !strings.Contains(err.Error(), f.ID) {
		t.Errorf("warm repeat without prefix caching: %v", err)
	}
	f = *fig("cssnoeasy-a100pcie-qwen2.5-7b-tp2-512x256-c8-r2-ttft-median")
	f.Setup.Workload.RunsPooled = 3
	if _, err := fidTranslate(&f, fidOpenFixture, files); err == nil || !strings.Contains(err.Error(), "runs_pooled") {
		t.Errorf("warm_from with runs_pooled: %v", err)
	}
}

// TestCssnoeasyPooledRatio: a throughput ratio (its base the same client
// at concurrency 1) cannot also be a mean over a cold run and warm
// repeats: the ratio's base would replace the cold run while the mean
// stayed the combination, so the figure would be (base + 2 × warm) ÷ 3,
// neither a ratio nor a mean. Such a setup is refused, naming the figure.
func TestCssnoeasyPooledRatio(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	f := *fig("cssnoeasy-a100pcie-qwen2.5-7b-tp1-2048x128-c16-mean3-output-throughput")
	f.Metric, f.Unit = "throughput_ratio", "ratio"
	f.Setup.Workload.NumPrompts = 96 // a multiple of the concurrency, 16
	p, err := fidTranslate(&f, fidOpenFixture, files)
	if err == nil {
		var v float64
		if p.sim != nil && p.base != nil && p.combine != nil {
			v = p.combine(4, 1) // 4 at C, 1 at concurrency 1: the ratio is 4
		}
		t.Fatalf("a pooled throughput ratio translated (combine set %v, ratio of 4 and 1 read as %v)", p.combine != nil, v)
	}
	if !strings.Contains(err.Error(), f.ID) || !strings.Contains(err.Error(), "throughput_ratio") {
		t.Errorf("pooled throughput ratio: %v", err)
	}
}
