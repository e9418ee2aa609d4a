// The step-time model of a Profile: one step's time as a sum of terms that
// can each be calibrated. See profile.go for the parameters and their
// units, and doc.go for where a step's time is used.

package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpufrag/gpufrag/model"
)

// Shape is what the step-time model needs of a model on one GPU of its
// tensor-parallel group: FLOPs and bytes per unit of work. NewShape
// derives it; calibration code may build one by hand.
type Shape struct {
	Layers int // decoder layers
	Hidden int // hidden size (the all-reduced activation width)
	TP     int // tensor-parallel degree

	// LinearFLOPsPerToken is 2 × (active parameters − lm_head) ÷ tp: every
	// computed token passes through the projections and MLPs.
	LinearFLOPsPerToken float64
	// WideLinearFLOPsPerToken is the part of LinearFLOPsPerToken whose
	// weights a quantized model keeps in 16 bits (model.Unquantized: 2 ×
	// Split16.Linear ÷ tp): those GEMMs run at the BF16 peak. 0 when every
	// projection is in the weights' type.
	WideLinearFLOPsPerToken float64
	// HeadFLOPsPerRow is 2 × vocab × hidden ÷ tp: lm_head runs only on the
	// sampled positions (vLLM computes logits at logits_indices), in 16
	// bits whatever the weights' type (model.Split16).
	HeadFLOPsPerRow float64
	// AttnFLOPsPerPair is 4 × layers × heads ÷ tp × head dim: QKᵀ and AV
	// for one (query, key) pair.
	AttnFLOPsPerPair float64
	// AttnHeads is the query heads per GPU, max(1, heads ÷ tp): prefill
	// attention's fixed work per query token is per head and layer
	// (Attention.PrefillTokNs).
	AttnHeads int
	// DenseWeightBytes are the weights every step reads, per GPU: all but
	// lookup-only tables (an untied input embedding, OPT's positions),
	// which a step gathers a few rows of, and the routed experts; a
	// quantized model's 16-bit parts (model.Split16.Read) at 2 bytes.
	DenseWeightBytes float64
	// ExpertBytes are all routed experts' weights per GPU (0 for a dense
	// model); a step reads the share its tokens are routed to.
	ExpertBytes float64
	// ExpertShare is experts per token ÷ routed experts (0 for dense).
	ExpertShare float64
	// KVBytesPerToken is one token's K and V over all layers, per GPU.
	KVBytesPerToken float64
	// KVHeads is the KV heads per GPU the decode kernel splits its work
	// by, one (sequence, KV head) at a time: KVHeadsPerGPU(tp), 1 for MLA
	// (one latent all heads share).
	KVHeads int
	// ActBytes is the size of one activation element (2: bf16/fp16).
	ActBytes float64
	// FP8 says the weights are FP8, so the linear layers (but for
	// WideLinearFLOPsPerToken and lm_head) run at the FP8 peak where the
	// GPU has one.
	FP8 bool
	// GEMMs is the GEMM kernels a step runs per GPU, each paying
	// Linear.GEMMFixedNs: GEMMsPerLayer × layers (0 in a hand-built
	// Shape: no fixed time).
	GEMMs int
}

// GEMMsPerLayer is the GEMM kernels NewShape counts a layer: a dense
// Llama layer's QKV, O, gate+up and down projections (vLLM and SGLang
// merge QKV and gate+up into one GEMM each). An MoE layer is counted the
// same: QKV, O and the fused-MoE kernel's two grouped GEMMs (w13, w2);
// its router GEMM and shared experts are left out, as are MLA's extra
// projections (the fixed time is drawn from dense Llama layers only).
const GEMMsPerLayer = 4

