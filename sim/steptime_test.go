package sim

import (
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// toyProfile has round numbers so that every term can be worked out by
// hand (the tests write the arithmetic):
//
//	linear ceiling  1e15 FLOP/s × 0.5 = 5e5 FLOP/ns (FP8: 1e6 FLOP/ns); blend max(c, w)
//	weight reads    1e12 B/s × 0.5 = 500 B/ns
//	prefill attn    1e15 × 0.25 = 2.5e5 FLOP/ns
//	KV traffic      1e12 × 0.25 = 250 B/ns
//	all-reduce      1e11 × 0.5 = 50 B/ns, 1 µs a call
//	overheads       1 ms a step, 10 µs a sequence, 1 µs a layer outside full graphs
//	graph sizes     1, 2, 4, 8
func toyProfile() *Profile {
	return &Profile{
		GPU: "toy", Engine: EngineVLLMV1, FittedTo: []string{Unfitted}, Notes: "toy",
		Peak:      PeakRates{BF16FLOPSPerS: 1e15, FP8FLOPSPerS: 2e15, MemBytesPerS: 1e12, LinkBytesPerS: 1e11},
		Linear:    LinearTerm{ComputeEffMax: 0.5, FP8ComputeEffMax: 0.5, ComputeHalfTokens: 100, WeightBWEff: 0.5, BlendExponent: maxBlend},
		Attention: AttentionTerm{PrefillComputeEff: 0.25, KVBWEff: 0.25},
		AllReduce: AllReduceTerm{BWEff: 0.5, LatencyNs: 1000},
		Overhead:  OverheadTerm{StepNs: 1_000_000, PerSeqNs: 10_000, EagerPerLayerNs: 1000},
		CUDAGraph: CUDAGraphTerm{Sizes: []int{1, 2, 4, 8}},
	}
}

// toyShape: 2 layers, hidden 1000, 1e9 linear FLOPs a token, 1e8 lm_head
// FLOPs a row, 1e4 attention FLOPs a pair, 1 GB of dense weights, 10 KB of
// KV a token. So (ns):
//
//	linear    2,000 a token at the ceiling, lm_head 200 a row, weights 2e6
//	prefill   1e4 ÷ 2.5e5 = 0.04 a pair
//	KV        1e4 ÷ 250 = 40 a token
func toyShape() Shape {
	return Shape{Layers: 2, Hidden: 1000, TP: 1, LinearFLOPsPerToken: 1e9, HeadFLOPsPerRow: 1e8,
		AttnFLOPsPerPair: 1e4, DenseWeightBytes: 1e9, KVBytesPerToken: 1e4, ActBytes: 2}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestStepTimeTerms(t *testing.T) {
	decode := func(seqs, ctx int64) Step {
		var s Step
		for range seqs {
			s.AddDecode(ctx, 1)
		}
		return s
	}
	prefill := func(done, n int64) Step {
		var s Step
		s.AddPrefill(done, n, 1)
		return s
	}
	tests := []struct {
		name    string
		prof    func(*Profile)
		shape   func(*Shape)
		step    Step
		want    Breakdown
		wantTot int64
	}{
		{
			// 3 decodes at context 100, padded to the graph of 4:
			// compute (4+100)×2000 + (3+100)×200 = 228,600 < weights 2e6;
			// KV (300 context + 3 written)×40 = 12,120;
			// overhead 1e6 + 3×1e4 (a full graph: no launches).
			name: "decode under a graph", step: decode(3, 100),
			want:    Breakdown{LinearNs: 2e6, KVNs: 12_120, OverheadNs: 1_030_000, Graph: true, LinearTokens: 4},
			wantTot: 3_042_120,
		},
		{
			// The same 3 decodes with ctx½ 50 and 10 µs an output token
			// added to the step: KV 12,120 + 3×50×40 = 18,120; output 3e4.
			name: "kv half context, output serial", step: decode(3, 100),
			prof:    func(p *Profile) { p.Attention.KVHalfContext, p.Overhead.PerTokenNs = 50, 10_000 },
			want:    Breakdown{LinearNs: 2e6, KVNs: 18_120, OverheadNs: 1_030_000, OutputNs: 30_000, Graph: true, LinearTokens: 4},
			wantTot: 3_078_120,
		},
		{
			// Output beside the step: max(3,042,120, 3 × 10 µs) = the step;
			// at 2 ms a token the output work, 6 ms, sets the step's time.
			name: "output overlapped, hidden", step: decode(3, 100),
			prof:    func(p *Profile) { p.Overhead.PerTokenNs, p.Overhead.OutputOverlap = 10_000, true },
			want:    Breakdown{LinearNs: 2e6, KVNs: 12_120, OverheadNs: 1_030_000, OutputNs: 30_000, Graph: true, LinearTokens: 4},
			wantTot: 3_042_120,
		},
		{
			name: "output overlapped, the bottleneck", step: decode(3, 100),
			prof:    func(p *Profile) { p.Overhead.PerTokenNs, p.Overhead.OutputOverlap = 2_000_000, true },
			want:    Breakdown{LinearNs: 2e6, KVNs: 12_120, OverheadNs: 1_030_000, OutputNs: 6e6, Graph: true, LinearTokens: 4},
			wantTot: 6_000_000,
		},
		{
			// 9 decodes: above the largest size (8), eager and unpadded:
			// compute (9+100)×2000 + 109×200 = 239,800 < 2e6;
			// KV (900 + 9)×40 = 36,360; overhead 1e6 + 9e4 + 2 layers × 1000.
			name: "decode above the graphs", step: decode(9, 100),
			want:    Breakdown{LinearNs: 2e6, KVNs: 36_360, OverheadNs: 1_092_000, LinearTokens: 9},
			wantTot: 3_128_360,
		},
		{
			// A 1,000-token prompt: compute (1000+100)×2000 + (1+100)×200 =
			// 2,220,200 > 2e6 (compute bound); pairs 1000×1001/2 = 500,500
			// × 0.04 = 20,020; KV 1000 written × 40 = 40,000; overhead
			// 1e6 + 1e4 + 2,000 (eager).
			name: "prefill", step: prefill(0, 1000),
			want: Breakdown{LinearNs: 2_220_200, PrefillAttentionNs: 20_020, KVNs: 40_000, OverheadNs: 1_012_000,
				LinearTokens: 1000, ComputeBound: true},
			wantTot: 3_292_220,
		},
		{
			// A second chunk of 500 after 1,000: pairs Σ_{1001}^{1500} c =
			// (1500×1501 − 1000×1001)/2 = 625,250 × 0.04 = 25,010; no
			// sample, so no lm_head: compute (500+100)×2000 = 1.2e6 < 2e6;
			// KV 500 × 40 = 20,000.
			name: "later chunk", step: func() Step { var s Step; s.AddPrefill(1000, 500, 0); return s }(),
			want:    Breakdown{LinearNs: 2e6, PrefillAttentionNs: 25_010, KVNs: 20_000, OverheadNs: 1_012_000, LinearTokens: 500},
			wantTot: 3_057_010,
		},
		{
			// PadMixed: a 3-token prefill is padded to 4 but is no full graph.
			// compute (4+100)×2000 + 101×200 = 228,200 < 2e6; pairs 6 × 0.04;
			// KV 3 × 40; overhead 1e6 + 1e4 + 2,000.
			name: "mixed padded", prof: func(p *Profile) { p.CUDAGraph.PadMixed = true }, step: prefill(0, 3),
			want:    Breakdown{LinearNs: 2e6, PrefillAttentionNs: 0.24, KVNs: 120, OverheadNs: 1_012_000, LinearTokens: 4},
			wantTot: 3_012_121, // ceil(3,012,120.24)
		},
		{
			// TP 2: 2 layers × 2 calls = 4 all-reduces of 4 padded tokens,
			// 8 KB a call, under AllReduceSmallBytes: the toy's 1e11 B/s link
			// is NVLink, so at AllReduceSmallLinkShare of it (11.5 B/ns):
			// 4 × 1000 ns + 4 × 2(2−1)/2 × 4 tokens × 1000 × 2 B ÷ 11.5 B/ns =
			// 4,000 + 2,782.6.
			name: "all-reduce", shape: func(s *Shape) { s.TP = 2 }, step: decode(3, 100),
			want:    Breakdown{LinearNs: 2e6, KVNs: 12_120, AllReduceNs: 4000 + 32000/11.5, OverheadNs: 1_030_000, Graph: true, LinearTokens: 4},
			wantTot: 3_048_903, // ceil(3,048,902.6)
		},
		{
			// MoE: 1 GB of routed experts, 1 of 4 per token. 1 token reads
			// 2e6 × (1 − 0.75) = 5e5 ns of experts beside the 2e6 dense.
			name: "experts, one token", shape: func(s *Shape) { s.ExpertBytes, s.ExpertShare = 1e9, 0.25 }, step: decode(1, 0),
			want:    Breakdown{LinearNs: 2.5e6, KVNs: 40, OverheadNs: 1_010_000, Graph: true, LinearTokens: 1},
			wantTot: 3_510_040,
		},
		{
			// 2 tokens: 2e6 × (1 − 0.75²) = 875,000; KV 2 × 40.
			name: "experts, two tokens", shape: func(s *Shape) { s.ExpertBytes, s.ExpertShare = 1e9, 0.25 }, step: decode(2, 0),
			want:    Breakdown{LinearNs: 2.875e6, KVNs: 80, OverheadNs: 1_020_000, Graph: true, LinearTokens: 2},
			wantTot: 3_895_080,
		},
		{
			// FP8 weights at the FP8 peak: 1,000 ns a token, 100 a row:
			// compute (1000+100)×1000 + 101×100 = 1,110,100 < 2e6.
			name: "fp8 prefill", shape: func(s *Shape) { s.FP8 = true }, step: prefill(0, 1000),
			want:    Breakdown{LinearNs: 2e6, PrefillAttentionNs: 20_020, KVNs: 40_000, OverheadNs: 1_012_000, LinearTokens: 1000},
			wantTot: 3_072_020,
		},
		{
			// FP8 weights on a GPU without FP8 math: BF16 speed.
			name: "fp8 without fp8 peak", prof: func(p *Profile) { p.Peak.FP8FLOPSPerS = 0 }, shape: func(s *Shape) { s.FP8 = true },
			step: prefill(0, 1000),
			want: Breakdown{LinearNs: 2_220_200, PrefillAttentionNs: 20_020, KVNs: 40_000, OverheadNs: 1_012_000,
				LinearTokens: 1000, ComputeBound: true},
			wantTot: 3_292_220,
		},
		{
			// 1 MB copied: read and written, 2e6 B ÷ 500 B/ns = 4,000 ns.
			name: "copy", step: func() Step { s := decode(1, 0); s.CopiedBytes = 1e6; return s }(),
			want:    Breakdown{LinearNs: 2e6, KVNs: 40, CopyNs: 4000, OverheadNs: 1_010_000, Graph: true, LinearTokens: 1},
			wantTot: 3_014_040,
		},
		{
			// No graphs at all: a single decode runs eagerly.
			name: "no graphs", prof: func(p *Profile) { p.CUDAGraph.Sizes = nil }, step: decode(1, 0),
			want:    Breakdown{LinearNs: 2e6, KVNs: 40, OverheadNs: 1_012_000, LinearTokens: 1},
			wantTot: 3_012_040,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s := toyProfile(), toyShape()
			if tt.prof != nil {
				tt.prof(p)
			}
			if tt.shape != nil {
				tt.shape(&s)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			got := p.StepTime(s, tt.step)
			w := tt.want
			w.TotalNs = tt.wantTot
			if !near(got.LinearNs, w.LinearNs) || !near(got.PrefillAttentionNs, w.PrefillAttentionNs) ||
				!near(got.KVNs, w.KVNs) || !near(got.AllReduceNs, w.AllReduceNs) || !near(got.CopyNs, w.CopyNs) ||
				!near(got.OverheadNs, w.OverheadNs) || got.TotalNs != w.TotalNs || got.Graph != w.Graph ||
				got.LinearTokens != w.LinearTokens || got.ComputeBound != w.ComputeBound {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

// TestNewShapeLlama3 checks the shape of Llama-3-8B by hand: 8,030,261,248
// parameters, of which the untied input embedding 128,256 × 4,096 =
// 525,336,576 is lookup-only and lm_head is as large.
func TestNewShapeLlama3(t *testing.T) {
	m, err := model.Preset("llama-3-8b")
	if err != nil {
		t.Fatal(err)
	}
	s := NewShape(m, 1, model.BF16)
	const params, emb = 8_030_261_248, 525_336_576
	want := Shape{Layers: 32, Hidden: 4096, TP: 1,
		LinearFLOPsPerToken: 2 * (params - emb - emb), // active (params − lookup) less lm_head: 13,959,176,192
		HeadFLOPsPerRow:     2 * emb,
		AttnFLOPsPerPair:    4 * 32 * 32 * 128, // 524,288
		AttnHeads:           32,
		DenseWeightBytes:    2 * (params - emb),   // bf16, embedding table not read: 15,009,849,344 B
		KVBytesPerToken:     2 * 32 * 8 * 128 * 2, // 131,072
		KVHeads:             8,
		ActBytes:            2,
		GEMMs:               4 * 32} // QKV, O, gate+up, down a layer
	if s != want {
		t.Fatalf("shape\n got %+v\nwant %+v", s, want)
	}
	// TP 2 halves every per-GPU figure but the attention pairs' heads
	// (32 ÷ 2 = 16) and the KV (8 ÷ 2 = 4 KV heads).
	s2 := NewShape(m, 2, model.FP8E4M3)
	if s2.LinearFLOPsPerToken != want.LinearFLOPsPerToken/2 || s2.DenseWeightBytes != want.DenseWeightBytes/2 ||
		s2.AttnFLOPsPerPair != 4*32*16*128 || s2.KVBytesPerToken != 2*32*4*128 || s2.KVHeads != 4 || s2.FP8 {
		t.Errorf("tp 2, fp8 KV: %+v", s2)
	}
	// int4 weights: a quarter of the bf16 bytes, the same FLOPs, but for
	// lm_head (emb) and the norms (2 × 4,096 × 32 + 4,096 = 266,240),
	// which stay in 16 bits (model.Split16).
	const read16 = emb + 266_240
	m.WeightDType = model.INT4
	s4 := NewShape(m, 1, model.BF16)
	if b := float64(params-emb-read16)/2 + 2*read16; s4.DenseWeightBytes != b || s4.LinearFLOPsPerToken != want.LinearFLOPsPerToken || s4.FP8 {
		t.Errorf("int4: %+v, want dense bytes %g", s4, b)
	}
	m.WeightDType = model.FP8E4M3
	if s8 := NewShape(m, 1, model.BF16); !s8.FP8 || s8.DenseWeightBytes != float64(params-emb-read16)+2*read16 || s8.WideLinearFLOPsPerToken != 0 {
		t.Errorf("fp8: %+v", s8)
	}
	// Keeping layer 0's attention in 16 bits moves its projections'
	// 2 × 4,096 × (4,096 + 1,024) = 41,943,040 parameters to 2 bytes and
	// their FLOPs to WideLinearFLOPsPerToken.
	m.Unquantized = model.Unquantized{AttentionLayers: []int{0}}
	const attn = 41_943_040
	if s8 := NewShape(m, 2, model.BF16); s8.DenseWeightBytes != (float64(params-emb-read16-attn)+2*(read16+attn))/2 ||
		s8.WideLinearFLOPsPerToken != attn || s8.LinearFLOPsPerToken != want.LinearFLOPsPerToken/2 {
		t.Errorf("fp8, layer 0's attention kept: %+v", s8)
	}
}

// TestNewShapeTiedAndMoE: a tied embedding is both the lookup table and
// lm_head, so it is read every step; DeepSeek-V3's routed experts are read
// by share.
func TestNewShapeTiedAndMoE(t *testing.T) {
	m, err := model.Preset("llama-3-8b")
	if err != nil {
		t.Fatal(err)
	}
	m.TiedEmbeddings = true
	m.Params, err = model.EstimateParams(m)
	if err != nil {
		t.Fatal(err)
	}
	const emb = 525_336_576
	s := NewShape(m, 1, model.BF16)
	// Params = 8,030,261,248 − emb; nothing is lookup-only.
	if want := 2 * float64(8_030_261_248-emb); s.DenseWeightBytes != want {
		t.Errorf("tied: dense bytes %g, want %g", s.DenseWeightBytes, want)
	}
	if want := 2 * float64(8_030_261_248-2*emb); s.LinearFLOPsPerToken != want {
		t.Errorf("tied: linear FLOPs %g, want %g", s.LinearFLOPsPerToken, want)
	}

	d, err := model.Preset("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	ds := NewShape(d, 1, model.FP8E4M3)
	// 58 MoE layers × 256 experts × 3 × 7,168 × 2,048 = 653,908,770,816
	// routed parameters, fp8 (1 B each); 8 of 256 per token.
	if ds.ExpertBytes != 653_908_770_816 || ds.ExpertShare != 8.0/256 || !ds.FP8 {
		t.Errorf("deepseek-v3: experts %g B, share %g, fp8 %v", ds.ExpertBytes, ds.ExpertShare, ds.FP8)
	}
	// Dense + the routed share a token visits is the active parameter
	// count, plus a byte more for each parameter kept in 16 bits: lm_head
	// 129,280 × 7,168 and the norms 2 × 7,168 × 61 + 7,168.
	if got, want := ds.DenseWeightBytes+ds.ExpertBytes*ds.ExpertShare, float64(d.ActiveParams()+129280*7168+2*7168*61+7168); math.Abs(got-want) > 1 {
		t.Errorf("deepseek-v3: dense + visited experts = %g, want the active %g", got, want)
	}
}

// TestStepWorkToStep: the engine's sums map onto the Profile's Step, and
// the decode-run fast path's work (no prefill fields) is all decode.
func TestStepWorkToStep(t *testing.T) {
	var w stepWork
	w.prefill(0, 10) // 55 pairs
	w.sampled++
	w.decode(100, 2) // 2 samples at context 100: 200 pairs
	w.copied = 7
	got := w.step()
	want := Step{PrefillTokens: 10, PrefillSeqs: 1, PrefillPairs: 55, DecodeSeqs: 2, DecodeContext: 200, Sampled: 3, CopiedBytes: 7}
	if got != want {
		t.Errorf("step %+v, want %+v", got, want)
	}
	var s Step
	s.AddPrefill(0, 10, 1)
	s.AddDecode(100, 2)
	s.CopiedBytes = 7
	if s != want {
		t.Errorf("AddPrefill/AddDecode %+v, want %+v", s, want)
	}
	fast := stepWork{tokens: 4, sampled: 4, attnPairs: 400, kvRead: 400}
	if got := fast.step(); got != (Step{DecodeSeqs: 4, DecodeContext: 400, Sampled: 4}) {
		t.Errorf("decode-run work %+v", got)
	}
}

// TestCostModelUsesProfile: with Config.Profile the engine's step time is
// the Profile model's total; without, the roofline's (unchanged: 3 ms
// overhead on the toy GPU, whose FLOP costs 2 fs and byte 1.25 ps).
func TestCostModelUsesProfile(t *testing.T) {
	c := tinyConfig(64 << 20)
	var w stepWork
	w.decode(100, 1)
	w.sampled = 1
	roof := newCostModel(c)
	// Roofline: 2 × 792,576 active FLOPs + 100 pairs × 8,192 = 2.4e6 FLOPs
	// (4.8 ns) against 2 MiB of weights + (100 read + 1 written) × 8 KiB of
	// KV = 2,924,544 B × 1.25 ps = 3,655.68 ns: bandwidth bound, 3,656 ns
	// rounded up, + 3 ms.
	if got := roof.stepTime(w); got != 3_003_656 {
		t.Errorf("roofline step %d ns, want 3,003,656", got)
	}
	c.Profile = toyProfile()
	cfg, err := c.validate()
	if err != nil {
		t.Fatal(err)
	}
	cm := newCostModel(cfg)
	want := c.Profile.StepTime(NewShape(cfg.Model, 1, cfg.KVDType), w.step()).TotalNs
	if got := cm.stepTime(w); got != want || got == roof.stepTime(w) {
		t.Errorf("profile step %d ns, want %d (and not the roofline's)", got, want)
	}
}

// TestBlendLinear: the linear layers' time blends compute and weight reads
// as (c^p + w^p)^(1/p): their sum at p = 1, the Euclidean norm at 2, the
// larger at 64, and in between for other p, never below the larger.
func TestBlendLinear(t *testing.T) {
	for _, tc := range []struct{ c, w, p, want float64 }{
		{3, 4, 1, 7}, {3, 4, 2, 5}, {3, 4, 64, 4}, {0, 4, 3, 4}, {0, 0, 3, 0}, {4, 4, 4, 4 * math.Pow(2, 0.25)},
	} {
		if got := BlendLinear(tc.c, tc.w, tc.p); !near(got, tc.want) {
			t.Errorf("BlendLinear(%v, %v, %v) = %v, want %v", tc.c, tc.w, tc.p, got, tc.want)
		}
	}
	prev := math.Inf(1)
	for _, p := range []float64{1, 1.5, 2, 3, 8, 32, 63} {
		got := BlendLinear(3, 4, p)
		if !(got < prev) || got < 4 {
			t.Errorf("BlendLinear(3, 4, %v) = %v: want it between max 4 and the last, %v", p, got, prev)
		}
		prev = got
	}
}

// TestBlendTable: a StepModel's tabulated blend is within 5e-5 of
// BlendLinear for any exponent and ratio.
func TestBlendTable(t *testing.T) {
	for _, p := range []float64{1.05, 1.5, 1.895, 2.5, 7, 63.9} {
		m := &StepModel{blend: p, blendTab: blendTable(p)}
		for _, r := range []float64{0, 1e-9, 0.001, 0.3, 0.5, 0.77777, 0.999, 1} {
			got, want := m.blendLinear(r*7, 7), BlendLinear(r*7, 7, p)
			if math.Abs(got/want-1) > 5e-5 {
				t.Errorf("p %v, r %v: table %v, exact %v", p, r, got, want)
			}
			if g2 := m.blendLinear(7, r*7); g2 != got {
				t.Errorf("p %v, r %v: not symmetric: %v, %v", p, r, got, g2)
			}
		}
	}
}

// TestDecodeTimerExact: a decode run's timer gives exactly Time's TotalNs
// for every step of the run (its context grows by the batch each step),
// under the embedded joint model's profiles (engines with the output beside
// the steps and on their path, tp 1 and 4, in and past the graph sizes)
// and the toy profile.
func TestDecodeTimerExact(t *testing.T) {
	m, _ := model.Preset("llama-3.1-8b")
	overlapped := toyProfile()
	overlapped.Overhead.ScheduleOverlap, overlapped.Overhead.PerSeqNs = true, 200_000 // the scheduler's side sets some steps, the GPU's others
	profs := []*Profile{toyProfile(), overlapped}
	for _, e := range []EngineKind{EngineVLLMV0, EngineVLLMV1, EngineSGLang} {
		p, err := DefaultProfile("h100-80g", e, "")
		if err != nil {
			t.Fatal(err)
		}
		profs = append(profs, p)
	}
	for pi, p := range profs {
		for _, tp := range []int{1, 4} {
			sm := p.Compile(NewShape(m, tp, model.BF16))
			for _, n := range []int64{1, 3, 8, 100, 513, 1000} {
				for _, ctx := range []int64{0, 17, 4096 * 37, 1 << 33} {
					dt := sm.decodeTimer(Step{DecodeSeqs: n, DecodeContext: float64(ctx), Sampled: n})
					for j := int64(0); j < 300; j += 7 {
						x := float64(ctx + j*n)
						want := sm.Time(Step{DecodeSeqs: n, DecodeContext: x, Sampled: n}).TotalNs
						if got := dt.at(x); got != want {
							t.Fatalf("profile %d, tp %d, %d sequences over %d, step %d: %d ns, Time %d", pi, tp, n, ctx, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestStepTimeScheduleOverlap: with Overhead.ScheduleOverlap the
// scheduler's per-step and per-sequence work runs beside the GPU's, so a
// step takes the larger of the two; launches outside a graph stay on the
// GPU's side. Toy figures (toyShape): a decode of n sequences over no
// context is 2e6 ns of weights, 40 ns a token of KV, and 1e6 + 1e4 × n ns
// of scheduling.
func TestStepTimeScheduleOverlap(t *testing.T) {
	p := toyProfile()
	sync := p.Compile(toyShape())
	p.Overhead.ScheduleOverlap = true
	async := p.Compile(toyShape())
	one := Step{DecodeSeqs: 1, Sampled: 1}
	if got, want := sync.Time(one).TotalNs, int64(2_000_000+40+1_010_000); got != want {
		t.Errorf("without overlap: %d ns, want %d (the sum)", got, want)
	}
	if got, want := async.Time(one).TotalNs, int64(2_000_040); got != want {
		t.Errorf("with overlap: %d ns, want %d (the GPU's, the scheduler's 1,010,000 hidden)", got, want)
	}
	// The scheduler's work the longer: it sets the step.
	p.Overhead.PerSeqNs = 1_000_000
	cpuBound := p.Compile(toyShape())
	four := Step{DecodeSeqs: 4, Sampled: 4}
	if got, want := cpuBound.Time(four).TotalNs, int64(5_000_000); got != want {
		t.Errorf("scheduler-bound: %d ns, want %d", got, want)
	}
	// A prefill step runs eagerly: its launches (2 layers × 1,000 ns) add to
	// the GPU's side, not the scheduler's.
	p.Overhead.PerSeqNs = 10_000
	var pre Step
	pre.AddPrefill(0, 10, 1)
	b := async.Time(pre)
	gpu := b.LinearNs + b.PrefillAttentionNs + b.KVNs + 2000
	if want := int64(math.Ceil(max(gpu, 1_010_000))); b.TotalNs != want || b.OverheadNs != 1_012_000 {
		t.Errorf("eager prefill: %d ns (overhead %v), want %d (overhead 1,012,000)", b.TotalNs, b.OverheadNs, want)
	}
}

// TestAdaFP8GEMM: vLLM's FP8 linear layers on an Ada preset run at
// AdaFP8ComputeEffMax of the FP8 peak with n½ AdaFP8ComputeHalfTokens,
// held at M = AdaFP8FlatBelow's efficiency below it; BF16 weights,
// SGLang and other GPUs keep the shared terms, and lm_head (16-bit in any
// model) runs at the BF16 ceiling.
// With 1 B of weights the blend (max) is the compute alone.
func TestAdaFP8GEMM(t *testing.T) {
	prefill := func(n int64) Step {
		var s Step
		s.AddPrefill(0, n, 1)
		return s
	}
	head := 101.0 * 200 // (1 row + n½ 100) × 200 ns: 1e8 FLOPs at the BF16 5e5 FLOP/ns
	tests := []struct {
		name, gpu string
		engine    EngineKind
		fp8       bool
		n         int64
		want      float64
	}{
		// 2e15 × 0.41 = 8.2e5 FLOP/ns: 1e9 ÷ 8.2e5 ns a token, (2000 + 275) tokens.
		{"l40s fp8 2000", "l40s-48g", EngineVLLMV1, true, 2000, 2275 * 1e9 / 8.2e5},
		// Below 128 tokens: 64 × (128 + 275) ÷ 128 tokens' worth.
		{"l40s fp8 64", "l40s-48g", EngineVLLMV1, true, 64, 64 * 403.0 / 128 * 1e9 / 8.2e5},
		{"4090 fp8 2000", "rtx4090-24g", EngineVLLMV0, true, 2000, 2275 * 1e9 / 8.2e5},
		{"l40s sglang fp8", "l40s-48g", EngineSGLang, true, 2000, 2100 * 1e9 / 1e6},
		// The shared terms: FP8 1e6 FLOP/ns, n½ 100; BF16 5e5 FLOP/ns.
		{"toy fp8", "toy", EngineVLLMV1, true, 2000, 2100 * 1e9 / 1e6},
		{"l40s bf16", "l40s-48g", EngineVLLMV1, false, 2000, 2100 * 1e9 / 5e5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s := toyProfile(), toyShape()
			p.GPU, p.Engine = tt.gpu, tt.engine
			s.FP8, s.DenseWeightBytes = tt.fp8, 1
			h := head
			got := p.StepTime(s, prefill(tt.n)).LinearNs
			if math.Abs(got-(tt.want+h)) > 1e-6*(tt.want+h) {
				t.Errorf("linear %g ns, want %g", got, tt.want+h)
			}
		})
	}
}

// TestAdaFP8FromKernelTable redoes the fit behind AdaFP8ComputeEffMax and
// AdaFP8ComputeHalfTokens, and the one of SGLang's column (0.51, 235: not
// used, docs/calibrate.md says why): sgl-project/sglang#6756's
// L40S table ("Main (with L40S)", bench_fp8_gemm.py's 4 × GFLOP/s), fitted
// in log time by the step model's GEMM form on a grid of 0.01 in eff_max
// and 5 tokens in n½, with the blend exponent (1.813) and weight efficiency
// (0.7052) of the joint fit of commit 5ca4e8c and the L40S datasheet
// (733 TFLOP/s FP8, 864 GB/s).
func TestAdaFP8FromKernelTable(t *testing.T) {
	type row struct {
		n, k float64
		v    map[float64]float64 // M → printed value
	}
	vllm := []row{
		{6144, 4096, map[float64]float64{128: 3.447794e5, 256: 5.084626e5, 512: 6.848679e5, 1024: 8.118999e5, 2048: 1.045980e6}},
		{4096, 4096, map[float64]float64{128: 3.165899e5, 256: 5.008735e5, 512: 7.064953e5, 1024: 9.870155e5, 2048: 1.172350e6}},
	}
	sglang := []row{
		{6144, 4096, map[float64]float64{128: 4.059499e5, 256: 6.453563e5, 512: 8.320296e5, 1024: 1.266360e6, 2048: 1.448570e6}},
		{4096, 4096, map[float64]float64{128: 3.995063e5, 256: 7.144863e5, 512: 7.804309e5, 1024: 1.109373e6}},
	}
	const peak, bw, p = 733e12, 864e9 * 0.7052, 1.813
	fit := func(rows []row) (eff, half, rms float64) {
		best := math.Inf(1)
		for e := 10; e < 80; e++ {
			for h := 0; h < 1500; h += 5 {
				var sum float64
				var cnt int
				for _, r := range rows {
					for m, v := range r.v {
						c := (m + float64(h)) * 2 * r.n * r.k / (peak * float64(e) / 100)
						w := r.n * r.k / bw
						model := math.Pow(math.Pow(c, p)+math.Pow(w, p), 1/p)
						meas := 2 * m * r.n * r.k / (v / 4 * 1e9)
						sum += math.Pow(math.Log(model/meas), 2)
						cnt++
					}
				}
				if sum < best {
					best, eff, half, rms = sum, float64(e)/100, float64(h), math.Sqrt(sum/float64(cnt))
				}
			}
		}
		return
	}
	if e, h, rms := fit(vllm); e != AdaFP8ComputeEffMax || h != AdaFP8ComputeHalfTokens {
		t.Errorf("vLLM's kernels fit eff_max %g, n½ %g (rms log %.3f); constants %g, %g", e, h, rms, AdaFP8ComputeEffMax, float64(AdaFP8ComputeHalfTokens))
	} else {
		t.Logf("vLLM: eff_max %g, n½ %g, rms log error %.3f", e, h, rms)
	}
	if e, h, rms := fit(sglang); e != 0.51 || h != 235 {
		t.Errorf("SGLang's kernels fit eff_max %g, n½ %g (rms log %.3f); docs/calibrate.md says 0.51, 235", e, h, rms)
	} else {
		t.Logf("SGLang: eff_max %g, n½ %g, rms log error %.3f", e, h, rms)
	}
}
