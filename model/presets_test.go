package model

import (
	"errors"
	"strings"
	"testing"
)

// TestPresetsValid checks every preset's invariants and the relations the
// published configs share: head dim × heads = hidden for every preset but
// MLA, GQA groups divide evenly, and each preset runs at TP 1, 2, 4 and 8.
func TestPresetsValid(t *testing.T) {
	for _, name := range PresetNames() {
		m := mustPreset(t, name)
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if m.Name != name {
			t.Errorf("%s: Name = %q", name, m.Name)
		}
		if m.MLA == nil && m.HeadDim*m.Heads != m.Hidden {
			t.Errorf("%s: HeadDim %d × Heads %d != Hidden %d", name, m.HeadDim, m.Heads, m.Hidden)
		}
		if m.Heads%m.KVHeads != 0 {
			t.Errorf("%s: Heads %d not a multiple of KVHeads %d", name, m.Heads, m.KVHeads)
		}
		for _, tp := range []int{1, 2, 4, 8} {
			if name == "qwen2.5-7b" && tp == 8 {
				continue // 28 heads do not split 8 ways
			}
			if err := m.ValidateTP(tp); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if est, err := EstimateParams(m); err != nil || est != m.Params {
			t.Errorf("%s: EstimateParams = %d, %v; Params = %d", name, est, err, m.Params)
		}
	}
}

func TestPresetLookup(t *testing.T) {
	m, err := Preset("  Llama-3-8B ")
	if err != nil || m.Name != "llama-3-8b" {
		t.Fatalf("Preset(Llama-3-8B) = %q, %v", m.Name, err)
	}
	_, err = Preset("gpt-5")
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "qwen2.5-7b") {
		t.Errorf("unknown preset: err = %v, want ErrUnknownModel listing the presets", err)
	}
	// The MLA and MoE structs are copies: changing one result leaves the next alone.
	a := mustPreset(t, "deepseek-v3")
	a.MLA.KVLoRARank = 1
	a.MoE.Experts = 1
	if b := mustPreset(t, "deepseek-v3"); b.MLA.KVLoRARank != 512 || b.MoE.Experts != 256 {
		t.Error("Preset shares MLA/MoE structs between calls")
	}
}

// TestPresetsMatchReader: the synthetic configs in testdata carry the same
// architecture as the presets, so reading them must give the same sizes.
func TestPresetsMatchReader(t *testing.T) {
	for file, preset := range map[string]string{
		"qwen2.5-7b.config.json":     "qwen2.5-7b",
		"llama-3-8b.synthetic.json":  "llama-3-8b",
		"opt-13b.synthetic.json":     "opt-13b",
		"deepseek-v3.synthetic.json": "deepseek-v3",
	} {
		got := readTestdata(t, file)
		want := mustPreset(t, preset)
		got.Name = want.Name
		if got.Params != want.Params || got.KVBytesPerToken(BF16, 1) != want.KVBytesPerToken(BF16, 1) ||
			got.WeightDType != want.WeightDType || got.MaxContext != want.MaxContext || got.ActiveParams() != want.ActiveParams() {
			t.Errorf("%s: read %+v\npreset %+v", file, got, want)
		}
	}
}

// TestKVInvariants checks the package Invariants on every preset: KV per
// token never grows with tp, MLA ignores tp, KV scales with the dtype's
// bits, and ActiveParams ≤ Params.
func TestKVInvariants(t *testing.T) {
	for _, name := range PresetNames() {
		m := mustPreset(t, name)
		prev := m.KVBytesPerToken(BF16, 1)
		for tp := 2; tp <= 64; tp *= 2 {
			kv := m.KVBytesPerToken(BF16, tp)
			if kv > prev || (m.MLA != nil && kv != prev) {
				t.Errorf("%s: KV at tp=%d is %d, at tp=%d %d", name, tp, kv, tp/2, prev)
			}
			prev = kv
		}
		if f32, f8 := m.KVBytesPerToken(FP32, 1), m.KVBytesPerToken(FP8E4M3, 1); f32 != 4*f8 {
			t.Errorf("%s: fp32 KV %d != 4 × fp8 KV %d", name, f32, f8)
		}
		if a := m.ActiveParams(); a <= 0 || a > m.Params {
			t.Errorf("%s: ActiveParams %d outside (0, %d]", name, a, m.Params)
		}
	}
}
