// Model architecture, KV-cache and weight sizes. See package model for the overview.

package model

import (
	"errors"
	"fmt"
)

// Errors. Each is returned wrapped, with the detail after a colon; test with errors.Is.
var (
	// ErrBadModel: a Model whose fields are missing, out of range or inconsistent.
	ErrBadModel = errors.New("bad model")
	// ErrBadTP: a tensor-parallel degree the model's heads cannot be split by.
	ErrBadTP = errors.New("bad tensor parallelism")
)

// Bounds that Validate enforces. They are far above any published model
// (the largest hidden size we know is 16,384, the largest vocabulary 262,144,
// the most layers 126 dense / 61 MoE, the most experts 384) and they keep
// every byte count in this package well inside int64: the largest KV term,
// 2 × maxLayers × maxDim × maxDim × 4 bytes, is 2^55.
const (
	maxDim     = 1 << 20 // heads, head dim, hidden, intermediate, vocab, LoRA ranks
	maxLayers  = 1 << 12
	maxExperts = 1 << 12
	maxContext = 1 << 26 // 64 Mi tokens
	maxParams  = 1 << 50 // ≈ 1.1e15 parameters
)

// Model is a decoder-only transformer as far as memory and compute need it.
// Fields follow Hugging Face config.json names (given in brackets).
//
// Invariants (checked by Validate):
//   - every dimension is positive and within the package bounds;
//   - Heads % KVHeads == 0 (grouped-query attention; KVHeads == Heads is MHA);
//   - Params > 0 and WeightDType is valid;
//   - MLA and MoE, when present, pass their own checks, and
//     MoE.DenseLayers <= Layers.
type Model struct {
	Name   string // preset name or the name given to ReadHFConfig
	Family string // config.json model_type: llama, mistral, qwen2, qwen3, opt, deepseek_v2, deepseek_v3

	Layers       int // [num_hidden_layers]
	Heads        int // query heads [num_attention_heads]
	KVHeads      int // key/value heads [num_key_value_heads]; = Heads for MHA
	HeadDim      int // [head_dim], else Hidden / Heads; for MLA qk_nope + qk_rope
	Hidden       int // [hidden_size]
	Intermediate int // dense MLP width [intermediate_size; OPT: ffn_dim]
	Vocab        int // [vocab_size]
	MaxContext   int // [max_position_embeddings]

	// Params is the total parameter count. Presets and ReadHFConfig fill it
	// with EstimateParams; set it yourself to use a published figure.
	Params      int64
	WeightDType DType // storage type of the weights [torch_dtype, quantization_config]

	// Unquantized names what a quantized model keeps in 16 bits beyond its
	// embedding, lm_head and norms [quantization_config:
	// modules_to_not_convert, ignore].
	Unquantized Unquantized

	TiedEmbeddings bool // lm_head shares the input embedding [tie_word_embeddings]
	QKVBias        bool // q/k/v projections have biases (Qwen2)

	MLA *MLA // multi-head latent attention (DeepSeek-V2/V3); nil for GQA/MHA
	MoE *MoE // mixture of experts; nil for dense MLPs
}

// MLA holds the multi-head latent attention dimensions. The KV cache stores,
// per layer and token, one compressed latent of KVLoRARank values plus one
// shared RoPE key of QKRopeHeadDim values; the other fields matter only for
// the parameter count.
type MLA struct {
	KVLoRARank    int // [kv_lora_rank]
	QKRopeHeadDim int // [qk_rope_head_dim]
	QKNopeHeadDim int // [qk_nope_head_dim]
	VHeadDim      int // [v_head_dim]
	QLoRARank     int // [q_lora_rank]; 0 = queries not compressed (DeepSeek-V2-Lite)
}

