package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// priorTTFTCite is a published TTFT at about 1 QPS of a setup no fitted
// source of calib/published.yaml ran, from which sim/profiles/prior.yaml
// derives an engine class's request_ns: the TTFT less the prior's own
// prefill step (linear layers, all-reduce, launches, scheduling) and the
// mean wait for the decode step in flight.
type priorTTFTCite struct {
	url               string
	gpu               string
	tp                int
	layers            int
	paramsNonEmb      float64 // linear-layer weights, all layers
	paramsLMHead      float64 // the output projection, read once
	hidden            int
	promptTokens      float64 // ShareGPT's mean prompt under the model's tokenizer
	ttftMs            float64 // the published TTFT
	tpotMs            float64 // the decode step in flight (the run's TPOT or ITL)
	busy              float64 // the share of arrivals that find a step in flight
	eagerPerLayerNs   float64 // the class's launches per layer (the prior's)
	stepNs, perSeqNs  float64 // the class's scheduling (the prior's)
	seqs              float64 // sequences in the prefill step
	wantRequestNs     int64
	class             string
	alsoSetsClassesTo []string // classes with no figure of their own that take this one
}

// TestPriorEngineValuesAreCited: the prior's engine overheads that
// sim/profiles/prior.yaml derives from independent measurements (vLLM
// PRs #3466, #10058 and #20059, SGLang PR #1401; issue 24, tenth session) are the values the
// arithmetic of its comments gives from the cited figures, the prior's own
// efficiencies and the GPUs' datasheet peaks, and the comments cite them.
// Reverting a value (or changing an efficiency the derivation uses without
// redoing it) fails here.
func TestPriorEngineValuesAreCited(t *testing.T) {
	j := PriorJoint()
	text := string(PriorYAML())
	lin := j.Linear
	cites := []priorTTFTCite{{
		// Mistral-7B-Instruct-v0.1 on 2 H100s, vLLM 0.4, multiprocessing executor:
		// mean TTFT 22.31 ms, TPOT 8.20 ms at 1 QPS of ShareGPT.
		url: "https://github.com/vllm-project/vllm/pull/3466", gpu: "h100-80g", tp: 2, layers: 32,
		paramsNonEmb: 32 * (4096*4096*2 + 4096*1024*2 + 3*4096*14336), paramsLMHead: 32000 * 4096, hidden: 4096,
		promptTokens: 230, ttftMs: 22.31, tpotMs: 8.2, busy: 0.8,
		eagerPerLayerNs: 27000, stepNs: 2e6, perSeqNs: 60000, seqs: 2,
		wantRequestNs: 12_000_000, class: "vllm-v0-sync", alsoSetsClassesTo: []string{"vllm-v0"},
	}, {
		// Qwen2.5-1.5B-Instruct on an A100-40GB, vLLM V1 with piecewise graphs:
		// median TTFT 14.56 ms, ITL 5.39 ms at 1 QPS of ShareGPT.
		url: "https://github.com/vllm-project/vllm/pull/20059", gpu: "a100-40g", tp: 1, layers: 28,
		paramsNonEmb: 28 * (1536*1536*2 + 1536*256*2 + 3*1536*8960), paramsLMHead: 151936 * 1536, hidden: 1536,
		promptTokens: 233, ttftMs: 14.56, tpotMs: 5.4, busy: 0.7,
		eagerPerLayerNs: 13000, stepNs: 0.5e6, perSeqNs: 20000, seqs: 2,
		wantRequestNs: 8_000_000, class: "vllm-v1",
	}}
	for _, c := range cites {
		g, err := model.LookupGPU(c.gpu)
		if err != nil {
			t.Fatal(err)
		}
		tp := float64(c.tp)
		compute := 2 * c.paramsNonEmb * c.promptTokens / tp / (g.BF16FLOPS * lin.ComputeEffMax)
		weights := 2 * (c.paramsNonEmb + c.paramsLMHead) / tp / (g.MemBandwidth * lin.WeightBWEff)
		stepS := math.Pow(math.Pow(compute, lin.BlendExponent)+math.Pow(weights, lin.BlendExponent), 1/lin.BlendExponent)
		if c.tp > 1 {
			// two ring all-reduces a layer of the prompt's activations (2(n-1)/n of them cross each link)
			bytes := c.promptTokens * float64(c.hidden) * 2 * 2 * (tp - 1) / tp
			stepS += float64(2*c.layers) * (float64(j.AllReduce.LatencyNs)/1e9 + bytes/(g.LinkBandwidth*j.AllReduce.BWEff))
		}
		stepS += (c.eagerPerLayerNs*float64(c.layers) + c.stepNs + c.perSeqNs*c.seqs) / 1e9
		waitS := c.busy * c.tpotMs / 2 / 1e3
		derivedNs := (c.ttftMs/1e3 - stepS - waitS) * 1e9
		rounded := int64(math.Round(derivedNs/1e6)) * 1e6
		if rounded != c.wantRequestNs {
			t.Errorf("%s: %s's TTFT %.2f ms less the prior's step %.2f ms and wait %.2f ms is %.2f ms, rounded %d ns; want %d",
				c.class, c.url, c.ttftMs, stepS*1e3, waitS*1e3, derivedNs/1e6, rounded, c.wantRequestNs)
		}
		for _, class := range append([]string{c.class}, c.alsoSetsClassesTo...) {
			if got := j.Engines[class].RequestNs; got != c.wantRequestNs {
				t.Errorf("prior.yaml engines.%s.request_ns = %d, want %d (derived from %s)", class, got, c.wantRequestNs, c.url)
			}
		}
		if p := j.Engines[c.class]; float64(p.EagerPerLayerNs) != c.eagerPerLayerNs || float64(p.StepNs) != c.stepNs || float64(p.PerSeqNs) != c.perSeqNs {
			t.Errorf("prior.yaml engines.%s: eager %d, step %d, per-seq %d ns; the derivation of request_ns used %.0f, %.0f, %.0f: redo it",
				c.class, p.EagerPerLayerNs, p.StepNs, p.PerSeqNs, c.eagerPerLayerNs, c.stepNs, c.perSeqNs)
		}
		if !strings.Contains(text, c.url) {
			t.Errorf("prior.yaml's comments do not cite %s", c.url)
		}
	}

	// Launches per layer: the per-token time of eager decoding less that of
	// graphed decoding, over the layers.
	for _, e := range []struct {
		classes                   []string
		url                       string
		eagerMs, graphMs, perStep float64 // per-step divisor: decode steps timed
		layers                    float64
	}{
		// Llama 3.1 8B, benchmark_latency.py's defaults (8 × 32 prompt tokens, 128 output
		// tokens: 127 decode steps): 1.10 s eager against 0.99 s graphed.
		{[]string{"vllm-v0-sync", "vllm-v0"}, "https://github.com/vllm-project/vllm/pull/10058", 1100, 990, 127, 32},
		// Llama-3-8B at batch 1 with FlashInfer: median decode 8.23 ms eager against 7.35 ms graphed.
		{[]string{"sglang"}, "https://github.com/sgl-project/sglang/pull/1401", 8.23, 7.35, 1, 32},
		// V1's piecewise graphs against one full graph: median ITL 5.39 ms against 5.03 ms,
		// Qwen2.5-1.5B's 28 layers.
		{[]string{"vllm-v1"}, "https://github.com/vllm-project/vllm/pull/20059", 5.39, 5.03, 1, 28},
	} {
		want := int64(math.Round((e.eagerMs-e.graphMs)/e.perStep/e.layers*1e3)) * 1000
		for _, class := range e.classes {
			if got := j.Engines[class].EagerPerLayerNs; got != want {
				t.Errorf("prior.yaml engines.%s.eager_per_layer_ns = %d, want %d (from %s)", class, got, want, e.url)
			}
		}
		if !strings.Contains(text, e.url) {
			t.Errorf("prior.yaml's comments do not cite %s", e.url)
		}
	}
	for _, fig := range []string{"22.31 ms", "14.56 ms", "5.39 ms", "5.03 ms", "1.10 s", "0.99 s", "8.23 ms", "7.35 ms", "issues/8918"} {
		if !strings.Contains(text, fig) {
			t.Errorf("prior.yaml's comments do not state %q", fig)
		}
	}
}