// NewShape derives the Shape of m (with its WeightDType) at tensor
// parallelism tp with KV elements of type kv. m must pass Validate and
// ValidateTP(tp).
func NewShape(m model.Model, tp int, kv model.DType) Shape {
	t := float64(tp)
	wb := float64(m.WeightDType.Bits()) / 8
	active := float64(m.ActiveParams())
	head := float64(m.Vocab) * float64(m.Hidden)
	var routed, share float64
	if e := m.MoE; e != nil && e.Experts > 0 {
		perExpert := 3 * float64(m.Hidden) * float64(e.ExpertIntermediate)
		routed = float64(m.Layers-e.DenseLayers) * float64(e.Experts) * perExpert
		share = float64(e.ExpertsPerToken) / float64(e.Experts)
	}
	inactive := routed * (1 - share)
	lookup := max(0, float64(m.Params)-active-inactive)
	dense := max(0, float64(m.Params)-lookup-routed)
	kvHeads := m.KVHeadsPerGPU(tp)
	if m.MLA != nil {
		kvHeads = 1
	}
	// A quantized model's embedding, lm_head, norms and Unquantized parts
	// stay in 16 bits.
	w16 := m.Split16()
	read16 := min(float64(w16.Read), dense)
	return Shape{
		Layers: m.Layers, Hidden: m.Hidden, TP: tp,
		LinearFLOPsPerToken:     2 * max(0, active-head) / t,
		WideLinearFLOPsPerToken: 2 * min(float64(w16.Linear), max(0, active-head)) / t,
		HeadFLOPsPerRow:         2 * head / t,
		AttnFLOPsPerPair:        4 * float64(m.Layers) * float64(max(1, m.Heads/tp)) * float64(m.HeadDim),
		AttnHeads:               max(1, m.Heads/tp),
		DenseWeightBytes:        ((dense-read16)*wb + read16*2) / t,
		ExpertBytes:             routed * wb / t,
		ExpertShare:             share,
		KVBytesPerToken:         float64(m.KVBytesPerToken(kv, tp)),
		KVHeads:                 kvHeads,
		ActBytes:                2,
		FP8:                     m.WeightDType == model.FP8E4M3 || m.WeightDType == model.FP8E5M2,
		GEMMs:                   GEMMsPerLayer * m.Layers,
	}
}

// Step is one step's work, as the engine composes it (schedule.go) or as a
// calibration replays it.
type Step struct {
	PrefillTokens int64   // prompt tokens computed, over all chunks
	PrefillSeqs   int64   // sequences with a prefill chunk
	PrefillPairs  float64 // Σ causal (query, key) pairs of the chunks
	DecodeSeqs    int64   // sequences decoding one token (each sample of a request is one)
	DecodeContext float64 // Σ tokens the decodes attend to (their KV read)
	Sampled       int64   // positions sampled: rows through lm_head
	CopiedBytes   int64   // KV bytes copied (reallocations, copy-on-write)
}

// AddPrefill adds a chunk of n prompt tokens after done tokens already in
// the KV cache; samples is the rows the chunk samples: 0 for a chunk that
// does not end the prompt, else the request's parallel samples (1 usually).
func (s *Step) AddPrefill(done, n int64, samples int64) {
	s.PrefillTokens += n
	s.PrefillSeqs++
	a, b := float64(done), float64(done+n)
	// Σ_{c=done+1}^{done+n} c: query token c attends to c keys (causal).
	s.PrefillPairs += (b*(b+1) - a*(a+1)) / 2
	s.Sampled += samples
}

// AddDecode adds one token for each of samples sequences whose context is
// ctx tokens.
func (s *Step) AddDecode(ctx, samples int64) {
	s.DecodeSeqs += samples
	s.DecodeContext += float64(ctx * samples)
	s.Sampled += samples
}

// Tokens is the step's computed tokens (prefill and decode).
func (s Step) Tokens() int64 { return s.PrefillTokens + s.DecodeSeqs }

// Breakdown is a step's time per term, in ns. TotalNs is what the engine
// advances its clock by: the sum of the terms rounded up, at least 1.
type Breakdown struct {
	LinearNs           float64 `json:"linear_ns" yaml:"linear_ns"`                       // projections, MLPs and lm_head: max(compute, weight reads)
	PrefillAttentionNs float64 `json:"prefill_attention_ns" yaml:"prefill_attention_ns"` // causal attention FLOPs of the prefill chunks
	LayerKernelsNs     float64 `json:"layer_kernels_ns" yaml:"layer_kernels_ns"`         // each layer's norms, rotary embedding and activation (Linear.LayerKernelsNs)
	KVNs               float64 `json:"kv_ns" yaml:"kv_ns"`                               // KV reads of the decodes and KV writes of every token
	AllReduceNs        float64 `json:"all_reduce_ns" yaml:"all_reduce_ns"`               // tensor-parallel all-reduces (0 at tp 1)
	CopyNs             float64 `json:"copy_ns" yaml:"copy_ns"`                           // KV copies, read and written
	OverheadNs         float64 `json:"overhead_ns" yaml:"overhead_ns"`                   // per step, per sequence and, outside full CUDA graphs, launches
	OutputNs           float64 `json:"output_ns" yaml:"output_ns"`                       // per output token: detokenizer and API server
	TotalNs            int64   `json:"total_ns" yaml:"total_ns"`

	Graph        bool  `json:"graph" yaml:"graph"`                 // the step ran as a full CUDA graph
	LinearTokens int64 `json:"linear_tokens" yaml:"linear_tokens"` // tokens the linear layers ran on, padding included
	ComputeBound bool  `json:"compute_bound" yaml:"compute_bound"` // the linear layers' compute exceeded their weight reads
}

