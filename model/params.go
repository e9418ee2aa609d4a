// Parameter counts from the architecture. See package model for the overview.

package model

import (
	"fmt"
	"math"
)

// breakdown is EstimateParams's result with the parts ActiveParams needs.
type breakdown struct {
	total    int64
	lookup   int64 // tables used only by lookup: untied input embedding, OPT positions
	inactive int64 // routed-expert weights a token does not visit

	// The parts a quantized model keeps in 16 bits (Model.Split16).
	vocab int64 // the token embedding table, Vocab × H (lm_head's too when tied)
	head  int64 // an untied lm_head (0 when tied)
	pos   int64 // OPT's learned position table
	norms int64 // every norm's weights (and OPT's biases of them)
	attn  int64 // one layer's attention projections
	mlp   int64 // one dense layer's MLP
}

// calc accumulates int64 products and sums and remembers overflow, so the
// formulas below read as formulas.
type calc struct{ overflow bool }

func (c *calc) mul(xs ...int) int64 {
	p := int64(1)
	for _, x := range xs {
		v := int64(x)
		if v != 0 && (p > math.MaxInt64/v || p < 0 || v < 0) {
			c.overflow = true
			return 0
		}
		p *= v
	}
	return p
}

func (c *calc) add(xs ...int64) int64 {
	var s int64
	for _, x := range xs {
		if x > 0 && s > math.MaxInt64-x {
			c.overflow = true
			return 0
		}
		s += x
	}
	return s
}

// EstimateParams counts m's parameters from its dimensions (m.Params is
// ignored). With H = Hidden, L = Layers, q = Heads × HeadDim,
// kv = KVHeads × HeadDim:
//
//	attention, GQA/MHA: H·q + 2·H·kv + q·H         (+ q + 2·kv biases if QKVBias)
//	attention, MLA:     H·qr + qr + qr·Heads·(nope+rope)      (H·Heads·(nope+rope) if qr = 0)
//	                    + H·(kvr+rope) + kvr + kvr·Heads·(nope+v) + Heads·v·H
//	MLP, gated:         3·H·Intermediate
//	MLP, MoE layer:     (Experts + SharedExperts)·3·H·ExpertIntermediate + H·Experts
//	norms:              2·H per layer, H final
//	embeddings:         Vocab·H, and again for lm_head unless tied
//
// OPT differs: attention 4·H² + 4·H (biases), MLP 2·H·I + I + H, LayerNorms
// with bias 4·H per layer and 2·H final, tied embeddings, and learned
// positions (MaxContext + 2)·H (OPT offsets positions by 2). Small terms are
// left out: Qwen3's per-head q/k norms (2·HeadDim per layer), DeepSeek-V3's
// router bias (Experts per layer), OPT's word_embed_proj_dim projections
// (absent when it equals hidden_size, as for OPT ≥ 1.3B) and the MTP module
// DeepSeek-V3 ships for speculative decoding. Checked against published
// totals in the tests: Llama-3-8B 8.03e9, Qwen2.5-7B 7.61e9, DeepSeek-V3
// 671e9 total / 36.6e9 active. Errors wrap ErrBadModel.
func EstimateParams(m Model) (int64, error) {
	b, err := estimate(&m)
	return b.total, err
}

func estimate(m *Model) (breakdown, error) {
	var c calc
	H, L := m.Hidden, m.Layers
	var b breakdown
	if m.Family == "opt" {
		attn := c.add(c.mul(4, H, H), c.mul(4, H))
		mlp := c.add(c.mul(2, H, m.Intermediate), int64(m.Intermediate), int64(H))
		layer := c.add(attn, mlp, c.mul(4, H))
		pos := c.mul(m.MaxContext+2, H)
		b.total = c.add(mulInt64(&c, layer, L), c.mul(m.Vocab, H), pos, c.mul(2, H))
		b.lookup = pos
		b.vocab, b.attn, b.mlp, b.pos = c.mul(m.Vocab, H), attn, mlp, pos
		b.norms = c.add(c.mul(4, H, L), c.mul(2, H))
	} else {
		var attn int64
		if a := m.MLA; a != nil {
			qk := a.QKNopeHeadDim + a.QKRopeHeadDim
			if a.QLoRARank > 0 {
				attn = c.add(c.mul(H, a.QLoRARank), int64(a.QLoRARank), c.mul(a.QLoRARank, m.Heads, qk))
			} else {
				attn = c.mul(H, m.Heads, qk)
			}
			attn = c.add(attn, c.mul(H, a.KVLoRARank+a.QKRopeHeadDim), int64(a.KVLoRARank),
				c.mul(a.KVLoRARank, m.Heads, a.QKNopeHeadDim+a.VHeadDim), c.mul(m.Heads, a.VHeadDim, H))
		} else {
			q, kv := c.mul(m.Heads, m.HeadDim), c.mul(m.KVHeads, m.HeadDim)
			attn = c.add(mulInt64(&c, q, 2*H), mulInt64(&c, kv, 2*H))
			if m.QKVBias {
				attn = c.add(attn, q, 2*kv)
			}
		}
		perLayer := c.add(attn, c.mul(2, H))
		dense := c.mul(3, H, m.Intermediate)
		denseLayers, moeLayers := L, 0
		var moeMLP int64
		if e := m.MoE; e != nil {
			denseLayers, moeLayers = e.DenseLayers, L-e.DenseLayers
			expert := c.mul(3, H, e.ExpertIntermediate)
			moeMLP = c.add(mulInt64(&c, expert, e.Experts+e.SharedExperts), c.mul(H, e.Experts))
			b.inactive = mulInt64(&c, expert, c.mul(moeLayers, e.Experts-e.ExpertsPerToken))
		}
		emb := c.mul(m.Vocab, H)
		head := emb
		if m.TiedEmbeddings {
			head = 0
		} else {
			b.lookup = emb
		}
		b.total = c.add(mulInt64(&c, perLayer, L), mulInt64(&c, dense, denseLayers),
			mulInt64(&c, moeMLP, moeLayers), emb, head, int64(H))
		b.vocab, b.head, b.attn, b.mlp = emb, head, attn, dense
		b.norms = c.add(c.mul(2, H, L), int64(H))
	}
	if c.overflow || b.total > maxParams {
		return breakdown{}, fmt.Errorf("%w: %s: parameter count overflows %d", ErrBadModel, m.Name, int64(maxParams))
	}
	return b, nil
}

// mulInt64 is a × n with overflow recorded in c.
func mulInt64[T ~int | ~int64](c *calc, a int64, n T) int64 {
	m := int64(n)
	if a == 0 || m == 0 {
		return 0
	}
	if a < 0 || m < 0 || a > math.MaxInt64/m {
		c.overflow = true
		return 0
	}
	return a * m
}
