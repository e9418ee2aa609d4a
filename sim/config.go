// Engine configuration: model, GPU, memory setup, batching limits, the
// out-of-memory behaviour, the serving engine whose steps are modelled, and
// the step time (a Profile, or the roofline's efficiency factors).
// See doc.go for the overview.

package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// ErrBadConfig means a Config that cannot run; the message names the field.
var ErrBadConfig = errors.New("bad config")

// OnOOM is what the engine does when a running request cannot get the KV
// memory for its next token.
type OnOOM int

const (
	// OnOOMDefault picks the behaviour of the system each KV strategy stands
	// for: OnOOMPreempt for paged (vLLM) and vmm (vAttention runs inside
	// vLLM), OnOOMReserve for the contiguous-max family (Orca and
	// FasterTransformer admit a request when its reservation fits), OnOOMFail
	// for contiguous-grow (a plain framework that allocates until the
	// allocator raises).
	OnOOMDefault OnOOM = iota
	// OnOOMPreempt frees the newest running request and recomputes it later
	// (vLLM's recompute preemption: running.pop() under FCFS); a waiting
	// request that does not fit simply waits.
	OnOOMPreempt
	// OnOOMReserve admits a request only when prompt + max tokens of every
	// running request and of the new one fit in the KV budget, and never
	// preempts (TensorRT-LLM's GUARANTEED_NO_EVICT). When fragmentation still
	// makes an allocation fail, the request fails with an OOM error.
	OnOOMReserve
	// OnOOMFail fails the request whose allocation ran out of memory, with an
	// OOM error, as a plain framework does.
	OnOOMFail
)

var onOOMNames = [...]string{"default", "preempt", "reserve", "fail"}

// String returns the name ParseOnOOM accepts.
func (o OnOOM) String() string {
	if o < 0 || int(o) >= len(onOOMNames) {
		return fmt.Sprintf("OnOOM(%d)", int(o))
	}
	return onOOMNames[o]
}

// OnOOMNames are the behaviours ParseOnOOM takes that a user chooses
// (preempt, reserve, fail), without "default", which is the absence of a
// choice: for hints and shell completion.
func OnOOMNames() []string { return slices.Clone(onOOMNames[OnOOMDefault+1:]) }

// ParseOnOOM parses preempt, reserve, fail or default (case-insensitive).
func ParseOnOOM(s string) (OnOOM, error) {
	for i, n := range onOOMNames {
		if strings.EqualFold(s, n) {
			return OnOOM(i), nil
		}
	}
	return 0, fmt.Errorf("%w: on-oom %q: want preempt, reserve or fail", ErrBadConfig, s)
}

// Roofline holds the step-time model's factors (DESIGN.md §3): a step takes
//
//	max(FLOPs ÷ (peak FLOP/s × ComputeEfficiency), bytes ÷ (bandwidth × BandwidthEfficiency)) + StepOverhead
//
// on each GPU of the tensor-parallel group, plus 2 × copied bytes ÷
// (bandwidth × BandwidthEfficiency) for KV copies (contiguous-grow's
// reallocations, copy-on-write).
type Roofline struct {
	// ComputeEfficiency is the achieved share of the datasheet dense FLOP/s
	// (model FLOPs utilisation). 0.5: large prefill GEMMs on H100 reach
	// about half of peak in vLLM and SGLang benchmarks; decode is memory bound
	// and barely depends on it.
	ComputeEfficiency float64
	// BandwidthEfficiency is the achieved share of the datasheet memory
	// bandwidth. 0.8: streaming kernels (weights in decode GEMVs, paged
	// attention) reach 75-85% of HBM peak.
	BandwidthEfficiency float64
	// StepOverhead is a fixed cost per step in ns: scheduling, sampling,
	// kernel launches that CUDA graphs do not hide. 3 ms is in the range
	// vLLM v1 profiles show for an 8B model at small batches.
	StepOverhead int64
}