// StepModel is a Profile compiled for one Shape: the step time's
// coefficients folded, so Time costs a few dozen floating-point
// operations. Build it with Profile.Compile; it is read-only and may be
// shared.
type StepModel struct {
	layers float64
	tp     int

	linNsPerTok  float64 // ns per linear token at the efficiency ceiling
	wideNsPerTok float64 // ns per linear token of the 16-bit projections of an FP8 model, at the BF16 ceiling (n½: headHalf)
	headNsPerRow float64 // ns per lm_head row at the ceiling
	halfTokens   float64 // n½ of the compute efficiency
	headHalf     float64 // n½ of the lm_head's compute efficiency
	flatBelow    float64 // tokens below which the efficiency stays at its value there (0: none)
	blend        float64 // Linear.BlendExponent
	// blendTab tabulates (1 + r^p)^(1/p) over r in [0, 1] for an exponent
	// other than 1, 2 or ≥ maxBlend, so that a step costs no math.Pow.
	blendTab      *[blendPoints + 1]float64
	denseNs       float64 // ns to read the dense weights, plus the GEMMs' fixed time (Linear.GEMMFixedNs × Shape.GEMMs)
	layerNs       float64 // the layers' small kernels a step: Linear.LayerKernelsNs × layers
	expertNs      float64 // ns to read every routed expert
	expertKeep    float64 // 1 − ExpertShare: the chance one token misses an expert
	moe           bool    // ExpertBytes > 0
	attnNsPerPair float64 // ns per prefill (query, key) pair
	attnNsPerTok  float64 // ns per prefill query token: Attention.PrefillTokNs × query heads × layers
	kvNsPerTok    float64 // ns per KV token read or written
	copyNsPerByte float64 // ns per copied byte (read and written)

	arNsPerTok float64 // all-reduce ns per linear token (both calls of every layer)
	arFixedNs  float64 // all-reduce latency per step (2 calls per layer)
	// arSmallTok tokens (a message up to AllReduceSmallBytes) cost
	// arSmallNsPerTok each instead of arNsPerTok: the custom kernel's
	// small-message bandwidth (0 over PCIe).
	arSmallTok, arSmallNsPerTok float64

	stepNs, perSeqNs, eagerNs float64
	// schedSteps is Config.SchedulerSteps (vLLM V0's multi-step
	// scheduling) when above 1, else 1: a decode-only step pays
	// 1/schedSteps of the host's stepNs and perSeqNs (host).
	schedSteps   float64
	kvSeqNs      float64 // ns each decoding sequence adds to the KV term (see Compile)
	tokenNs      float64 // output ns per sampled token
	overlap      bool    // the output work runs beside the step (Overhead.OutputOverlap)
	schedOverlap bool    // the step's CPU work runs beside the GPU's (Overhead.ScheduleOverlap)

	sizes    []int // CUDA-graph capture sizes, ascending (shared, read-only)
	padMixed bool
}

