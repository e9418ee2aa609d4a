// Serving engines: how a step is composed (Config.Engine) and each engine's
// CUDA-graph capture sizes (the engine part of a Profile). See steptime.go
// for the step-time model and profile.go for the parameters.

package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/kv/strategy"
)

// EngineKind is the serving engine whose scheduler the simulator follows:
// which work shares a step, and (through the engine's Profile) which steps
// run under CUDA graphs.
type EngineKind uint8

const (
	// EngineVLLMV1 is vLLM's V1 engine (the zero value, and what the
	// simulator has always scheduled): running requests first in admission
	// order, each its next prefill chunk or one decode token, then waiting
	// requests, all in one step under max_num_batched_tokens (mixed steps;
	// with ChunkedPrefill off a prompt waits until it fits whole).
	EngineVLLMV1 EngineKind = iota
	// EngineVLLMV0 is vLLM's V0 engine. Without chunked prefill (V0's
	// default below 32K context, and the vLLM paper's scenario, though
	// cacheflow's schedulers of June 2023 mixed prompts and decodes:
	// docs/calibrate.md, issue 24, eleventh session) a step that can
	// admit waiting prompts runs only those prefills and the running
	// decodes wait (vllm/core/scheduler.py, _schedule_default: prefills
	// first, and a step with prefills returns without decodes). With
	// ChunkedPrefill, V0's _schedule_chunked_prefill mixes them, as V1 does.
	EngineVLLMV0
	// EngineSGLang is SGLang's scheduler: prefill has priority and prefill
	// and decode batches are separate steps (scheduler.py,
	// get_next_batch_to_run: a new prefill batch runs when there is one,
	// otherwise the running batch decodes); prompts are split at the chunk
	// size (--chunked-prefill-size, MaxBatchTokens here) when
	// ChunkedPrefill is on. With Config.MixedChunk (--enable-mixed-chunk)
	// the running decodes join the prefill batch, as in vLLM V1.
	EngineSGLang
)

var engineNames = [...]string{"vllm-v1", "vllm-v0", "sglang"}

// EngineNames returns the names ParseEngine accepts, default first.
func EngineNames() []string { return append([]string(nil), engineNames[:]...) }

// String returns the name ParseEngine accepts.
func (k EngineKind) String() string {
	if int(k) >= len(engineNames) {
		return fmt.Sprintf("EngineKind(%d)", int(k))
	}
	return engineNames[k]
}

// Valid reports whether k is one of the defined engines.
func (k EngineKind) Valid() bool { return int(k) < len(engineNames) }