// DefaultRoofline returns the factors documented on Roofline.
func DefaultRoofline() Roofline {
	return Roofline{ComputeEfficiency: 0.5, BandwidthEfficiency: 0.8, StepOverhead: 3_000_000}
}

// Config is everything an engine run needs besides the requests.
type Config struct {
	Model   model.Model
	GPU     model.GPU
	TP      int         // tensor-parallel degree (≥ 1); one GPU of the group is simulated
	KVDType model.DType // KV cache element type; 0 means the model's weight type when 16-bit, else BF16

	// KV is the KV strategy, parsed (kv/strategy.ParseSpec; its text in a
	// document, encoding.TextUnmarshaler): contiguous-max,
	// contiguous-max:pow2, contiguous-max:oracle, contiguous-grow, paged:B,
	// vmm:P. The engine parses no spec text: sim/scenario, advise and calib
	// hand it parsed specs.
	KV strategy.Spec
	// Alloc is the allocator, parsed (alloc/registry.Parse, or its text in a
	// document): caching, caching:expandable_segments:True, sizeclass:...,
	// arena:..., async, direct, vmm:P. vmm:P strategies need a vmm allocator
	// with the same page (strategy.CheckPair).
	Alloc registry.Spec

	OnOOM OnOOM

	// GPUMemoryUtilization is the share of capacity the engine may use for
	// weights, activations and KV, as vLLM's gpu_memory_utilization (0.9).
	// The paged pool gets what is left of it after weights, the CUDA context
	// and the activation peak; other strategies allocate from the allocator
	// until it runs out, and the reserve policy budgets this much.
	GPUMemoryUtilization float64
	// ContextBytes is the CUDA context and other non-torch memory (500 MiB:
	// an H100 context with cuBLAS/NCCL workspaces takes 400-600 MiB).
	ContextBytes int64

	MaxBatchTokens int  // token budget per step (vLLM's max_num_batched_tokens; 8192)
	MaxSeqs        int  // running requests per step (max_num_seqs; 256)
	ChunkedPrefill bool // split long prompts over steps within the token budget
	// MaxContext is the longest sequence (prompt + output); 0 means the
	// model's max_position_embeddings.
	MaxContext int
	// MaxTokens is the max_tokens every request asks for; 0 means
	// MaxContext − prompt (what vLLM assumes when a client sets none), and
	// for engine sglang SGLang's own, min(MaxContext − 1, KV pool tokens −
	// 1) − prompt − 1 (sglMaxNewTokens). Outputs stop there; otherwise only
	// the reserve policy, contiguous-max variants and SGLang's admission
	// look at it.
	MaxTokens int
	// MaxTokensIsOutput says each request asked for exactly its output
	// as max_tokens (a benchmark client that ignores EOS: vLLM's and
	// SGLang's random datasets), within MaxTokens and the context.
	MaxTokensIsOutput bool

	// PrefixCaching lets paged reuse cached KV blocks of prompts whose
	// requests carry prefix ids (Mooncake hash_ids, generated sessions), as
	// vLLM v1 does by default; hits skip their prefill compute. True in
	// DefaultConfig.
	PrefixCaching bool

	// Activations sends each step's transient buffers through the allocator
	// (true by default in DefaultConfig). Turn it off to study KV memory
	// alone, as the vLLM paper's Fig. 2 does.
	Activations bool

	// Roofline is the step-time model used when Profile is nil.
	Roofline Roofline
	// Profile, when set, times every step with the calibratable model of
	// steptime.go instead of the roofline (DefaultProfile returns the
	// embedded one of a GPU preset). Its gpu and engine must match GPU.Name
	// and Engine. The engine only reads it.
	Profile *Profile

	// Engine is the serving engine whose scheduler composes the steps
	// (EngineVLLMV1, the zero value, is the scheduling this package has
	// always had; see EngineKind).
	Engine EngineKind
	// EngineVersion is the engine's release ("0.8.3"; ParseEngineVersion,
	// "" for the engine's default). It picks the overheads of the step-time
	// model (DefaultProfile); a Profile's own release, when it names one,
	// must be of the same overhead class.
	EngineVersion string
	// MixedChunk is SGLang's --enable-mixed-chunk: with EngineSGLang,
	// running decodes share the prefill steps.
	MixedChunk bool
	// SchedulerSteps is vLLM V0's --num-scheduler-steps (multi-step
	// scheduling, from 0.6.0): the scheduler and the inputs' preparation
	// run once for every SchedulerSteps decode steps of the same batch,
	// which the GPU then runs back to back. A Profile spreads the host's
	// time of a decode-only step (Overhead.StepNs and PerSeqNs) over that
	// many steps (StepModel.Time); a prefill runs a step of its own at the
	// full cost, as vLLM runs it. Every decode step pays 1/SchedulerSteps,
	// even where a prefill cuts the run of decode steps short of a whole
	// batch. Not modelled: new requests wait for the batch's last step
	// before their prefill; its tokens reach the client together at its end
	// (vLLM's LLMEngine returns no output before); and a sequence that ends
	// inside a batch keeps its slot until the batch ends. Each moves TTFT
	// and E2E (and so a benchmark client's TPOT) by up to SchedulerSteps − 1
	// decode steps; and Result.ITL stays one gap a decode step, where a
	// client receives the batch's tokens in one burst (gaps of about
	// SchedulerSteps steps, then none). Without a Profile (the roofline) it
	// changes nothing.
	// 0 or 1: off. Needs EngineVLLMV0 at 0.6.0 or later and chunked prefill
	// off (multi-step chunked prefill is not modelled):
	// SchedulerStepsError.
	SchedulerSteps int
	// WeightDType stores the weights in another type than the model's
	// (--weight-dtype: bf16, fp16, fp8, int8, int4); 0 keeps the model's.
	// It scales the weight memory and the bytes a step reads; FP8 weights
	// compute at the GPU's FP8 peak where the Profile has one, int8 and
	// int4 are weight-only (BF16 math, fewer bytes), as vLLM's Marlin and
	// AWQ/GPTQ kernels run them. The KV dtype's default still follows the
	// model's own weight type.
	WeightDType model.DType
	// Unquantized, when not zero, replaces the model's list of what its
	// quantized weights keep in 16 bits (--unquantized: self_attn,
	// layers.N, ...; model.Unquantized): those weights take 2 bytes and
	// their GEMMs run at the BF16 peak. It matters only for weights under
	// 16 bits (set for 16-bit weights, it is an error); a quantized model
	// keeps its embedding, lm_head and norms in 16 bits in any case.
	Unquantized model.Unquantized

	// MaxConcurrency caps the requests in flight, as a benchmark client's
	// --max-concurrency does (vLLM's benchmarks/serve.py, SGLang's
	// bench_serving): a request whose arrival time comes while that many
	// are in flight (sent and neither completed, failed nor rejected) waits
	// at the client and is sent when one ends. Its TTFT and E2E latency
	// count from when it was sent, as the client's timer starts after it
	// takes the semaphore. 0 is an open loop: every request is sent at its
	// arrival.
	MaxConcurrency int

	// EarlyStop ends the run as soon as it is certain to fail an objective
	// (see EarlyStop); the zero value never stops early.
	EarlyStop EarlyStop
	// RequestTimes keeps each completed request's output length, TTFT and
	// TPOT in Result.RequestTimes (advise splits the TPOT p99 by output
	// length with them); off, nothing more is kept.
	RequestTimes bool

	// WarmPrompts starts the run with every request's prompt already in the
	// prefix cache, as a benchmark repeated against one server with prefix
	// caching on finds it: vLLM's and SGLang's clients send the same
	// prompts in the same order on every run of one seed. The prompts are
	// cached before the first arrival in trace order (the last ones most
	// recently used), as far as the KV pool holds them, at no time and
	// counted nowhere; a request without prefix ids is given ids of its
	// own, so its prompt matches only itself. It needs PrefixCaching; a
	// strategy without a prefix cache (all but paged) keeps nothing of an
	// earlier run, so there it changes nothing.
	WarmPrompts bool

	// Defrag says when and how to compact the allocator (package defrag);
	// the zero value is off.
	Defrag Defrag

	// Duration stops the run at this virtual time in ns (0: run until every
	// request has finished). Requests arriving later are not simulated.
	Duration int64
	// SampleInterval is the virtual time between two samples of the memory
	// time series in ns (0: one second).
	SampleInterval int64
	// MaxEvents caps the OOM/preemption markers kept for plots (0: 10,000).
	MaxEvents int
}