// Compile folds p's parameters with s's sizes. p must pass Validate, s
// must have TP ≥ 1 and positive Layers.
func (p *Profile) Compile(s Shape) *StepModel {
	bf16 := p.Peak.BF16FLOPSPerS
	// ns = FLOPs ÷ (FLOP/s × efficiency) × 1e9.
	linCeil := bf16 * p.Linear.ComputeEffMax / 1e9
	// lm_head runs in 16 bits whatever the weights' type (model.Split16),
	// as do a quantized model's Unquantized projections (wideNs).
	headCeil, half, flat := linCeil, p.Linear.ComputeHalfTokens, 0.0
	lin, wideNs := s.LinearFLOPsPerToken, 0.0
	if s.FP8 && p.Peak.FP8FLOPSPerS > 0 {
		lin -= s.WideLinearFLOPsPerToken
		wideNs = s.WideLinearFLOPsPerToken / headCeil
		linCeil = p.Peak.FP8FLOPSPerS * p.Linear.FP8ComputeEffMax / 1e9
		if adaFP8GEMM[p.GPU] && p.Engine != EngineSGLang {
			linCeil = p.Peak.FP8FLOPSPerS * AdaFP8ComputeEffMax / 1e9
			half = AdaFP8ComputeHalfTokens
			flat = AdaFP8FlatBelow
		}
	}
	wbw := p.Peak.MemBytesPerS * p.Linear.WeightBWEff / 1e9
	m := &StepModel{
		layers:        float64(s.Layers),
		tp:            s.TP,
		linNsPerTok:   lin / linCeil,
		wideNsPerTok:  wideNs,
		headNsPerRow:  s.HeadFLOPsPerRow / headCeil,
		halfTokens:    half,
		headHalf:      p.Linear.ComputeHalfTokens,
		flatBelow:     flat,
		blend:         p.Linear.BlendExponent,
		blendTab:      blendTable(p.Linear.BlendExponent),
		denseNs:       s.DenseWeightBytes/wbw + p.Linear.GEMMFixedNs*float64(s.GEMMs),
		layerNs:       p.Linear.LayerKernelsNs * float64(s.Layers),
		expertNs:      s.ExpertBytes / wbw,
		expertKeep:    1 - s.ExpertShare,
		moe:           s.ExpertBytes > 0,
		attnNsPerPair: s.AttnFLOPsPerPair / (bf16 * p.Attention.PrefillComputeEff / 1e9),
		attnNsPerTok:  p.Attention.PrefillTokNs * float64(s.AttnHeads) * float64(s.Layers),
		kvNsPerTok:    s.KVBytesPerToken / (p.Peak.MemBytesPerS * p.Attention.KVBWEff / 1e9),
		copyNsPerByte: 2 / wbw,
		schedSteps:    1,
		stepNs:        float64(p.Overhead.StepNs),
		perSeqNs:      float64(p.Overhead.PerSeqNs),
		eagerNs:       float64(p.Overhead.EagerPerLayerNs) * float64(s.Layers),
		tokenNs:       float64(p.Overhead.PerTokenNs),
		overlap:       p.Overhead.OutputOverlap,
		schedOverlap:  p.Overhead.ScheduleOverlap,
		sizes:         graphSizes(p.CUDAGraph, s.TP),
		padMixed:      p.CUDAGraph.PadMixed,
	}
	// A decoding sequence's fixed cost in the decode kernel: a time per
	// (sequence, KV head) work unit and layer, the same on every GPU
	// (Attention.KVSeqNs), plus an older profile's ctx½ tokens of reads.
	m.kvSeqNs = float64(p.Attention.KVSeqNs*float64(s.KVHeads)*float64(s.Layers)) + float64(p.Attention.KVHalfContext*m.kvNsPerTok)
	if s.TP > 1 {
		t := float64(s.TP)
		calls := 2 * float64(s.Layers) // after attention and after the MLP
		ring := 2 * (t - 1) / t        // a ring all-reduce sends and receives this share of the buffer
		link := p.Peak.LinkBytesPerS * p.AllReduce.BWEff / 1e9
		m.arNsPerTok = calls * ring * float64(s.Hidden) * s.ActBytes / link
		m.arFixedNs = calls * float64(p.AllReduce.LatencyNs)
		if p.Peak.LinkBytesPerS > PCIeLinkBytesPerS {
			m.arFixedNs *= AllReduceLatencyScale(s.TP)
			perTok := float64(s.Hidden) * s.ActBytes
			m.arSmallTok = AllReduceSmallBytes / perTok
			m.arSmallNsPerTok = calls * ring * perTok / (p.Peak.LinkBytesPerS * AllReduceSmallLinkShare / 1e9)
		} else {
			m.arFixedNs *= AllReducePCIeLatencyScale(s.TP)
		}
	}
	return m
}

// AllReduceLatencyTP4 and AllReduceLatencyTP8 are the fixed cost of one
// all-reduce call at TP 4 and TP 8 as a multiple of its cost at TP 2 (the
// AllReduceTerm's LatencyNs). They are set from a kernel table, not fitted
// to serving figures: sgl-project/sglang#2904 ("unit test performance in
// H100 (without cuda graph)", the "vllm" table: vLLM's custom all-reduce,
// the kernel vLLM runs on NVLink for the decode-sized messages below its
// 8 MB buffer) times one call at TP 2, 4 and 8 and 512 B to 1 MB. The
// step model's form, latency(tp) + 2(tp−1)/tp × bytes ÷ bandwidth with one
// bandwidth for every TP, fits the 18 times with latencies 8.00, 10.04 and
// 11.23 µs (rms log error 0.114): TestAllReduceLatencyScaleFromKernelTable
// redoes the fit. Above TP 8 each doubling adds what TP 4 to 8 adds; TP 3,
// 5-7 interpolate in log2(tp). The table is one GPU (H100, NVLink 4) and
// one kernel; NCCL's own cost model (src/graph/tuning.cc: one base latency
// per algorithm and protocol plus one per hop, the same for every GPU
// generation) has no per-generation latency either, so every NVLink GPU
// shares the shape. A link over PCIe (all_reduce_pcie: NCCL's rings, not
// this kernel) has its own scale, AllReducePCIeLatencyScale.
const (
	AllReduceLatencyTP4 = 1.254
	AllReduceLatencyTP8 = 1.403
)

