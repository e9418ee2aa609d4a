package model

import (
	"errors"
	"strings"
	"testing"
)

func TestParseUnquantized(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"self_attn", "self_attn"},
		{"model.layers.0,model.layers.125,lm_head,self_attn", "self_attn,layers.0,layers.125"},
		// Per-layer attention entries, repeats, a layer kept whole that
		// also names its attention, entries that stay 16-bit anyway.
		{"layers.3.self_attn.q_proj, layers.3.self_attn.k_proj,model.layers.1.self_attn,layers.1,embed_tokens,model.norm,model.layers.2.mlp.gate", "layers.3.self_attn,layers.1"},
		{"re:.*lm_head", ""},
		{"re:.*mlp.gate$,layers.7", "layers.7"},
		// MLPs: a layer whose attention and MLP are both named is kept
		// whole; under self_attn every named MLP's layer is; modules
		// outside the text decoder have no effect.
		{"model.layers.0.self_attn,model.layers.0.mlp,model.layers.1.mlp,model.layers.3.mlp,layers.3,multi_modal_projector,model.visual.blocks.0", "layers.1.mlp,layers.0,layers.3"},
		{"self_attn,layers.2.mlp", "self_attn,layers.2"},
		{"layers.5.mlp,layers.4.self_attn", "layers.4.self_attn,layers.5.mlp"},
	}
	for _, tt := range tests {
		u, err := ParseUnquantized(tt.in)
		if err != nil {
			t.Errorf("ParseUnquantized(%q): %v", tt.in, err)
			continue
		}
		if got := u.String(); got != tt.want {
			t.Errorf("ParseUnquantized(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// String round-trips.
		if v, err := ParseUnquantized(u.String()); err != nil || v.String() != u.String() {
			t.Errorf("round trip of %q: %q, %v", u.String(), v.String(), err)
		}
	}
	for _, bad := range []string{"layers.3.mlp.down_proj", "layers.3.mlp.experts", "vision", "re:.*down_proj", "re:(", "layers.x", "layers.99999999999999999999", "self_attn,,lm_head",
		// A pattern that names lm_head or a router and projections too
		// would keep those projections in 16 bits: not modelled, so not
		// to be dropped as if it named lm_head alone.
		"re:.*", "re:model.layers.*", "re:.*mlp.gate", "re:.*(lm_head|self_attn.*)"} {
		if _, err := ParseUnquantized(bad); !errors.Is(err, ErrBadModel) {
			t.Errorf("ParseUnquantized(%q): err %v, want ErrBadModel", bad, err)
		}
	}
}

// Meta's Llama-3.1-405B-FP8 keeps every self_attn and layers 0 and 125 in
// BF16. Its weights are the FP8 part at one byte a parameter plus the rest
// at two, the parts counted from the dimensions by hand here.
func TestSplit16Llama405BFP8(t *testing.T) {
	m := mustPreset(t, "llama-3.1-405b")
	m.WeightDType = FP8E4M3
	m.Unquantized = Unquantized{Attention: true, Layers: []int{0, 125}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	const (
		H, L, V  = 16384, 126, 128256
		attn     = 2*H*128*128 + 2*H*8*128 // q, o; k, v
		mlp      = 3 * H * 53248
		norms    = 2*H*L + H
		emb      = V * H
		linear16 = L*attn + 2*mlp
		params16 = linear16 + norms + 2*emb
		read16   = linear16 + norms + emb
	)
	got := m.Split16()
	if got.Linear != linear16 || got.Params != params16 || got.Read != read16 {
		t.Errorf("Split16 = %+v, want linear %d, params %d, read %d", got, int64(linear16), int64(params16), int64(read16))
	}
	if w, want := m.WeightBytes(1), (m.Params-params16)+2*params16; w != want {
		t.Errorf("WeightBytes = %d, want %d (FP8 part %d + 2 × %d)", w, want, m.Params-params16, int64(params16))
	}
	// About a fifth of the parameters stay in 16 bits: 487 GB, against
	// 406 GB were every weight FP8.
	if gb := float64(m.WeightBytes(1)) / 1e9; gb < 480 || gb > 495 {
		t.Errorf("WeightBytes = %.1f GB, want about 487", gb)
	}
	// In BF16 nothing is split.
	m.WeightDType = BF16
	if s := m.Split16(); s != (Split16{}) || m.WeightBytes(1) != 2*m.Params {
		t.Errorf("bf16: Split16 %+v, WeightBytes %d", s, m.WeightBytes(1))
	}
}

// TestSplit16MLP: layer 1's MLP of Llama-3.1-8B (3 × 4,096 × 14,336 =
// 176,160,768 parameters) and layer 2's attention (41,943,040) kept in 16
// bits, counted once however the list names them.
func TestSplit16MLP(t *testing.T) {
	m := mustPreset(t, "llama-3.1-8b")
	m.WeightDType = INT4
	base := m.Split16()
	for _, u := range []Unquantized{
		{MLPLayers: []int{1}, AttentionLayers: []int{2}},
		{MLPLayers: []int{1, 1}, AttentionLayers: []int{2, 2}},
	} {
		m.Unquantized = u
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := m.Split16(); got.Linear != 176_160_768+41_943_040 || got.Params != base.Params+got.Linear || got.Read != base.Read+got.Linear {
			t.Errorf("%v: Split16 %+v (base %+v)", u, got, base)
		}
	}
	ds := mustPreset(t, "deepseek-v3")
	ds.Unquantized = Unquantized{MLPLayers: []int{3}}
	if err := ds.Validate(); !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "mixture-of-experts layer") {
		t.Errorf("deepseek-v3 MoE layer 3's MLP: %v", err)
	}
}

func TestUnquantizedValidate(t *testing.T) {
	m := mustPreset(t, "llama-3.1-8b")
	m.Unquantized = Unquantized{Layers: []int{32}}
	if err := m.Validate(); !errors.Is(err, ErrBadModel) {
		t.Errorf("layer 32 of 32: %v, want ErrBadModel", err)
	}
	m.Unquantized = Unquantized{AttentionLayers: []int{40}}
	if err := m.Validate(); !errors.Is(err, ErrBadModel) {
		t.Errorf("attention of layer 40 of 32: %v, want ErrBadModel", err)
	}
	ds := mustPreset(t, "deepseek-v3")
	ds.Unquantized = Unquantized{Layers: []int{2}} // 3 dense layers: 0-2
	if err := ds.Validate(); err != nil {
		t.Errorf("deepseek-v3 dense layer 2: %v", err)
	}
	ds.Unquantized = Unquantized{Layers: []int{3}}
	if err := ds.Validate(); !errors.Is(err, ErrBadModel) {
		t.Errorf("deepseek-v3 MoE layer 3: %v, want ErrBadModel", err)
	}
}

// FuzzParseUnquantized: any string either parses, and then its String
// parses back to the same value, or is an ErrBadModel error; never a panic.
func FuzzParseUnquantized(f *testing.F) {
	for _, s := range []string{"", "self_attn", "model.layers.0,model.layers.125,lm_head,self_attn", "layers.3.self_attn.q_proj",
		"re:.*lm_head", "re:(", "layers.1.mlp.down_proj", ",", "layers.-1", "layers.01,layers.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUnquantized(s)
		if err != nil {
			if !errors.Is(err, ErrBadModel) {
				t.Fatalf("%q: %v, not ErrBadModel", s, err)
			}
			return
		}
		v, err := ParseUnquantized(u.String())
		if err != nil || v.String() != u.String() {
			t.Fatalf("%q: String %q parses to %q, %v", s, u.String(), v.String(), err)
		}
	})
}

