// Model presets. See package model for the overview.

package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownModel is returned (wrapped) by Preset and Load for a name that
// is neither a preset nor a readable file.
var ErrUnknownModel = errors.New("unknown model")

// presets holds the architecture of each preset, copied from the model's
// published config.json on Hugging Face (the repository is named above each
// entry; all files are "config.json" at the repository root). Params is
// filled by EstimateParams when a preset is looked up; the tests compare it
// with the published totals. Llama 3 8B/70B keep the 8,192-token context of
// the original release; the llama-3.1 entries have the same architecture
// with the 131,072-token context. 405B was only released as Llama 3.1, so
// llama-3-405b and llama-3.1-405b are the same model. The Qwen2.5 entries
// are the -Instruct releases (max_position_embeddings 32,768, as in
// ../shared/data/models/qwen2.5-7b.config.json; the base models say 131,072).
var presets = map[string]Model{
	// meta-llama/Meta-Llama-3-8B
	"llama-3-8b": llama("llama-3-8b", 32, 32, 8, 4096, 14336, 8192),
	// meta-llama/Llama-3.1-8B
	"llama-3.1-8b": llama("llama-3.1-8b", 32, 32, 8, 4096, 14336, 131072),
	// meta-llama/Meta-Llama-3-70B
	"llama-3-70b": llama("llama-3-70b", 80, 64, 8, 8192, 28672, 8192),
	// meta-llama/Llama-3.1-70B
	"llama-3.1-70b": llama("llama-3.1-70b", 80, 64, 8, 8192, 28672, 131072),
	// meta-llama/Llama-3.1-405B
	"llama-3-405b":   llama("llama-3-405b", 126, 128, 8, 16384, 53248, 131072),
	"llama-3.1-405b": llama("llama-3.1-405b", 126, 128, 8, 16384, 53248, 131072),
	// meta-llama/Llama-2-7b-hf: MHA (num_key_value_heads 32 = heads),
	// intermediate 11,008, vocab 32,000, 4,096 positions, torch_dtype float16.
	"llama-2-7b": {Name: "llama-2-7b", Family: "llama", Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 128,
		Hidden: 4096, Intermediate: 11008, Vocab: 32000, MaxContext: 4096, WeightDType: FP16},
	// meta-llama/Llama-2-70b-hf: grouped-query attention (8 KV heads),
	// intermediate 28,672, vocab 32,000, 4,096 positions, float16.
	"llama-2-70b": {Name: "llama-2-70b", Family: "llama", Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128,
		Hidden: 8192, Intermediate: 28672, Vocab: 32000, MaxContext: 4096, WeightDType: FP16},
	// meta-llama/Llama-2-13b-hf: MHA (num_key_value_heads 40 = heads),
	// vocab 32,000, torch_dtype float16.
	"llama-2-13b": {Name: "llama-2-13b", Family: "llama", Layers: 40, Heads: 40, KVHeads: 40, HeadDim: 128,
		Hidden: 5120, Intermediate: 13824, Vocab: 32000, MaxContext: 4096, WeightDType: FP16},
	// facebook/opt-13b: MHA, ffn_dim 20,480, vocab 50,272, learned positions,
	// tied embeddings (OPT's default), torch_dtype float16.
	"opt-13b": {Name: "opt-13b", Family: "opt", Layers: 40, Heads: 40, KVHeads: 40, HeadDim: 128,
		Hidden: 5120, Intermediate: 20480, Vocab: 50272, MaxContext: 2048, WeightDType: FP16, TiedEmbeddings: true},
	// Qwen/Qwen2.5-7B-Instruct
	"qwen2.5-7b": qwen("qwen2.5-7b", 28, 28, 4, 3584, 18944),
	// Qwen/Qwen2.5-14B-Instruct
	"qwen2.5-14b": qwen("qwen2.5-14b", 48, 40, 8, 5120, 13824),
	// Qwen/Qwen2.5-72B-Instruct
	"qwen2.5-72b": qwen("qwen2.5-72b", 80, 64, 8, 8192, 29568),
	// Qwen/Qwen3-8B: 36 layers, 32 heads, 8 KV heads, head dim 128, hidden
	// 4,096, intermediate 12,288, vocab 151,936, untied embeddings, no
	// q/k/v biases (Qwen3 normalises q and k instead: 256 weights a layer,
	// not counted), max_position_embeddings 40,960, bf16. Also the text
	// model of Qwen/Qwen3-VL-8B-Instruct: its text_config has these shapes
	// but max_position_embeddings 262,144 and rope_theta 5,000,000
	// (interleaved M-RoPE), which neither the weights nor the step time
	// depend on; text prompts do not run its vision tower (the servers of
	// bowenwan6/sglang-vllm-profiler loaded 16.52 and 16.78 GB of weights,
	// its experiments/env_snapshot.md, against this preset's 16.38 GB).
	"qwen3-8b": {Name: "qwen3-8b", Family: "qwen3", Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128,
		Hidden: 4096, Intermediate: 12288, Vocab: 151936, MaxContext: 40960, WeightDType: BF16},
	// deepseek-ai/DeepSeek-V3: hidden 7168, 128 heads (num_key_value_heads 128),
	// q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
	// qk_rope_head_dim 64, v_head_dim 128, intermediate 18432 (first 3 dense
	// layers), 256 routed + 1 shared experts of width 2048, 8 per token,
	// vocab 129,280, max_position_embeddings 163,840. The released weights
	// are fp8 e4m3 (quantization_config), so WeightDType is FP8E4M3 though
	// torch_dtype says bfloat16. The 14B-parameter MTP module is not counted.
	"deepseek-v3": {Name: "deepseek-v3", Family: "deepseek_v3", Layers: 61, Heads: 128, KVHeads: 128, HeadDim: 192,
		Hidden: 7168, Intermediate: 18432, Vocab: 129280, MaxContext: 163840, WeightDType: FP8E4M3,
		MLA: &MLA{KVLoRARank: 512, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128, QLoRARank: 1536},
		MoE: &MoE{Experts: 256, ExpertsPerToken: 8, SharedExperts: 1, ExpertIntermediate: 2048, DenseLayers: 3}},
}