// AllReduceSmallBytes and AllReduceSmallLinkShare are the all-reduce's
// cost per byte over NVLink for messages up to AllReduceSmallBytes: the
// same fit of the same table (sglang#2904's vLLM custom all-reduce, 512 B
// to 1 MB) gives one slope for every TP, 19.3 µs a MB crossing a link, or
// AllReduceSmallLinkShare of the H100's 450 GB/s one-way NVLink; another
// GPU's link is taken at the same share (the one-shot kernel reads its
// peers' buffers over the link). Past the table's largest message the
// fitted all_reduce.bw_eff applies to the rest of the bytes (the two-shot
// kernel and NCCL's rings of the prefill's messages; no table here times
// them): TestAllReduceLatencyScaleFromKernelTable redoes the slope.
const (
	AllReduceSmallBytes     = 1 << 20
	AllReduceSmallLinkShare = 0.115
)

// AllReduceLatencyScale is the fixed cost of one all-reduce call among tp
// GPUs as a multiple of its cost at TP 2 (1 at tp ≤ 2): piecewise linear
// in log2(tp) through AllReduceLatencyTP4 and AllReduceLatencyTP8.
func AllReduceLatencyScale(tp int) float64 {
	if tp <= 2 {
		return 1
	}
	x := math.Log2(float64(tp))
	if x <= 2 {
		return 1 + (x-1)*(AllReduceLatencyTP4-1)
	}
	return AllReduceLatencyTP4 + (x-2)*(AllReduceLatencyTP8-AllReduceLatencyTP4)
}

// AllReducePCIeLatencyPerGPU is what each GPU past the second adds to the
// fixed cost of one all-reduce call over PCIe, as a share of its cost at
// TP 2 (all_reduce_pcie.latency_ns). Over PCIe NCCL runs the all-reduce
// (vLLM's custom kernel is off on more than two GPUs without full NVLink,
// custom_all_reduce.py from vLLM 0.5), and a ring's small message takes
// 2(tp−1) steps, one hop each: the smallest messages of nccl-tests'
// all_reduce_perf on RTX 4090s over PCIe Gen4 take 10.1 and 12.2 µs on
// two GPUs, 20.6 and 21.0 µs on four (two boxes, kalavai-net/kalavai-client
// scripts/README.md) and 42.5 and 41.2 µs on eight (one box without and
// with P2P, blog.chlc.cc), a line of 10.9 µs at TP 2 and 5.1 µs a further
// GPU. sim/testdata/allreduce-pcie holds the tables;
// TestAllReducePCIeFromNCCLTests redoes the fit.
const AllReducePCIeLatencyPerGPU = 0.472

// AllReducePCIeLatencyScale is the fixed cost of one all-reduce call among
// tp GPUs over PCIe as a multiple of its cost at TP 2 (1 at tp ≤ 2):
// linear in tp through AllReducePCIeLatencyPerGPU.
func AllReducePCIeLatencyScale(tp int) float64 {
	if tp <= 2 {
		return 1
	}
	return 1 + float64(tp-2)*AllReducePCIeLatencyPerGPU
}

// StepTime is the time of one step of st for a model of shape s, per
// term. It compiles p each call; the engine and a calibration's inner loop
// keep the StepModel of Compile instead.
func (p *Profile) StepTime(s Shape, st Step) Breakdown { return p.Compile(s).Time(st) }

// graphSizes are the sizes g captures at tensor parallelism tp.
func graphSizes(g CUDAGraphTerm, tp int) []int {
	if g.SmallTPMax == 0 || tp >= 4 {
		return g.Sizes
	}
	i, _ := slices.BinarySearch(g.Sizes, g.SmallTPMax+1)
	return g.Sizes[:i]
}

// padded returns the capture size a step of n tokens runs at, and whether
// one holds it (n ≤ the largest size).
func (m *StepModel) padded(n int64) (int64, bool) {
	if len(m.sizes) == 0 || n > int64(m.sizes[len(m.sizes)-1]) {
		return n, false
	}
	i, _ := slices.BinarySearch(m.sizes, int(n))
	return int64(m.sizes[i]), true
}

