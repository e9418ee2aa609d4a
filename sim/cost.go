// Step cost: the step time (the roofline, or a Profile's model in
// steptime.go when Config.Profile is set) and the per-step activation
// buffers. See doc.go for the overview.

package sim

import "math"

// costModel holds what the step time and the activation sizes need,
// precomputed per run. All figures are per GPU of the tensor-parallel group.
type costModel struct {
	flopsPerToken float64 // 2 × active params ÷ tp
	attnPerCtx    float64 // attention FLOPs per (query token × context token) ÷ tp
	weightBytes   float64 // weights read once per step
	kvBytesPerTok float64 // KV bytes per token
	peakFLOPS     float64 // achievable FLOP/s
	peakBW        float64 // achievable bytes/s
	overhead      int64   // ns per step

	// prof is Config.Profile compiled for the run's model; nil: the
	// roofline above times the steps.
	prof *StepModel

	// Activation buffer sizes per token (bytes), one layer's worth: the
	// caching allocator reuses them from layer to layer, so one layer's
	// pattern is what reaches it.
	hiddenPerTok int64 // residual stream, bf16
	qkvPerTok    int64 // fused q/k/v projection output
	attnPerTok   int64 // attention output
	gateUpPerTok int64 // fused gate/up projection output (2 × intermediate)
	actPerTok    int64 // activation of the MLP (intermediate)
	logitsPerSeq int64 // fp32 logits of one sampled position (vocab ÷ tp)
}

func newCostModel(c Config) costModel {
	m := c.Model
	tp := float64(c.TP)
	const act = 2 // bf16 activations
	heads := int64(max(1, m.Heads/c.TP))
	kvHeads := int64(m.KVHeadsPerGPU(c.TP))
	hd := int64(m.HeadDim)
	inter := int64(m.Intermediate)
	if m.MoE != nil {
		// Routed experts process each token on TopK experts of the expert
		// width; the transient buffer is the sum of those.
		inter = int64((m.MoE.ExpertsPerToken + m.MoE.SharedExperts) * m.MoE.ExpertIntermediate)
	}
	inter = max(1, inter/int64(c.TP))
	var prof *StepModel
	if c.Profile != nil {
		prof = c.Profile.Compile(NewShape(m, c.TP, c.KVDType)).WithSchedulerSteps(c.SchedulerSteps)
	}
	return costModel{
		prof:          prof,
		flopsPerToken: m.FLOPsPerToken() / tp,
		// QKᵀ and AV: 2 multiply-adds (4 FLOPs) per head dimension, head and
		// layer for each (query, key) pair.
		attnPerCtx:    4 * float64(m.Layers) * float64(heads) * float64(hd),
		weightBytes:   float64(m.WeightBytes(c.TP)),
		kvBytesPerTok: float64(m.KVBytesPerToken(c.KVDType, c.TP)),
		peakFLOPS:     c.GPU.BF16FLOPS * c.Roofline.ComputeEfficiency,
		peakBW:        c.GPU.MemBandwidth * c.Roofline.BandwidthEfficiency,
		overhead:      c.Roofline.StepOverhead,
		hiddenPerTok:  int64(m.Hidden) * act,
		qkvPerTok:     (heads + 2*kvHeads) * hd * act,
		attnPerTok:    heads * hd * act,
		gateUpPerTok:  2 * inter * act,
		actPerTok:     inter * act,
		logitsPerSeq:  int64(math.Ceil(float64(m.Vocab)/tp)) * 4,
	}
}

// stepWork accumulates one step's work.
type stepWork struct {
	tokens    int64   // tokens computed (prefill chunks + decode tokens, every sample)
	sampled   int64   // positions sampled (logits rows)
	attnPairs float64 // Σ (query, key) pairs over the step's tokens
	kvRead    float64 // KV tokens read by attention
	copied    int64   // KV bytes copied (reallocations, copy-on-write)

	// The prefill share of the above, which the Profile model times apart
	// (the rest is decode: one token and ctx pairs per decoding sequence).
	// Work summed without prefill() (the decode runs of fastpath.go) leaves
	// them 0.
	prefillTokens int64
	prefillSeqs   int64
	prefillPairs  float64
}

// prefill adds a chunk of n prompt tokens that starts after `done` tokens
// already in the KV cache.
func (w *stepWork) prefill(done, n int64) {
	w.tokens += n
	a, b := float64(done), float64(done+n)
	// Σ_{c=done+1}^{done+n} c: query token c attends to c keys (causal).
	pairs := (b*(b+1) - a*(a+1)) / 2
	w.attnPairs += pairs
	w.kvRead += b
	w.prefillTokens += n
	w.prefillSeqs++
	w.prefillPairs += pairs
}

// step is w as the Profile model's Step. Every sum is of whole numbers far
// below 2^53, so the decode context (all pairs less the prefill ones) is
// exact.
func (w *stepWork) step() Step {
	return Step{
		PrefillTokens: w.prefillTokens,
		PrefillSeqs:   w.prefillSeqs,
		PrefillPairs:  w.prefillPairs,
		DecodeSeqs:    w.tokens - w.prefillTokens,
		DecodeContext: w.attnPairs - w.prefillPairs,
		Sampled:       w.sampled,
		CopiedBytes:   w.copied,
	}
}

// decode adds one token per sample for samples sequences whose context is
// ctx tokens.
func (w *stepWork) decode(ctx, samples int64) {
	w.tokens += samples
	w.sampled += samples
	w.attnPairs += float64(ctx * samples)
	w.kvRead += float64(ctx * samples)
}

// stepTime is the time of one step in ns (at least 1): the Profile
// model's when the run has one, else the roofline's.
func (cm *costModel) stepTime(w stepWork) int64 {
	if cm.prof != nil {
		return cm.prof.Time(w.step()).TotalNs
	}
	flops := float64(w.tokens)*cm.flopsPerToken + w.attnPairs*cm.attnPerCtx
	bytes := cm.weightBytes + (w.kvRead+float64(w.tokens))*cm.kvBytesPerTok
	t := max(flops/cm.peakFLOPS, bytes/cm.peakBW) + 2*float64(w.copied)/cm.peakBW
	ns := int64(math.Ceil(t*1e9)) + cm.overhead
	return max(ns, 1)
}

// activationPeak is the largest sum of live activation buffers at once in a
// step of the given tokens and sampled positions, the figure a vLLM memory
// profile run at max_num_batched_tokens measures.
func (cm *costModel) activationPeak(tokens, sampled int64) int64 {
	h := cm.hiddenPerTok * tokens
	qkvPhase := cm.qkvPerTok*tokens + cm.attnPerTok*tokens
	mlpPhase := cm.attnPerTok*tokens + cm.gateUpPerTok*tokens + cm.actPerTok*tokens
	return h + max(qkvPhase, mlpPhase, cm.logitsPerSeq*sampled)
}
