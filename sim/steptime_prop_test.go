package sim

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// drawProfile draws an embedded profile (any GPU, any engine) or a random
// valid one.
func drawProfile(t *rapid.T) *Profile {
	if rapid.Bool().Draw(t, "embedded") {
		gpus := ProfileGPUs()
		p, err := DefaultProfile(rapid.SampledFrom(gpus).Draw(t, "gpu"), EngineKind(rapid.IntRange(0, 2).Draw(t, "engine")), "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eff := func(name string) float64 { return rapid.Float64Range(0.01, 1).Draw(t, name) }
	p := toyProfile()
	p.Peak = PeakRates{BF16FLOPSPerS: rapid.Float64Range(1e12, 1e16).Draw(t, "bf16"), MemBytesPerS: rapid.Float64Range(1e10, 1e13).Draw(t, "mem"),
		LinkBytesPerS: rapid.Float64Range(1e9, 1e12).Draw(t, "link")}
	if rapid.Bool().Draw(t, "has-fp8") {
		p.Peak.FP8FLOPSPerS = 2 * p.Peak.BF16FLOPSPerS
	}
	p.Linear = LinearTerm{ComputeEffMax: eff("eff-max"), FP8ComputeEffMax: eff("eff-fp8"), ComputeHalfTokens: rapid.Float64Range(0, 1000).Draw(t, "half"), WeightBWEff: eff("eff-w"),
		BlendExponent: rapid.Float64Range(1, 64).Draw(t, "blend")}
	p.Attention = AttentionTerm{PrefillComputeEff: eff("eff-attn"), KVBWEff: eff("eff-kv"), KVHalfContext: rapid.Float64Range(0, 1000).Draw(t, "kv-half"),
		KVSeqNs: rapid.Float64Range(0, 1000).Draw(t, "kv-seq")}
	p.AllReduce = AllReduceTerm{BWEff: eff("eff-ar"), LatencyNs: rapid.Int64Range(0, 50_000).Draw(t, "ar-latency")}
	p.Overhead = OverheadTerm{StepNs: rapid.Int64Range(0, 5e6).Draw(t, "step"), PerSeqNs: rapid.Int64Range(0, 1e5).Draw(t, "per-seq"),
		EagerPerLayerNs: rapid.Int64Range(0, 1e5).Draw(t, "eager"), PerTokenNs: rapid.Int64Range(0, 1e5).Draw(t, "per-token"),
		OutputOverlap: rapid.Bool().Draw(t, "overlap")}
	var sizes []int
	for s := 0; len(sizes) < rapid.IntRange(0, 12).Draw(t, "n-sizes"); {
		s += rapid.IntRange(1, 64).Draw(t, "size-step")
		sizes = append(sizes, s)
	}
	p.CUDAGraph = CUDAGraphTerm{Sizes: sizes, PadMixed: rapid.Bool().Draw(t, "pad-mixed")}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// drawShape draws a model shape: dense or MoE, any TP, FP8 or not.
func drawShape(t *rapid.T) Shape {
	s := Shape{
		Layers: rapid.IntRange(1, 128).Draw(t, "layers"), Hidden: rapid.IntRange(64, 16384).Draw(t, "hidden"),
		TP:                  rapid.SampledFrom([]int{1, 1, 2, 4, 8}).Draw(t, "tp"),
		LinearFLOPsPerToken: rapid.Float64Range(1e6, 1e12).Draw(t, "linear-flops"),
		HeadFLOPsPerRow:     rapid.Float64Range(1e5, 1e10).Draw(t, "head-flops"),
		AttnFLOPsPerPair:    rapid.Float64Range(1e3, 1e8).Draw(t, "attn-flops"),
		DenseWeightBytes:    rapid.Float64Range(1e6, 1e12).Draw(t, "dense-bytes"),
		KVBytesPerToken:     rapid.Float64Range(1e2, 1e7).Draw(t, "kv-bytes"),
		KVHeads:             rapid.IntRange(1, 128).Draw(t, "kv-heads"),
		ActBytes:            2,
		FP8:                 rapid.Bool().Draw(t, "fp8"),
	}
	if rapid.Bool().Draw(t, "moe") {
		s.ExpertBytes = rapid.Float64Range(1e6, 1e13).Draw(t, "expert-bytes")
		s.ExpertShare = rapid.Float64Range(0.001, 1).Draw(t, "expert-share")
	}
	return s
}

// drawStep draws a step: some prefill chunks, some decodes, maybe copies.
func drawStep(t *rapid.T) Step {
	var s Step
	for range rapid.IntRange(0, 4).Draw(t, "chunks") {
		s.AddPrefill(rapid.Int64Range(0, 100_000).Draw(t, "done"), rapid.Int64Range(1, 8192).Draw(t, "chunk"),
			rapid.Int64Range(0, 2).Draw(t, "chunk-samples"))
	}
	for range rapid.IntRange(0, 40).Draw(t, "decodes") {
		s.AddDecode(rapid.Int64Range(1, 200_000).Draw(t, "ctx"), rapid.Int64Range(1, 3).Draw(t, "samples"))
	}
	if s.Tokens() == 0 {
		s.AddDecode(1, 1)
	}
	s.CopiedBytes = rapid.SampledFrom([]int64{0, 0, 1 << 20}).Draw(t, "copied")
	return s
}

// TestStepTimeMonotone: a step never gets faster with more work: one more
// prompt token (in a chunk or a new chunk), more context (a decode's or a
// chunk's earlier tokens), one more decoding sequence, or more copied
// bytes. The one exception is by design: on an engine that does not pad
// mixed steps (PadMixed off: vLLM V0, SGLang), adding prefill work to a
// pure-decode step padded to a graph size can run fewer linear tokens,
// as the engine itself does; those pairs are skipped.
func TestStepTimeMonotone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, s := drawProfile(t), drawShape(t)
		m := p.Compile(s)
		base := drawStep(t)
		more := base
		kind := rapid.IntRange(0, 5).Draw(t, "more")
		switch kind {
		case 0: // one more token in an existing chunk, or a new 1-token chunk
			more.PrefillTokens++
			if base.PrefillSeqs == 0 {
				more.PrefillSeqs++
			}
			more.PrefillPairs += rapid.Float64Range(1, 1e5).Draw(t, "extra-pairs")
		case 1: // a new chunk
			more.AddPrefill(rapid.Int64Range(0, 1000).Draw(t, "new-done"), rapid.Int64Range(1, 4096).Draw(t, "new-chunk"),
				rapid.Int64Range(0, 1).Draw(t, "new-samples"))
		case 2: // more context for the decodes
			if base.DecodeSeqs == 0 {
				return
			}
			more.DecodeContext += float64(rapid.Int64Range(1, 100_000).Draw(t, "extra-ctx"))
		case 3: // a chunk later in its prompt: more pairs, nothing else
			more.PrefillPairs += float64(rapid.Int64Range(1, 1e9).Draw(t, "later"))
		case 4: // one more decoding sequence
			more.AddDecode(rapid.Int64Range(0, 100_000).Draw(t, "new-ctx"), 1)
		case 5:
			more.CopiedBytes += rapid.Int64Range(1, 1<<30).Draw(t, "extra-copy")
		}
		if !p.CUDAGraph.PadMixed && base.PrefillTokens == 0 && more.PrefillTokens > 0 {
			return // pure decode to mixed without padding: see above
		}
		a, b := m.Time(base), m.Time(more)
		if b.TotalNs < a.TotalNs {
			t.Fatalf("more work (%d) is faster: %d ns < %d ns\nbase %+v\n     %v\nmore %+v\n     %v", kind, b.TotalNs, a.TotalNs, base, a, more, b)
		}
		for _, v := range []float64{a.LinearNs, a.PrefillAttentionNs, a.KVNs, a.AllReduceNs, a.CopyNs, a.OverheadNs} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("term %g in %v", v, a)
			}
		}
	})
}