// AdaFP8ComputeEffMax and AdaFP8ComputeHalfTokens replace
// Linear.FP8ComputeEffMax and Linear.ComputeHalfTokens for the FP8 linear
// layers (not the lm_head) of vLLM on the Ada GPUs of adaFP8GEMM (sm89).
// They are set from a kernel table, not fitted to serving figures:
// sgl-project/sglang#6756, "Main (with L40S)", vLLM's cutlass_scaled_mm
// (the sm89 CUTLASS 2.x kernels of vllm-project/vllm#6677, on for Ada
// since #6950, vLLM 0.5.4) on Llama-3.1-8B's N=6144 and 4096, K=4096 GEMMs
// at M = 128 to 2048, timed by triton's do_bench (a cold L2;
// bench_fp8_gemm.py prints 4 × GFLOP/s, its a being FP32): 79 to 293
// TFLOP/s, 11-40% of the 733 TFLOP/s peak, where the shared FP8
// efficiency gives 43% from M ≈ 10 on. This step model's GEMM form,
// compute (M + n½) × FLOPs ÷ (peak × eff_max) blended with the weight
// reads at the joint fit's exponent and weight efficiency, fits the 10
// times with eff_max 0.41 and n½ 275 (rms log error 0.069):
// TestAdaFP8FromKernelTable redoes the fit. AdaFP8FlatBelow is an
// assumption: the table has no M below 128 (vllm#6677's times there are
// L2-hot, not a DRAM-bound kernel's), so below it the efficiency is held
// at M = 128's rather than let (M + n½) charge a 1-token decode for 276
// tokens. SGLang keeps the shared terms: its own kernels' column of the
// same table fits 0.51 and 235, which makes AccelMark's RTX 4090 FP8 runs
// (SGLang 0.5.6) 15-39% too slow held out (docs/calibrate.md, issue 24,
// ninth session: FP8 on Ada).
const (
	AdaFP8ComputeEffMax     = 0.41
	AdaFP8ComputeHalfTokens = 275
	AdaFP8FlatBelow         = 128
)

// AdaFP8GEMM says whether gpu is a preset whose FP8 GEMMs run Ada's (sm89)
// kernels, which vLLM's are timed with AdaFP8ComputeEffMax on.
func AdaFP8GEMM(gpu string) bool { return adaFP8GEMM[gpu] }

// adaFP8GEMM names the GPU presets whose FP8 GEMMs run Ada's (sm89) kernels.
var adaFP8GEMM = map[string]bool{"l40s-48g": true, "rtx4090-24g": true}

