// Which weights of a quantized model stay in 16 bits. See package model
// for the overview.

package model

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Unquantized names the parts of a quantized model (WeightDType under 16
// bits) whose weights a checkpoint keeps in 16 bits, beyond those every
// quantized model keeps: the input embedding, lm_head and the norms stay
// in 16 bits in any case, because vLLM's and SGLang's FP8, INT8 and INT4
// methods quantize only the linear layers of the decoder (lm_head is an
// embedding-like layer there; Hugging Face's AWQ, GPTQ and bitsandbytes
// skip it too). The zero value keeps nothing more.
//
// Meta's Llama-3.1-405B-FP8 is the case that asks for it: its
// quantization_config's modules_to_not_convert keeps every layer's
// self_attn and the whole of layers 0 and 125 in BF16 (the Llama 3
// paper, arXiv 2407.21783, §6.2), about 20% of its parameters.
type Unquantized struct {
	// Attention keeps every layer's attention projections in 16 bits
	// (self_attn).
	Attention bool
	// AttentionLayers keeps the attention projections of these layers
	// only (layers.N.self_attn), by index, ascending; empty when
	// Attention is set.
	AttentionLayers []int
	// MLPLayers keeps the MLPs of these layers (layers.N.mlp), by index,
	// ascending; a layer whose attention is kept too is in Layers
	// instead. Only dense layers (index < MoE.DenseLayers for a mixture
	// of experts) may be named.
	MLPLayers []int
	// Layers are whole decoder layers (attention and MLP) kept in 16
	// bits, by index, ascending. For a mixture of experts only dense
	// layers (index < MoE.DenseLayers) may be named.
	Layers []int
}

// IsZero reports whether u keeps nothing beyond the embedding, lm_head
// and norms.
func (u Unquantized) IsZero() bool {
	return !u.Attention && len(u.AttentionLayers) == 0 && len(u.MLPLayers) == 0 && len(u.Layers) == 0
}

// String is u in the form ParseUnquantized reads, comma-separated; "" for
// the zero value.
func (u Unquantized) String() string {
	var parts []string
	if u.Attention {
		parts = append(parts, "self_attn")
	}
	for _, l := range u.AttentionLayers {
		parts = append(parts, "layers."+strconv.Itoa(l)+".self_attn")
	}
	for _, l := range u.MLPLayers {
		parts = append(parts, "layers."+strconv.Itoa(l)+".mlp")
	}
	for _, l := range u.Layers {
		parts = append(parts, "layers."+strconv.Itoa(l))
	}
	return strings.Join(parts, ",")
}

// MarshalText implements encoding.TextMarshaler (String).
func (u Unquantized) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParseUnquantized).
func (u *Unquantized) UnmarshalText(b []byte) error {
	v, err := ParseUnquantized(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUnquantized reads a comma-separated list of module names, in the
// forms a checkpoint's modules_to_not_convert (fbgemm_fp8) or ignore
// (compressed-tensors) lists use, with or without the "model." prefix:
//
//	self_attn                every layer's attention projections
//	layers.N                 the whole of layer N
//	layers.N.self_attn       layer N's attention projections
//	layers.N.self_attn.X     one projection (q_proj, k_proj, v_proj, o_proj,
//	                         qkv_proj): taken as the layer's whole attention
//	layers.N.mlp             layer N's MLP (a dense layer's)
//	lm_head, embed_tokens, norm, layers.N.mlp.gate (an MoE router)
//	                         accepted: these stay in 16 bits anyway (the
//	                         router is counted with its layer: under 0.02%
//	                         of DeepSeek-V3's parameters)
//	re:<regexp>              compressed-tensors' pattern: accepted only when
//	                         it names lm_head or a router gate and no
//	                         projection (".*mlp.gate$", not ".*mlp.gate")
//	multi_modal_projector, merger, modality_projection, vision_tower,
//	vision_model, visual, audio_tower (and their submodules)
//	                         accepted: modules outside the text decoder,
//	                         which gpufrag does not model (quantizers' skip
//	                         lists for multimodal models name them)
//
// Anything else (one MLP projection, an unknown module) is an error: the
// model keeps whole layers, attention blocks or MLPs in 16 bits, not parts
// of an MLP. The result is sorted, without repeats; a layer whose
// attention and MLP are both named is kept whole, and a layer's attention
// or MLP is named apart only when the layer is not kept whole.
func ParseUnquantized(s string) (Unquantized, error) {
	var u Unquantized
	if strings.TrimSpace(s) == "" {
		return u, nil
	}
	for _, e := range strings.Split(s, ",") {
		if err := u.add(strings.TrimSpace(e)); err != nil {
			return Unquantized{}, err
		}
	}
	u.normalise()
	return u, nil
}

// normalise sorts u's lists and drops repeats; a layer whose attention
// and MLP are both kept moves to Layers, and the attention or MLP of a
// layer kept whole, and every per-layer attention when Attention is set,
// are dropped.
func (u *Unquantized) normalise() {
	sortSet := func(l []int) []int {
		slices.Sort(l)
		if l = slices.Compact(l); len(l) == 0 {
			return nil
		}
		return l
	}
	u.AttentionLayers, u.MLPLayers = sortSet(u.AttentionLayers), sortSet(u.MLPLayers)
	for _, l := range u.MLPLayers {
		if _, attn := slices.BinarySearch(u.AttentionLayers, l); attn || u.Attention {
			u.Layers = append(u.Layers, l)
		}
	}
	u.Layers = sortSet(u.Layers)
	whole := func(l int) bool { _, ok := slices.BinarySearch(u.Layers, l); return ok }
	u.AttentionLayers = sortSet(slices.DeleteFunc(u.AttentionLayers, func(l int) bool { return u.Attention || whole(l) }))
	u.MLPLayers = sortSet(slices.DeleteFunc(u.MLPLayers, whole))
}

var (
	reLayer     = regexp.MustCompile(`^layers\.(\d+)$`)
	reLayerAttn = regexp.MustCompile(`^layers\.(\d+)\.self_attn(\.(q_proj|k_proj|v_proj|o_proj|qkv_proj))?$`)
	reLayerMLP  = regexp.MustCompile(`^layers\.(\d+)\.mlp$`)
	reOutside   = regexp.MustCompile(`^(multi_modal_projector|merger|modality_projection|vision_tower|vision_model|visual|audio_tower)(\..*)?$`)
	reAlways    = regexp.MustCompile(`^(lm_head|embed_tokens|norm|layers\.\d+\.(mlp|block_sparse_moe)\.gate)$`)
)

// projections are module names of quantized projections: a re: pattern
// that matches lm_head or a router gate and one of these too (".*",
// "model.layers.*", ".*mlp.gate" without the $ that spares gate_proj)
// would keep projections in 16 bits, which it cannot be read as.
var projections = []string{
	"model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj", "model.layers.1.self_attn.v_proj",
	"model.layers.1.self_attn.o_proj", "model.layers.1.self_attn.qkv_proj",
	"model.layers.1.self_attn.q_a_proj", "model.layers.1.self_attn.q_b_proj",
	"model.layers.1.self_attn.kv_a_proj_with_mqa", "model.layers.1.self_attn.kv_b_proj",
	"model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj", "model.layers.1.mlp.down_proj",
	"model.layers.1.mlp.experts.0.gate_proj", "model.layers.1.mlp.experts.0.down_proj",
	"model.layers.1.mlp.shared_experts.down_proj",
	"model.layers.1.fc1", "model.layers.1.fc2", "model.layers.1.self_attn.out_proj",
}

// add folds one entry into u.
func (u *Unquantized) add(e string) error {
	name := strings.TrimPrefix(e, "model.")
	switch {
	case e == "":
		return fmt.Errorf("%w: unquantized: an empty entry", ErrBadModel)
	case name == "self_attn":
		u.Attention = true
		return nil
	case reAlways.MatchString(name), reOutside.MatchString(name):
		return nil
	case strings.HasPrefix(e, "re:"):
		re, err := regexp.Compile(strings.TrimPrefix(e, "re:"))
		if err != nil {
			return fmt.Errorf("%w: unquantized: %q: %w", ErrBadModel, e, err)
		}
		if (re.MatchString("lm_head") || re.MatchString("model.layers.1.mlp.gate")) && !slices.ContainsFunc(projections, re.MatchString) {
			return nil
		}
		return fmt.Errorf("%w: unquantized: pattern %q: a pattern may name only lm_head or an MoE router gate; list layers as layers.N, layers.N.self_attn or layers.N.mlp", ErrBadModel, e)
	}
	for _, r := range []struct {
		re   *regexp.Regexp
		list *[]int
	}{{reLayer, &u.Layers}, {reLayerAttn, &u.AttentionLayers}, {reLayerMLP, &u.MLPLayers}} {
		m := r.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= maxLayers {
			return fmt.Errorf("%w: unquantized: %q: layer index out of range (0 to %d)", ErrBadModel, e, maxLayers-1)
		}
		*r.list = append(*r.list, n)
		return nil
	}
	return fmt.Errorf("%w: unquantized: %q is not modelled (want self_attn, layers.N, layers.N.self_attn, layers.N.mlp, lm_head or embed_tokens): only whole layers, attention blocks or MLPs can be kept in 16 bits", ErrBadModel, e)
}

// validate checks u against m's layers.
func (u Unquantized) validate(m *Model) error {
	dense := m.Layers
	if m.MoE != nil {
		dense = m.MoE.DenseLayers
	}
	for _, l := range slices.Concat(u.AttentionLayers, u.MLPLayers, u.Layers) {
		if l < 0 {
			return fmt.Errorf("%w: %s: unquantized: layer index %d is negative", ErrBadModel, m.Name, l)
		}
	}
	for _, l := range u.AttentionLayers {
		if l >= m.Layers {
			return fmt.Errorf("%w: %s: unquantized: layer %d's attention, but the model has %d layers", ErrBadModel, m.Name, l, m.Layers)
		}
	}
	for _, l := range slices.Concat(u.MLPLayers, u.Layers) {
		if l >= dense {
			if l < m.Layers {
				return fmt.Errorf("%w: %s: unquantized: layer %d is a mixture-of-experts layer (dense layers: 0 to %d); only dense layers' MLPs, or attention blocks, can be kept in 16 bits", ErrBadModel, m.Name, l, dense-1)
			}
			return fmt.Errorf("%w: %s: unquantized: layer %d, but the model has %d layers", ErrBadModel, m.Name, l, m.Layers)
		}
	}
	return nil
}

// attentionKept is the number of layers whose attention stays in 16 bits:
// each layer counted once, however
// often u names it (a hand-built u need not be in ParseUnquantized's
// normal form).
func (u Unquantized) attentionKept(layers int) int {
	if u.Attention {
		return layers
	}
	return distinct(u.AttentionLayers, u.Layers)
}

// mlpKept is the number of layers whose MLP stays in 16 bits, each
// counted once.
func (u Unquantized) mlpKept() int { return distinct(u.MLPLayers, u.Layers) }

// distinct is the number of different indices in lists.
func distinct(lists ...[]int) int {
	var all []int
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	return len(slices.Compact(all))
}

// Split16 is how many of a model's parameters are stored in 16 bits
// (BF16) rather than in its WeightDType.
type Split16 struct {
	// Params is every 16-bit parameter: the weights' memory is
	// size(Params − this, WeightDType) + 2 × this.
	Params int64
	// Read is the 16-bit share of the weights a step reads: all of Params
	// but the lookup-only tables (the embedding, read as lm_head when
	// tied; OPT's positions).
	Read int64
	// Linear is the 16-bit share of the projections and MLPs (lm_head
	// apart): what Unquantized keeps. Their GEMMs run at 16-bit speed.
	Linear int64
}

// Split16 is m's split: zero for a model in 16 bits or wider (all its
// weights are in WeightDType), else the embedding table (and OPT's
// position table), lm_head, the norms and what m.Unquantized names. A model whose dimensions
// EstimateParams rejects gives zero.
func (m *Model) Split16() Split16 {
	if m.WeightDType.Bits() >= 16 {
		return Split16{}
	}
	b, err := estimate(m)
	if err != nil {
		return Split16{}
	}
	var c calc
	u := m.Unquantized
	linear := c.add(mulInt64(&c, b.attn, u.attentionKept(m.Layers)), mulInt64(&c, b.mlp, u.mlpKept()))
	head := b.head
	if head == 0 {
		head = b.vocab // tied: lm_head reads the embedding table
	}
	s := Split16{
		Params: c.add(linear, b.norms, b.vocab, b.head, b.pos),
		Read:   c.add(linear, b.norms, head),
		Linear: linear,
	}
	if c.overflow {
		return Split16{}
	}
	s.Params = min(s.Params, m.Params)
	s.Read = min(s.Read, m.Params)
	s.Linear = min(s.Linear, m.Params)
	return s
}