// EarlyStop ends a run once its outcome under an objective can no longer
// pass, for a search that needs only pass or fail (advise): at the first
// OOM failure or activation OOM (OnFailure), or once more requests have a
// TTFT (TPOT) above TTFTP99 (TPOTP99) seconds than a 99th percentile can
// absorb: floor(N/100) + 1 of the N requests of the trace, at which the
// nearest-rank p99 over any subset of them exceeds the limit; or once more
// inter-token gaps are above ITLP99 seconds than floor(G/100) + 1, G the
// gaps the trace can give (Σ (output − 1) × n): a gap counts as above when
// the p99 that Result.ITL would report for it is (its histogram bucket's
// highest value, itlOver). Zero limits are not checked. Result.StoppedEarly
// says why a run stopped; its figures are those of the run so far.
type EarlyStop struct {
	OnFailure                bool
	TTFTP99, TPOTP99, ITLP99 float64 // seconds
}

// KVCacheDType is the KV cache's element type the run uses: KVDType, or
// when 0 the model's weight type if it is FP16, else BF16 (what Validate
// sets).
func (c *Config) KVCacheDType() model.DType {
	if c.KVDType != 0 {
		return c.KVDType
	}
	if c.Model.WeightDType == model.FP16 {
		return model.FP16
	}
	return model.BF16
}