// Time is the time of one step, per term:
//
//	linear     (compute^p + weights^p)^(1/p), p the blend exponent:
//	           compute = (n + n½) × linear ns per token + (s + n½) × lm_head ns per row (s > 0)
//	             (an FP8 model's 16-bit projections, Shape.WideLinearFLOPsPerToken, and its
//	             lm_head at the BF16 ceiling and the shared n½; the rest at the FP8 one)
//	             (FLOPs ÷ (peak × eff(n)) with eff(n) = eff_max × n ÷ (n + n½): a
//	             GEMM's efficiency saturates in its row count)
//	           weights = dense ÷ (bw × eff_w) + GEMMs × t_gemm + experts ÷ (bw × eff_w) × (1 − (1 − k/E)^n)
//	             (every expert some token is routed to, uniform routing; t_gemm: Linear.GEMMFixedNs,
//	             a GEMM kernel's fixed time, 0 in older profiles; GEMMs: Shape.GEMMs)
//	prefill    causal pairs × attention FLOPs ÷ (peak × eff_attn)
//	           + prompt tokens × t_tok × query heads × layers
//	           (t_tok: Attention.PrefillTokNs, a time, 0 in older profiles)
//	layer      layers × t_layer (n > 0; t_layer: Linear.LayerKernelsNs, the norms', rotary
//	           embedding's and activation's kernels a layer, a time, 0 in older profiles)
//	kv         (decode context + every token's own K/V) × KV bytes ÷ (bw × eff_kv)
//	           + decoding sequences × (t_seq × KV heads × layers + ctx½ × KV bytes ÷ (bw × eff_kv))
//	           (t_seq: Attention.KVSeqNs; ctx½: an older profile's KVHalfContext)
//	all-reduce 2 × layers × (latency × scale(tp) + 2(tp−1)/tp × n × hidden × 2 B ÷ (link × eff_ar)), tp > 1
//	           (over NVLink: scale AllReduceLatencyScale, and the first AllReduceSmallBytes of a
//	           message at link × AllReduceSmallLinkShare; over PCIe: scale AllReducePCIeLatencyScale,
//	           eff_ar throughout)
//	copy       2 × copied bytes ÷ (bw × eff_w)
//	overhead   step + per sequence × sequences + (not a full graph) per layer × layers
//	output     per token × sampled rows
//
// n is the step's tokens, padded to the next CUDA-graph capture size for a
// pure-decode step (and, with PadMixed, any step) of at most the largest
// size; s is the sampled rows. Only pure-decode steps within the sizes run
// as full graphs. The terms up to the overhead add up: kernels of one step
// run one after another on the GPU, and the scheduler's CPU work (step +
// per sequence) waits for them, unless the engine prepares each step
// while the GPU runs the last (Overhead.ScheduleOverlap: vLLM V1's async
// scheduling, SGLang's overlap scheduler), when the step takes the larger
// of the GPU's terms (launches outside a graph included) and the
// scheduler's. The output term adds to them too, unless the engine
// processes its output beside the steps (Overhead.OutputOverlap): the step
// then takes the larger of the two.
func (m *StepModel) Time(st Step) Breakdown {
	n := st.Tokens()
	var b Breakdown
	pureDecode := st.PrefillTokens == 0
	if n > 0 && (pureDecode || m.padMixed) {
		var in bool
		n, in = m.padded(n)
		b.Graph = in && pureDecode
	}
	b.LinearTokens = n
	if n > 0 {
		nf := float64(n)
		compute := (nf + m.halfTokens) * m.linNsPerTok
		if nf < m.flatBelow {
			compute = nf * (m.flatBelow + m.halfTokens) / m.flatBelow * m.linNsPerTok
		}
		if m.wideNsPerTok > 0 {
			compute += (nf + m.headHalf) * m.wideNsPerTok
		}
		if st.Sampled > 0 {
			compute += (float64(st.Sampled) + m.headHalf) * m.headNsPerRow
		}
		weights := m.denseNs
		if m.moe {
			weights += m.expertNs * (1 - math.Pow(m.expertKeep, nf))
		}
		b.LinearNs = m.blendLinear(compute, weights)
		b.ComputeBound = compute > weights
		b.LayerKernelsNs = m.layerNs
		if m.tp > 1 {
			small := min(nf, m.arSmallTok)
			b.AllReduceNs = m.arFixedNs + small*m.arSmallNsPerTok + (nf-small)*m.arNsPerTok
		}
	}
	b.PrefillAttentionNs = st.PrefillPairs*m.attnNsPerPair + float64(float64(st.PrefillTokens)*m.attnNsPerTok)
	// The products rounded apart (no fused multiply-add), as decodeTimer.at
	// rounds them.
	b.KVNs = float64((st.DecodeContext+float64(st.Tokens()))*m.kvNsPerTok) + float64(float64(st.DecodeSeqs)*m.kvSeqNs)
	b.CopyNs = float64(st.CopiedBytes) * m.copyNsPerByte
	cpu := m.host(st)
	b.OverheadNs = cpu
	if !b.Graph {
		b.OverheadNs += m.eagerNs
	}
	b.OutputNs = m.tokenNs * float64(st.Sampled)
	var t float64
	if m.schedOverlap {
		gpu := b.LinearNs + b.PrefillAttentionNs + b.LayerKernelsNs + b.KVNs + b.AllReduceNs + b.CopyNs + (b.OverheadNs - cpu)
		t = max(gpu, cpu)
	} else {
		t = b.LinearNs + b.PrefillAttentionNs + b.LayerKernelsNs + b.KVNs + b.AllReduceNs + b.CopyNs + b.OverheadNs
	}
	if m.overlap {
		t = max(t, b.OutputNs)
	} else {
		t += b.OutputNs
	}
	b.TotalNs = max(int64(math.Ceil(t)), 1)
	return b
}

// decodeTimer times the steps of a decode run under the model: the same
// step but for its decode context, which grows by the batch each step.
// Only the KV term moves, so the rest is summed once, in Time's order
// ((L + P + layer) + KV + AR + copy + overhead, then the output), and at gives
// exactly what Time(st with DecodeContext ctx).TotalNs gives
// (TestDecodeTimerExact; -tags invariants checks every step of a run).
type decodeTimer struct {
	lp, ar, cp, ov, out   float64 // Time's terms that do not move (lp: linear + prefill attention + layer kernels)
	tok, kvHalf, kvPerTok float64
	overlap               bool
	// cpu is the scheduler's share of ov when it runs beside the GPU
	// (Overhead.ScheduleOverlap), else negative.
	cpu float64
}

// decodeTimer prepares the times of st's decode run (st has no prefill).
func (m *StepModel) decodeTimer(st Step) decodeTimer {
	b := m.Time(st)
	d := decodeTimer{
		lp: b.LinearNs + b.PrefillAttentionNs + b.LayerKernelsNs, ar: b.AllReduceNs, cp: b.CopyNs, ov: b.OverheadNs, out: b.OutputNs,
		tok: float64(st.Tokens()), kvHalf: float64(float64(st.DecodeSeqs) * m.kvSeqNs), kvPerTok: m.kvNsPerTok,
		overlap: m.overlap, cpu: -1,
	}
	if m.schedOverlap {
		d.cpu = m.host(st)
	}
	return d
}