// ParseEngine parses vllm-v1, vllm-v0 or sglang (case-insensitive).
func ParseEngine(s string) (EngineKind, error) {
	for i, n := range engineNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return EngineKind(i), nil
		}
	}
	return 0, fmt.Errorf("%w: engine %q: want one of %s", ErrBadConfig, s, strings.Join(engineNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler (YAML and JSON write the name).
func (k EngineKind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("%w: engine %d is not defined", ErrBadConfig, int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *EngineKind) UnmarshalText(b []byte) error {
	v, err := ParseEngine(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// separateSteps reports whether the engine runs prefill-only and
// decode-only steps (and so prefills first), rather than mixed ones.
func (c *Config) separateSteps() bool {
	switch c.Engine {
	case EngineVLLMV0:
		return !c.ChunkedPrefill
	case EngineSGLang:
		return !c.MixedChunk
	}
	return false
}

// Capture sizes of each engine's CUDA graphs for decode batches, as the
// engines' sources define their defaults. A pure-decode step of b
// sequences runs the graph of the smallest size ≥ b, padded to it; a
// larger one runs eagerly.

// vllmV1GraphSizes is vLLM V1's default cudagraph_capture_sizes
// (vllm/config/compilation.py, set_cudagraph_sizes, v0.11 and later): 1, 2,
// 4, multiples of 8 below 256, then multiples of 16 up to
// min(2 × max_num_seqs, 512): 512 at the default 256 sequences. V1 also
// runs mixed and prefill steps of up to the largest size under piecewise
// graphs padded to these sizes (cudagraph_mode FULL_AND_PIECEWISE, the
// default since v0.11), which PadMixed stands for.
func vllmV1GraphSizes() []int {
	s := []int{1, 2, 4}
	for b := 8; b < 256; b += 8 {
		s = append(s, b)
	}
	for b := 256; b <= 512; b += 16 {
		s = append(s, b)
	}
	return s
}

// vllmV0GraphSizes is vLLM V0's _BATCH_SIZES_TO_CAPTURE
// (vllm/worker/model_runner.py, v0.2.5 to v0.10): 1, 2, 4 and 8 × 1…32, so
// decode batches up to 256; prefill and mixed steps run eagerly. vLLM
// before v0.2.5 (the vLLM paper's version) had no CUDA graphs: a profile
// for it has no sizes.
func vllmV0GraphSizes() []int {
	s := []int{1, 2, 4}
	for i := 1; i <= 32; i++ {
		s = append(s, 8*i)
	}
	return s
}

// SGLang sets two defaults from the GPU's memory and the TP degree when
// the user leaves them unset: cuda_graph_max_bs, the largest decode batch
// it captures as a CUDA graph, and chunked_prefill_size, the prefill
// chunk (MaxBatchTokens here). It compares nvidia-smi's memory.total in
// MiB (utils.py get_nvgpu_memory_capacity; model.GPU.Capacity is that
// figure: 24,564 MiB for the RTX 4090, 49,140 for the RTX A6000, 40,536
// for the A100-40GB, 81,920 for the A100-80GB and A800, 143,771 for the
// H200). Read from the release tags of sgl-project/sglang (as mirrored in
// bytedance-iaas/sglang; docs/calibrate.md, issue 24, twelfth session),
// paths under python/sglang/srt/:
//
//   - 0.1.20 to 0.2.13: model_runner.py captures [1, 2, 4] + 8 × i, to 120
//     (v0.1.20 managers/controller/model_runner.py:231) and from 0.1.22 to
//     128 (v0.2.13 model_executor/model_runner.py:364); before 0.1.20
//     SGLang had no CUDA graphs. Chunk 8,192 from 0.2.13 (off before).
//   - 0.2.14 to 0.3.6: to 160 (v0.2.14 model_runner.py:496; v0.3.6
//     cuda_graph_runner.py:123, cuda_graph_max_bs 160 at server_args.py:132);
//     0.3.6 cuts both to 4 and 2,048 below 25,000 MiB (server_args.py:173-175).
//   - 0.4.0: the same list (cuda_graph_runner.py:132-138) capped at
//     cuda_graph_max_bs, 8 below 25,000 MiB and 160 above
//     (server_args.py:178-182); chunk 2,048 below 25,000 MiB, else 8,192
//     (:171-175). From 0.4.1 (0.4.0.post1) the cap below 25,000 MiB is 80
//     at TP ≥ 4 (v0.4.1 server_args.py:192-198).
//   - 0.4.6 to 0.5.2: no cap from 25,000 MiB (35 GiB from 0.4.8), and the
//     list grows with the memory: 168 to 256 by 8 above 81,920 MiB (v0.4.6
//     cuda_graph_runner.py:136-139; above 96 GiB in 0.4.7, above 90 GiB
//     from 0.4.8: v0.4.8 :158-163, v0.4.9 :158-163), 272 to 512 by 16 above
//     180,000 MiB (0.4.7) or 160,000 (0.4.8); below the threshold 8, or 80
//     at TP ≥ 4 (v0.4.8 server_args.py:331-337, v0.4.9 :347-351). Chunk
//     16,384 above 180,000 MiB in 0.4.7 (v0.4.7 server_args.py:287-294),
//     from 0.4.8 2,048 below 35 GiB, 8,192 below 160 GiB, 16,384 above
//     (v0.4.8 :317-327, v0.4.9 :333-339). (0.4.7.post1 has 0.4.8's rules;
//     a post release is taken as its base, as 0.4.0.post1 above.)
//   - 0.5.3 on: tiers by memory and TP (_handle_gpu_memory_settings; v0.5.6
//     server_args.py:725-808), cuda_graph_max_bs at TP < 4 / TP ≥ 4 and the
//     chunk: below 20 GiB 8 / 8 and 2,048 (:726-732); below 35 GiB 24 / 80
//     (16 / 80 in 0.5.3-0.5.4: v0.5.3 :583-586) and 2,048 (:743-755); below
//     60 GiB 32 / 160 and 4,096 (:756-765); below 160 GiB 256 / 512 and
//     8,192 (:776-795); above, 512 and 16,384 (:796-802). The list is
//     [1, 2, 4, 8, 12] + 16 to 256 by 8 + 272 to 496 by 16 + 512 on by 32,
//     cut at cuda_graph_max_bs (_generate_cuda_graph_batch_sizes,
//     :871-898; cuda_graph_runner.py get_batch_sizes_to_capture:189-209
//     takes it). The same tiers hold to 0.5.18 (server_args.py:4802-4890),
//     the newest release read; a later 0.5 release is taken as 0.5.18.
//
// Every release also caps the list at the request pool
// (max_running_requests) and, from 0.4.3, adds the pool's size where it
// is below the largest size; the simulator does not (a decode batch near
// MaxSeqs may pad past it). Prefill and mixed batches run without graphs
// (enable_piecewise_cuda_graph is off by default: v0.5.6
// server_args.py:508).

// Release boundaries of SGLang's CUDA-graph and chunk defaults.
var (
	sglangGraphsFirst = Version{0, 1, 20} // CUDA graphs
	sglangGraphs128   = Version{0, 1, 22} // list to 128
	sglangChunkOn     = Version{0, 2, 13} // chunked prefill on by default
	sglangGraphs160   = Version{0, 2, 14} // list to 160
	sglangSmallGPU    = Version{0, 3, 6}  // smaller defaults below 25,000 MiB
	sglangMaxBS       = Version{0, 4, 0}  // cuda_graph_max_bs by memory
	sglangSmallTP80   = Version{0, 4, 1}  // 80 at TP ≥ 4 below 25,000 MiB
	sglangBigLists    = Version{0, 4, 6}  // no cap above 25,000 MiB; lists by memory
	sglangBigLists96  = Version{0, 4, 7}  // thresholds 96 GiB and 180,000 MiB
	sglangBigLists90  = Version{0, 4, 8}  // thresholds 90 GiB and 160,000 MiB, 35 GiB
	sglangTiers       = Version{0, 5, 3}  // _handle_gpu_memory_settings's tiers
	sglangTiers24     = Version{0, 5, 5}  // 24 at TP < 4 below 35 GiB
)

// SGLangDefaults are SGLang's defaults of release v on a GPU of capacity
// bytes at tensor parallelism tp: GraphSizes, the decode batch sizes it
// captures as CUDA graphs (empty: none), and ChunkedPrefill, its
// chunked_prefill_size (0: chunked prefill off).
type SGLangDefaults struct {
	GraphSizes     []int
	ChunkedPrefill int
}

// SGLangDefault returns SGLang's defaults of release v on a GPU of
// capacity bytes at tensor parallelism tp (the comment above cites each
// value).
func SGLangDefault(v Version, capacity int64, tp int) SGLangDefaults {
	mib := capacity >> 20
	const gib = 1024 // MiB
	small := tp < 4
	var list []int
	maxBS := 0 // no cap
	chunk := 8192
	switch {
	case v.less(sglangGraphsFirst):
	case v.less(sglangGraphs128):
		list = sglangList(120)
	case v.less(sglangGraphs160):
		list = sglangList(128)
	default:
		list = sglangList(160)
	}
	if v.less(sglangChunkOn) {
		chunk = 0
	}
	switch {
	case v.less(sglangSmallGPU):
	case v.less(sglangMaxBS):
		if mib < 25000 {
			maxBS, chunk = 4, 2048
		}
	case v.less(sglangBigLists):
		maxBS = 160
		if mib < 25000 {
			maxBS, chunk = 8, 2048
			if !small && !v.less(sglangSmallTP80) {
				maxBS = 80
			}
		}
	case v.less(sglangTiers):
		above, far, low := int64(81920), int64(0), int64(25000)
		switch {
		case !v.less(sglangBigLists90):
			above, far, low = 90*gib, 160000, 35*gib
		case !v.less(sglangBigLists96):
			above, far = 96*gib, 180000
		}
		if mib > above {
			for b := 168; b <= 256; b += 8 {
				list = append(list, b)
			}
		}
		if far > 0 && mib > far {
			for b := 272; b <= 512; b += 16 {
				list = append(list, b)
			}
		}
		if mib < low {
			maxBS, chunk = 8, 2048
			if !small {
				maxBS = 80
			}
		}
		switch {
		case !v.less(sglangBigLists90) && mib >= 160*gib:
			chunk = 16384
		case !v.less(sglangBigLists96) && v.less(sglangBigLists90) && mib > 180000:
			chunk = 16384
		}
	default:
		list = []int{1, 2, 4, 8, 12}
		for b := 16; b <= 256; b += 8 {
			list = append(list, b)
		}
		for b := 272; b < 512; b += 16 {
			list = append(list, b)
		}
		list = append(list, 512) // 512 on by 32 to cuda_graph_max_bs, at most 512 here
		tier24 := 24
		if v.less(sglangTiers24) {
			tier24 = 16
		}
		switch {
		case mib < 20*gib:
			maxBS, chunk = 8, 2048
		case mib < 35*gib:
			maxBS, chunk = sglangByTP(small, tier24, 80), 2048
		case mib < 60*gib:
			maxBS, chunk = sglangByTP(small, 32, 160), 4096
		case mib < 160*gib:
			maxBS, chunk = sglangByTP(small, 256, 512), 8192
		default:
			maxBS, chunk = 512, 16384
		}
	}
	if maxBS > 0 {
		i, _ := slices.BinarySearch(list, maxBS+1)
		list = list[:i]
	}
	return SGLangDefaults{GraphSizes: list, ChunkedPrefill: chunk}
}

// sglangList is [1, 2, 4] + 8 × i up to top.
func sglangList(top int) []int {
	s := []int{1, 2, 4}
	for b := 8; b <= top; b += 8 {
		s = append(s, b)
	}
	return s
}

// sglangByTP is a at TP < 4 (small), else b.
func sglangByTP(small bool, a, b int) int {
	if small {
		return a
	}
	return b
}

// sglangGraphs is SGLang's CUDA-graph capture at release v on a GPU of
// capacity bytes: the sizes at TP ≥ 4 and, where fewer are captured at
// TP < 4 (a prefix of them), the largest of those.
func sglangGraphs(v Version, capacity int64) CUDAGraphTerm {
	big := SGLangDefault(v, capacity, 4).GraphSizes
	g := CUDAGraphTerm{Sizes: big}
	if s := SGLangDefault(v, capacity, 1).GraphSizes; len(s) > 0 && len(s) < len(big) {
		g.SmallTPMax = s[len(s)-1]
	}
	return g
}

// SGLang's admission (python/sglang/srt/managers/schedule_policy.py,
// PrefillAdder, and scheduler.py, as in every release from 0.3 to 0.5):
// a waiting request is admitted only while its prompt not found in the
// prefix cache, the cached part its lock newly takes out of the evictable
// blocks and its whole max_new_tokens (clipped at
// SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION, 4,096: 0.4.0 schedule_policy.py:31,
// 0.5.6 :42) fit in the KV pool's free and evictable tokens (a prefix the
// running requests share held once) less what the running requests are
// expected to still need: their max_new_tokens left times new_token_ratio.
// The ratio starts at 0.7 (global_config.default_init_new_token_ratio ×
// schedule_conservativeness 1), falls by (0.7 − 0.7×0.14) ÷ 600 every
// decode step to 0.7×0.14 (default_min_new_token_ratio_factor,
// default_new_token_ratio_decay_steps), is set back to 0.7 when the
// engine idles (self_check_during_idle), and after a retraction to
// (tokens decoded + 20 × requests) ÷ their max_new_tokens, at most 1
// and, until the next decode step decays it, possibly below the floor
// (ScheduleBatch.retract_decode, retract_decode_steps 20). vLLM admits
// whatever fits now; the difference shows only where memory binds.
const (
	sglInitRatio     = 0.7
	sglMinRatio      = 0.7 * 0.14
	sglRatioDecay    = (sglInitRatio - sglMinRatio) / 600
	sglClipNewTokens = 4096
	sglRetractSteps  = 20
)

// sglMaxNewTokens is the max_new_tokens SGLang gives a request of prompt
// tokens that asks for none: Scheduler.init_req_max_new_tokens (0.5.6
// python/sglang/srt/managers/scheduler.py:1192-1200; inline in
// handle_generate_request in 0.4.0, scheduler.py:630-637) sets
// min(max_new_tokens or 2³⁰, max_req_len − prompt − 1), where max_req_len
// is min(context_len − 1, max_total_num_tokens − 1) (tp_worker.py:100-103
// in 0.4.0, :303-306 in 0.5.6): the context less 2, or the KV pool's
// tokens less 2 where the pool is smaller. That is the path of OpenAI
// chat completions without max_tokens (ChatCompletionRequest.max_tokens
// defaults to None: 0.4.0 openai_api/protocol.py:266, passed as
// max_new_tokens at adapter.py:924; 0.5.6 entrypoints/openai/protocol.py:463,
// with max_completion_tokens as a fallback, :633), which a trace replay
// sends. /v1/completions defaults max_tokens to 16 (0.4.0 protocol.py:158,
// 0.5.6 :223) and the native /generate and sgl.Engine to SamplingParams'
// 128 (sampling_params.py:24 in 0.4.0, :37 in 0.5.6): both would cut a
// trace's outputs there, so a replay that runs them sets max_tokens
// (Config.MaxTokens). The admission clips the estimate at 4,096
// (sglClipNewTokens); the request may still run to its max_new_tokens.
// A prompt too long for it gets 0, as MaxContext − prompt does for vLLM.
func sglMaxNewTokens(context int, pool int64, prompt int) int {
	maxReqLen := int64(context - 1)
	if pool-1 < maxReqLen {
		maxReqLen = pool - 1
	}
	return int(max(maxReqLen-int64(prompt)-1, 0))
}

// sglAdmit is the state of SGLang's admission rule (Engine.sgl).
type sglAdmit struct {
	on bool // the engine is SGLang and preempts (retracts) on OOM
	// share is the KV strategy's prefix sharing when running requests may
	// hold the same cached blocks (prefix caching on, a request with prefix
	// ids); nil otherwise, when every request's tokens are its own.
	share   strategy.PrefixSharing
	retract bool    // ratio was set by a retraction whose decode step is still to count
	ratio   float64 // new_token_ratio at decode step at
	at      int64   // decode steps done when ratio was set
	decode  int64   // decode steps done (steps less prefill steps)
}

// decoded counts k decode steps. The first after a retraction is the
// retraction's own, which sets the ratio instead of decaying it
// (Scheduler.update_running_batch).
func (s *sglAdmit) decoded(k int64) {
	if s.retract {
		s.at++
		s.retract = false
	}
	s.decode += k
}

// sglRatio is new_token_ratio now: as set until a decode step decays it,
// then never below the floor (a retraction may set it lower: the floor
// applies from the next decay on, max(ratio − decay, min)).
func (e *Engine) sglRatio() float64 {
	if e.sgl.decode == e.sgl.at {
		return e.sgl.ratio
	}
	return max(sglMinRatio, e.sgl.ratio-sglRatioDecay*float64(e.sgl.decode-e.sgl.at))
}

// sglSetRatio sets new_token_ratio from this decode step on.
func (e *Engine) sglSetRatio(r float64) {
	e.sgl.ratio, e.sgl.at, e.sgl.retract = r, e.sgl.decode, false
}

// sglRoom is what SGLang's PrefillAdder sees at the start of a prefill
// pass: the pool's tokens not held by running requests (available_size +
// evictable_size: cached blocks no running request holds count as room),
// less the running requests' expected growth (rem_total_tokens). A running
// request holds its fill (prompt and output so far, as admitted); a prefix
// that several running requests share through the prefix cache is one copy
// in the pool (a radix-tree node locked by each), counted once.
func (e *Engine) sglRoom() float64 {
	// Integer sums, one multiply: this runs on every prefill pass while
	// requests wait, over every running request.
	var held, left int64
	for _, ri := range e.running {
		r := &e.reqs[ri]
		n := int64(r.n)
		held += int64(r.prompt) + n*int64(r.gen)
		left += n * int64(min(max(r.maxOut-r.gen, 0), sglClipNewTokens))
	}
	if e.sgl.share != nil {
		held -= e.sgl.share.SharedTokens()
	}
	return float64(e.budgetTokens()-held) - float64(left)*e.sglRatio()
}

// sglNeed is what a waiting request takes from that room when admitted
// (PrefillAdder.add_one_req): its fill less the prefix it finds cached
// (extend_input_len: the prompt and, after a retraction, the output so
// far), the cached prefix's blocks that no running request held, which
// its lock takes out of the evictable size (_lock_node, inc_lock_ref), and
// its max_new_tokens left. A prefix that running requests hold costs
// nothing more; without sharing the cached part is all newly locked, and
// the need is the whole fill, as sglRoom holds it once it runs.
func (e *Engine) sglNeed(r *req) float64 {
	fill := int64(r.prompt) + int64(r.n)*int64(r.gen)
	if e.sgl.share != nil && r.prefix != nil {
		hit, idle := e.sgl.share.PrefixCached(e.kvRequest(r))
		fill += int64(idle - hit)
	}
	return float64(fill) + float64(r.n)*float64(min(max(r.maxOut-r.gen, 0), sglClipNewTokens))
}

// sglRetracted sets the ratio as retract_decode does after a retraction.
func (e *Engine) sglRetracted() {
	dec, maxNew := 0, 0
	for _, ri := range e.running {
		r := &e.reqs[ri]
		dec += r.gen
		maxNew += r.maxOut
	}
	if maxNew > 0 {
		e.sglSetRatio(min(1, float64(dec+sglRetractSteps*len(e.running))/float64(maxNew)))
		e.sgl.retract = true
	}
}