// presetRepos is the Hugging Face repository each preset's config.json was
// copied from (the comments of presets), the model id an engine such as
// `vllm serve` takes.
var presetRepos = map[string]string{
	"llama-3-8b":     "meta-llama/Meta-Llama-3-8B",
	"llama-3.1-8b":   "meta-llama/Llama-3.1-8B",
	"llama-3-70b":    "meta-llama/Meta-Llama-3-70B",
	"llama-3.1-70b":  "meta-llama/Llama-3.1-70B",
	"llama-3-405b":   "meta-llama/Llama-3.1-405B",
	"llama-3.1-405b": "meta-llama/Llama-3.1-405B",
	"llama-2-7b":     "meta-llama/Llama-2-7b-hf",
	"llama-2-70b":    "meta-llama/Llama-2-70b-hf",
	"llama-2-13b":    "meta-llama/Llama-2-13b-hf",
	"opt-13b":        "facebook/opt-13b",
	"qwen2.5-7b":     "Qwen/Qwen2.5-7B-Instruct",
	"qwen2.5-14b":    "Qwen/Qwen2.5-14B-Instruct",
	"qwen2.5-72b":    "Qwen/Qwen2.5-72B-Instruct",
	"qwen3-8b":       "Qwen/Qwen3-8B",
	"deepseek-v3":    "deepseek-ai/DeepSeek-V3",
}

// PresetRepo returns the Hugging Face repository of a preset's config (its
// model id), or false for a name that is not a preset.
func PresetRepo(name string) (string, bool) {
	r, ok := presetRepos[strings.ToLower(strings.TrimSpace(name))]
	return r, ok
}

// llama is a Llama-3 layout: head dim 128 (= hidden ÷ heads), vocab
// 128,256, untied embeddings, no biases, bf16.
func llama(name string, layers, heads, kvHeads, hidden, inter, ctx int) Model {
	return Model{Name: name, Family: "llama", Layers: layers, Heads: heads, KVHeads: kvHeads,
		HeadDim: hidden / heads, Hidden: hidden, Intermediate: inter, Vocab: 128256, MaxContext: ctx, WeightDType: BF16}
}

// qwen is a Qwen2.5 (≥ 7B) layout: head dim hidden ÷ heads = 128, vocab
// 152,064, untied embeddings, q/k/v biases, 32,768 positions, bf16.
func qwen(name string, layers, heads, kvHeads, hidden, inter int) Model {
	return Model{Name: name, Family: "qwen2", Layers: layers, Heads: heads, KVHeads: kvHeads,
		HeadDim: hidden / heads, Hidden: hidden, Intermediate: inter, Vocab: 152064, MaxContext: 32768,
		WeightDType: BF16, QKVBias: true}
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the named preset (case-insensitive) with Params filled in.
// The MLA and MoE structs are fresh copies, so callers may modify the result.
// Unknown names give an error wrapping ErrUnknownModel that lists the presets.
func Preset(name string) (Model, error) {
	m, ok := presets[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Model{}, fmt.Errorf("%w: %q (presets: %s)", ErrUnknownModel, name, strings.Join(PresetNames(), ", "))
	}
	if m.MLA != nil {
		a := *m.MLA
		m.MLA = &a
	}
	if m.MoE != nil {
		e := *m.MoE
		m.MoE = &e
	}
	p, err := EstimateParams(m)
	if err != nil {
		panic(fmt.Sprintf("model: preset %s: %v", m.Name, err)) // broken table; TestPresetsValid catches it
	}
	m.Params = p
	return m, nil
}