// host is st's scheduler and input-preparation time on the host:
// Overhead.StepNs plus PerSeqNs for each sequence, spread over the
// schedSteps steps of a multi-step batch when st decodes only.
func (m *StepModel) host(st Step) float64 {
	cpu := m.stepNs + m.perSeqNs*float64(st.PrefillSeqs+st.DecodeSeqs)
	if st.PrefillTokens == 0 && m.schedSteps > 1 {
		cpu /= m.schedSteps
	}
	return cpu
}

// WithSchedulerSteps returns a copy of m whose decode-only steps pay the
// host's time once every n steps (Config.SchedulerSteps); n ≤ 1 is off.
func (m *StepModel) WithSchedulerSteps(n int) *StepModel {
	c := *m
	c.schedSteps = float64(max(n, 1))
	return &c
}

// at is the step's TotalNs over ctx decode context tokens.
func (d *decodeTimer) at(ctx float64) int64 {
	var t float64
	if d.cpu >= 0 {
		t = max(d.lp+(float64((ctx+d.tok)*d.kvPerTok)+d.kvHalf)+d.ar+d.cp+(d.ov-d.cpu), d.cpu)
	} else {
		t = d.lp + (float64((ctx+d.tok)*d.kvPerTok) + d.kvHalf) + d.ar + d.cp + d.ov
	}
	if d.overlap {
		t = max(t, d.out)
	} else {
		t += d.out
	}
	return max(int64(math.Ceil(t)), 1)
}

// BlendLinear is the linear layers' time from their compute time c and
// weight reads w under blend exponent p (LinearTerm.BlendExponent):
// (c^p + w^p)^(1/p).
func BlendLinear(c, w, p float64) float64 { return blend(c, w, p) }

// blend is BlendLinear, with the common exponents without math.Pow.
func blend(c, w, p float64) float64 {
	switch {
	case p == 2:
		return math.Sqrt(c*c + w*w)
	case p == 1:
		return c + w
	case p >= maxBlend:
		return max(c, w)
	}
	hi, lo := max(c, w), min(c, w)
	if hi == 0 {
		return 0
	}
	return hi * math.Pow(1+math.Pow(lo/hi, p), 1/p)
}

// blendPoints is the number of intervals of a StepModel's blend table:
// linear interpolation between them is within 5e-5 of (1 + r^p)^(1/p) for
// every p in [1, 64] (2e-6 for p up to 7; the error is largest where r is
// near 1 and p large, the blend then near its kink at max(c, w)).
const blendPoints = 256

// blendTable tabulates (1 + r^p)^(1/p) at r = i ÷ blendPoints; nil for the
// exponents blend computes directly.
func blendTable(p float64) *[blendPoints + 1]float64 {
	if p == 1 || p == 2 || p >= maxBlend || !(p > 1) {
		return nil
	}
	var t [blendPoints + 1]float64
	for i := range t {
		t[i] = math.Pow(1+math.Pow(float64(i)/blendPoints, p), 1/p)
	}
	return &t
}

// blendLinear is BlendLinear(c, w, m.blend), from the table when there is
// one.
func (m *StepModel) blendLinear(c, w float64) float64 {
	if m.blendTab == nil {
		return blend(c, w, m.blend)
	}
	hi, lo := max(c, w), min(c, w)
	if hi == 0 {
		return 0
	}
	x := lo / hi * blendPoints
	i := min(int(x), blendPoints-1)
	f := x - float64(i)
	return hi * (m.blendTab[i] + f*(m.blendTab[i+1]-m.blendTab[i]))
}

// String is a one-line summary of b in ms, for tests and messages.
func (b Breakdown) String() string {
	return fmt.Sprintf("total %.3f ms: linear %.3f (%d tokens) + prefill attention %.3f + layer kernels %.3f + kv %.3f + all-reduce %.3f + copy %.3f + overhead %.3f ms, output %.3f ms (graph %v)",
		float64(b.TotalNs)/1e6, b.LinearNs/1e6, b.LinearTokens, b.PrefillAttentionNs/1e6, b.LayerKernelsNs/1e6, b.KVNs/1e6,
		b.AllReduceNs/1e6, b.CopyNs/1e6, b.OverheadNs/1e6, b.OutputNs/1e6, b.Graph)
}