// RunModel is c.Model as a run uses it: with c.WeightDType and
// c.Unquantized applied where set, as validate applies them (without
// checking them).
func (c *Config) RunModel() model.Model {
	m := c.Model
	if c.WeightDType != 0 {
		m.WeightDType = c.WeightDType
	}
	if !c.Unquantized.IsZero() {
		m.Unquantized = c.Unquantized
	}
	return m
}

// ForBenchClient sets c up for requests sent by a benchmark client:
// vLLM's benchmark_serving (vllm bench serve) and SGLang's bench_serving
// send each request's output length as its max_tokens, and SGLang's
// admission reserves that, not the context's room (MaxTokensIsOutput).
// The other engines read it only in the contiguous-max strategies and the
// reserve policy (OnOOM reserve), which model what a server would reserve
// without a client's hint, so it is set for SGLang alone. gpufrag simulate on a benchmark file (a vllm-bench
// trace) and gpufrag calibrate's replays both call it, so that the two
// run a file alike.
func (c *Config) ForBenchClient() {
	c.MaxTokensIsOutput = c.MaxTokensIsOutput || c.Engine == EngineSGLang
}

// DefaultConfig returns a Config with vLLM's defaults (gpu_memory_utilization
// 0.9, 8192 batched tokens, 256 sequences, chunked prefill on as in vLLM v1)
// for the given model and GPU, one GPU, bf16 KV, paged:16 on PyTorch's caching
// allocator.
func DefaultConfig(m model.Model, g model.GPU) Config {
	return Config{
		Model: m, GPU: g, TP: 1, KVDType: model.BF16,
		KV: strategy.PagedSpec(16), Alloc: registry.Default(),
		GPUMemoryUtilization: 0.9,
		ContextBytes:         500 * mem.MiB,
		MaxBatchTokens:       8192,
		MaxSeqs:              256,
		ChunkedPrefill:       true,
		PrefixCaching:        true,
		Activations:          true,
		Roofline:             DefaultRoofline(),
		SampleInterval:       1_000_000_000,
	}
}