// MoE holds the mixture-of-experts dimensions, in DeepSeek's layout: the
// first DenseLayers layers have a dense MLP of width Model.Intermediate, the
// rest have Experts routed experts (ExpertsPerToken chosen per token) plus
// SharedExperts always-on experts, each a gated MLP of width
// ExpertIntermediate, and a router of Hidden × Experts.
type MoE struct {
	Experts            int // [n_routed_experts]
	ExpertsPerToken    int // [num_experts_per_tok]
	SharedExperts      int // [n_shared_experts]
	ExpertIntermediate int // [moe_intermediate_size]
	DenseLayers        int // [first_k_dense_replace]
}

// Validate checks the invariants listed on Model. Errors wrap ErrBadModel
// and name the field.
func (m *Model) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s: %s is %v, want %s", ErrBadModel, m.Name, field, v, want)
	}
	dims := []struct {
		name string
		v    int
		max  int
	}{
		{"Layers", m.Layers, maxLayers}, {"Heads", m.Heads, maxDim}, {"KVHeads", m.KVHeads, maxDim},
		{"HeadDim", m.HeadDim, maxDim}, {"Hidden", m.Hidden, maxDim}, {"Intermediate", m.Intermediate, maxDim},
		{"Vocab", m.Vocab, maxDim}, {"MaxContext", m.MaxContext, maxContext},
	}
	if m.MLA != nil {
		dims = append(dims, []struct {
			name string
			v    int
			max  int
		}{
			{"MLA.KVLoRARank", m.MLA.KVLoRARank, maxDim}, {"MLA.QKRopeHeadDim", m.MLA.QKRopeHeadDim, maxDim},
			{"MLA.QKNopeHeadDim", m.MLA.QKNopeHeadDim, maxDim}, {"MLA.VHeadDim", m.MLA.VHeadDim, maxDim},
		}...)
		if m.MLA.QLoRARank < 0 || m.MLA.QLoRARank > maxDim {
			return bad("MLA.QLoRARank", m.MLA.QLoRARank, fmt.Sprintf("0 (none) to %d", maxDim))
		}
	}
	if m.MoE != nil {
		dims = append(dims, []struct {
			name string
			v    int
			max  int
		}{
			{"MoE.Experts", m.MoE.Experts, maxExperts}, {"MoE.ExpertsPerToken", m.MoE.ExpertsPerToken, m.MoE.Experts},
			{"MoE.ExpertIntermediate", m.MoE.ExpertIntermediate, maxDim},
		}...)
		if m.MoE.SharedExperts < 0 || m.MoE.SharedExperts > maxExperts {
			return bad("MoE.SharedExperts", m.MoE.SharedExperts, fmt.Sprintf("0 to %d", maxExperts))
		}
		if m.MoE.DenseLayers < 0 || m.MoE.DenseLayers > m.Layers {
			return bad("MoE.DenseLayers", m.MoE.DenseLayers, fmt.Sprintf("0 to Layers (%d)", m.Layers))
		}
	}
	for _, d := range dims {
		if d.v < 1 || d.v > d.max {
			return bad(d.name, d.v, fmt.Sprintf("1 to %d", d.max))
		}
	}
	if m.Heads%m.KVHeads != 0 {
		return bad("KVHeads", m.KVHeads, fmt.Sprintf("a divisor of Heads (%d)", m.Heads))
	}
	if !m.WeightDType.Valid() {
		return bad("WeightDType", m.WeightDType, "a valid dtype")
	}
	if m.Params < 1 || m.Params > maxParams {
		return bad("Params", m.Params, fmt.Sprintf("1 to %d", int64(maxParams)))
	}
	return m.Unquantized.validate(m)
}

// ValidateTP reports whether the model can run with tensor-parallel degree
// tp, by vLLM's rules: tp >= 1, Heads % tp == 0, and the KV heads either
// split evenly (KVHeads % tp == 0) or are replicated evenly
// (tp % KVHeads == 0). MLA models need only the first two. Errors wrap ErrBadTP.
func (m *Model) ValidateTP(tp int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("%w: %s: tp=%d, want >= 1", ErrBadTP, m.Name, tp)
	case m.Heads%tp != 0:
		return fmt.Errorf("%w: %s: %d attention heads do not split over tp=%d", ErrBadTP, m.Name, m.Heads, tp)
	case m.MLA == nil && m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		return fmt.Errorf("%w: %s: %d KV heads neither split over nor replicate evenly to tp=%d", ErrBadTP, m.Name, m.KVHeads, tp)
	}
	return nil
}

