// Serving engines: how a step is composed (Config.Engine) and each engine's
// CUDA-graph capture sizes (the engine part of a Profile). See steptime.go
// for the step-time model and profile.go for the parameters.

package sim

import (
	"fmt"
	"strings"
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
	// EngineVLLMV0 is vLLM's V0 engine. Without chunked prefill (the vLLM
	// paper's setup, and V0's default below 32K context) a step that can
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

// sglangGraphSizes is SGLang's default cuda_graph_bs
// (python/sglang/srt/model_executor/cuda_graph_runner.py,
// get_batch_sizes_to_capture, without speculative decoding and with
// padding on): 1, 2, 4, 8, then 16 to 160 by 8, and on GPUs with more
// than 80 GiB (81,920 MiB: the H200, not the H100 or A100-80GB) also 168
// to 256 by 8. Prefill and mixed batches run without graphs.
func sglangGraphSizes(capacity int64) []int {
	s := []int{1, 2, 4, 8}
	for b := 16; b <= 160; b += 8 {
		s = append(s, b)
	}
	if capacity > 81920<<20 {
		for b := 168; b <= 256; b += 8 {
			s = append(s, b)
		}
	}
	return s
}