// SchedulerStepsError says why n scheduler steps (Config.SchedulerSteps)
// do not run on engine at release v with chunked prefill on or off; nil
// where they do (0 and 1, off, always do). Config's validation and the
// scenario's (engine.num_scheduler_steps) both ask it.
func SchedulerStepsError(n int, engine EngineKind, v Version, chunked bool) error {
	switch {
	case n < 0:
		return fmt.Errorf("%d is negative (0 or 1: multi-step scheduling off)", n)
	case n <= 1:
		return nil
	case engine != EngineVLLMV0 || v.less(vllmMultiStep):
		return fmt.Errorf("%d: multi-step scheduling is vLLM V0's --num-scheduler-steps, from 0.6.0: want engine vllm-v0 at 0.6.0 or later, got %v %s",
			n, engine, v)
	case chunked:
		return fmt.Errorf("%d with chunked prefill: multi-step chunked prefill is not modelled; turn chunked prefill off, or use 1 step", n)
	}
	return nil
}

// validate checks c and fills defaults into a copy.
func (c Config) validate() (Config, error) {
	bad := func(field, format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s: %s", ErrBadConfig, field, fmt.Sprintf(format, args...))
	}
	if err := c.Model.Validate(); err != nil {
		return bad("model", "%v", err)
	}
	if c.TP == 0 {
		c.TP = 1
	}
	if err := c.Model.ValidateTP(c.TP); err != nil {
		return bad("tp", "%v", err)
	}
	if c.GPU.Capacity <= 0 || !(c.GPU.MemBandwidth > 0) || !(c.GPU.BF16FLOPS > 0) {
		return bad("gpu", "%q needs a positive capacity, bandwidth and FLOP/s", c.GPU.Name)
	}
	c.KVDType = c.KVCacheDType()
	if !c.KVDType.Valid() {
		return bad("kv dtype", "invalid")
	}
	if c.WeightDType != 0 {
		if !c.WeightDType.Valid() {
			return bad("weight dtype", "invalid")
		}
		c.Model.WeightDType = c.WeightDType
	}
	if !c.Unquantized.IsZero() {
		if w := c.Model.WeightDType; w.Bits() >= 16 {
			return bad("unquantized", "%s names what quantized weights keep in 16 bits, but the weights are %v: give a weight dtype of fp8, int8 or int4, or no unquantized",
				c.Unquantized, w)
		}
		c.Model.Unquantized = c.Unquantized
		if err := c.Model.Validate(); err != nil {
			return bad("unquantized", "%v", err)
		}
	}
	if !c.Engine.Valid() {
		return bad("engine", "%v: want one of %s", c.Engine, strings.Join(engineNames[:], ", "))
	}
	v, err := ParseEngineVersion(c.Engine, c.EngineVersion)
	if err != nil {
		return c, err
	}
	if c.MixedChunk && c.Engine != EngineSGLang {
		return bad("mixed chunk", "is SGLang's --enable-mixed-chunk: want engine sglang, got %v", c.Engine)
	}
	if err := SchedulerStepsError(c.SchedulerSteps, c.Engine, v, c.ChunkedPrefill); err != nil {
		return bad("scheduler steps", "%v", err)
	}
	if p := c.Profile; p != nil {
		if err := p.Validate(); err != nil {
			return c, fmt.Errorf("%w: profile: %w", ErrBadConfig, err)
		}
		if !strings.EqualFold(p.GPU, c.GPU.Name) {
			return bad("profile", "it is for gpu %q, the config's GPU is %q: use that GPU's profile (sim.DefaultProfile) or calibrate one",
				clip(p.GPU), c.GPU.Name)
		}
		if p.Engine != c.Engine {
			return bad("profile", "it is for engine %v, the config's engine is %v: use sim.DefaultProfile(gpu, %v, version) or calibrate one",
				p.Engine, c.Engine, c.Engine)
		}
		if p.EngineVersion != "" {
			pv, _ := ParseEngineVersion(p.Engine, p.EngineVersion) // Validate checked it
			if a, b := OverheadClass(p.Engine, pv), OverheadClass(c.Engine, v); a != b {
				return bad("profile", "it is for %s %s (overheads of %s), the config's release is %s (%s): use sim.DefaultProfile(gpu, %v, %q) or calibrate one",
					p.Engine, pv, a, v, b, c.Engine, v.String())
			}
		}
	}
	if c.KV.IsZero() {
		return bad("kv", "empty strategy spec")
	}
	if c.Alloc.IsZero() {
		return bad("alloc", "empty allocator spec")
	}
	if c.OnOOM < OnOOMDefault || c.OnOOM > OnOOMFail {
		return bad("on-oom", "%v", c.OnOOM)
	}
	if !(c.GPUMemoryUtilization > 0 && c.GPUMemoryUtilization <= 1) {
		return bad("gpu memory utilization", "%v is not in (0, 1]", c.GPUMemoryUtilization)
	}
	if c.ContextBytes < 0 {
		return bad("context bytes", "negative")
	}
	if c.MaxBatchTokens <= 0 {
		return bad("max batch tokens", "%d must be positive", c.MaxBatchTokens)
	}
	if c.MaxSeqs <= 0 {
		return bad("max seqs", "%d must be positive", c.MaxSeqs)
	}
	if c.MaxContext == 0 {
		c.MaxContext = c.Model.MaxContext
	}
	if c.MaxContext <= 0 {
		return bad("max context", "%d must be positive", c.MaxContext)
	}
	if c.MaxTokens < 0 {
		return bad("max tokens", "%d is negative", c.MaxTokens)
	}
	r := c.Roofline
	if !(r.ComputeEfficiency > 0 && r.ComputeEfficiency <= 1) || !(r.BandwidthEfficiency > 0 && r.BandwidthEfficiency <= 1) {
		return bad("roofline", "efficiencies must be in (0, 1], got %v and %v", r.ComputeEfficiency, r.BandwidthEfficiency)
	}
	if r.StepOverhead < 0 {
		return bad("roofline", "negative step overhead")
	}
	if c.Duration < 0 {
		return bad("duration", "negative")
	}
	if c.MaxConcurrency < 0 {
		return bad("max concurrency", "%d is negative (0: no cap, an open loop)", c.MaxConcurrency)
	}
	if es := c.EarlyStop; !(es.TTFTP99 >= 0) || !(es.TPOTP99 >= 0) || !(es.ITLP99 >= 0) ||
		math.IsInf(es.TTFTP99, 0) || math.IsInf(es.TPOTP99, 0) || math.IsInf(es.ITLP99, 0) {
		return bad("early stop", "limits must be finite and non-negative seconds, got TTFT %v, TPOT %v and ITL %v", es.TTFTP99, es.TPOTP99, es.ITLP99)
	}
	if c.WarmPrompts && !c.PrefixCaching {
		return bad("warm prompts", "the prompts can be cached only with prefix caching on")
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = 1_000_000_000
	}
	if c.SampleInterval < 0 {
		return bad("sample interval", "negative")
	}
	if c.Defrag.Policy < DefragOff || c.Defrag.Policy > DefragOffline {
		return bad("defrag", "%v", c.Defrag.Policy)
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 10_000
	}
	if math.IsNaN(c.GPU.MemBandwidth) {
		return bad("gpu", "bandwidth is NaN")
	}
	return c, nil
}