// KVHeadsPerGPU is the number of KV heads each of tp GPUs holds:
// max(1, KVHeads ÷ tp), as vLLM computes it. When tp exceeds KVHeads the
// heads are replicated, so per-GPU KV stops shrinking. MLA models hold their
// one latent on every GPU and return 1. It panics if tp < 1.
func (m *Model) KVHeadsPerGPU(tp int) int {
	if tp < 1 {
		panic(fmt.Sprintf("model: KVHeadsPerGPU: tp=%d < 1", tp))
	}
	if m.MLA != nil {
		return 1
	}
	return max(1, m.KVHeads/tp)
}

// KVBytesPerToken is the KV-cache bytes one token occupies on each GPU of a
// tp-way tensor-parallel group, with KV elements stored as kv:
//
//	GQA/MHA: 2 × Layers × KVHeadsPerGPU(tp) × HeadDim × bytes(kv)
//	MLA:     Layers × (KVLoRARank + QKRopeHeadDim) × bytes(kv)   (not divided by tp)
//
// The 2 is one K and one V vector. MLA caches one latent per token and layer
// that all heads share; tensor parallelism splits heads, not the latent, so
// vLLM and SGLang keep the whole latent cache on every TP rank. Quantization
// scales (e.g. FlashMLA's fp8 layout) are not counted. Every layer is assumed
// to attend over the full context (no sliding window). It panics if tp < 1;
// call ValidateTP first for user input.
func (m *Model) KVBytesPerToken(kv DType, tp int) int64 {
	heads := int64(m.KVHeadsPerGPU(tp))
	if m.MLA != nil {
		return kv.Size(int64(m.Layers) * int64(m.MLA.KVLoRARank+m.MLA.QKRopeHeadDim))
	}
	return kv.Size(2 * int64(m.Layers) * heads * int64(m.HeadDim))
}

// WeightBytes is the weight memory on each GPU of a tp-way group:
// ceil((size(Params − p16 in WeightDType) + 2 × p16) ÷ tp), p16 the
// parameters a quantized model keeps in 16 bits (Split16: its embedding,
// lm_head, norms and Unquantized; 0 for a 16-bit model). The split is idealised as even:
// vLLM shards the embeddings and every projection, and replicates only the
// norms, which are under 0.01% of the parameters. It panics if tp < 1.
func (m *Model) WeightBytes(tp int) int64 {
	if tp < 1 {
		panic(fmt.Sprintf("model: WeightBytes: tp=%d < 1", tp))
	}
	w := m.Split16().Params
	b := m.WeightDType.Size(m.Params-w) + BF16.Size(w)
	return (b + int64(tp) - 1) / int64(tp)
}

// ActiveParams is the number of parameters that take part in the matrix
// products for one token: Params minus the lookup-only tables (the input
// embedding when it is not tied to lm_head, OPT's learned positions) minus
// the routed experts a token does not visit. For DeepSeek-V3 this gives
// 36.6e9, the figure DeepSeek publishes as "37B activated". The deduction is
// taken from EstimateParams's breakdown, so it applies to a hand-set Params too.
func (m *Model) ActiveParams() int64 {
	b, err := estimate(m)
	if err != nil {
		return m.Params
	}
	return max(0, m.Params-b.lookup-b.inactive)
}

// FLOPsPerToken is 2 × ActiveParams: one multiply and one add per weight
// for each token passing through the dense layers. Attention over the
// context (≈ 4 × Layers × Heads × HeadDim × context) is not included; the
// simulator adds it because it depends on the sequence.
func (m *Model) FLOPsPerToken() float64 { return 2 * float64(m.ActiveParams()) }