// TestSplit16ListsAsGiven: an Unquantized built by hand (sim.Config's
// field, a Model literal) need not be in ParseUnquantized's normal form. A
// layer named twice, or named whole and by its attention, is one layer's
// weights, not two; a negative index is an error, not an extra layer.
func TestSplit16ListsAsGiven(t *testing.T) {
	m := mustPreset(t, "llama-3.1-8b")
	m.WeightDType = FP8E4M3
	m.Unquantized = Unquantized{Layers: []int{0}}
	want := m.Split16()
	for _, u := range []Unquantized{
		{Layers: []int{0, 0}},
		{Layers: []int{0}, AttentionLayers: []int{0}},
		{Layers: []int{0}, AttentionLayers: []int{0, 0}},
	} {
		m.Unquantized = u
		if err := m.Validate(); err != nil {
			t.Errorf("%+v: %v", u, err)
		}
		if got := m.Split16(); got != want {
			t.Errorf("%+v: Split16 %+v, want layer 0's once: %+v", u, got, want)
		}
	}
	m.Unquantized = Unquantized{AttentionLayers: []int{1, 1}}
	one := Unquantized{AttentionLayers: []int{1}}
	mm := m
	mm.Unquantized = one
	if got, w := m.Split16(), mm.Split16(); got != w {
		t.Errorf("layer 1's attention twice: Split16 %+v, want %+v", got, w)
	}
	for _, u := range []Unquantized{{Layers: []int{-1}}, {AttentionLayers: []int{-3}}} {
		m.Unquantized = u
		if err := m.Validate(); !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "unquantized: ") {
			t.Errorf("%+v: %v, want ErrBadModel naming unquantized", u, err)
		}
	}
}

// TestSplit16OPTPositions: OPT's learned positions are an embedding table
// (vLLM's OPTLearnedPositionalEmbedding, an nn.Embedding, not a linear
// layer), kept in 16 bits as the token embedding is; a step only gathers
// rows of it, so it is not in Read.
func TestSplit16OPTPositions(t *testing.T) {
	m := mustPreset(t, "opt-13b")
	m.WeightDType = INT8
	const (
		H, L, V, ctx = 5120, 40, 50272, 2048
		pos          = (ctx + 2) * H
		norms        = 4*H*L + 2*H
		emb          = V * H // tied: lm_head reads it
	)
	got := m.Split16()
	if got.Params != emb+norms+pos || got.Read != emb+norms || got.Linear != 0 {
		t.Errorf("opt-13b int8: Split16 %+v, want params %d (embedding, positions, norms), read %d", got, int64(emb+norms+pos), int64(emb+norms))
	}
	if w, want := m.WeightBytes(1), m.Params+emb+norms+pos; w != want {
		t.Errorf("opt-13b int8: WeightBytes %d, want %d", w, int64(want))
	}
}