// TestGraphPaddingStepFunction: a pure-decode step of b sequences at no
// context runs its layers on the capture size b is padded to, so over
// (previous size, size] the linear and all-reduce terms are one constant,
// the step is one graph, and above the largest size it is not. (lm_head
// runs outside the graph on the real rows, so the steps compared here
// sample one row each, to hold that part fixed.) The sizes are those
// captured at the shape's TP (CUDAGraphTerm.SmallTPMax).
func TestGraphPaddingStepFunction(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, s := drawProfile(t), drawShape(t)
		sizes := graphSizes(p.CUDAGraph, s.TP)
		if len(sizes) == 0 {
			return
		}
		m := p.Compile(s)
		at := func(b int64) Breakdown { return m.Time(Step{DecodeSeqs: b, Sampled: 1}) }
		i := rapid.IntRange(0, len(sizes)-1).Draw(t, "size")
		lo := int64(1)
		if i > 0 {
			lo = int64(sizes[i-1]) + 1
		}
		top := at(int64(sizes[i]))
		b := rapid.Int64Range(lo, int64(sizes[i])).Draw(t, "batch")
		got := at(b)
		if got.LinearTokens != int64(sizes[i]) || !got.Graph || got.LinearNs != top.LinearNs || got.AllReduceNs != top.AllReduceNs {
			t.Fatalf("batch %d in (%d, %d]: %v, want the linear and all-reduce of %v", b, lo-1, sizes[i], got, top)
		}
		if above := at(int64(sizes[len(sizes)-1]) + 1); above.Graph || above.LinearTokens != int64(sizes[len(sizes)-1])+1 {
			t.Fatalf("above the largest size: %v", above)
		}
	})
}
