package model

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func mustPreset(t *testing.T, name string) Model {
	t.Helper()
	m, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestKVBytesPerToken(t *testing.T) {
	tests := []struct {
		model string
		kv    DType
		tp    int
		want  int64
	}{
		// 2 × 32 layers × 8 KV heads × 128 head dim × 2 B = 131,072 B = 128 KiB.
		{"llama-3-8b", BF16, 1, 131072},
		// fp8 halves it: 2 × 32 × 8 × 128 × 1 = 65,536.
		{"llama-3-8b", FP8E4M3, 1, 65536},
		{"llama-3-8b", INT8, 1, 65536},
		// fp32: 2 × 32 × 8 × 128 × 4 = 262,144.
		{"llama-3-8b", FP32, 1, 262144},
		// 2 × 80 × 8 × 128 × 2 = 327,680.
		{"llama-3-70b", BF16, 1, 327680},
		// ÷ TP while KV heads split: 8/2 = 4 heads → 163,840; 8/8 = 1 head → 40,960.
		{"llama-3-70b", BF16, 2, 163840},
		{"llama-3-70b", BF16, 8, 40960},
		// TP 16 > 8 KV heads: heads are replicated, still 1 per GPU → 40,960.
		{"llama-3-70b", BF16, 16, 40960},
		// fp8, TP 4: 2 × 80 × 2 × 128 × 1 = 40,960.
		{"llama-3-70b", FP8E4M3, 4, 40960},
		// 2 × 126 × 8 × 128 × 2 = 516,096.
		{"llama-3-405b", BF16, 1, 516096},
		{"llama-3-405b", BF16, 8, 64512},
		// MHA: 2 × 40 × 40 × 128 × 2 = 819,200 (800 KiB).
		{"llama-2-13b", FP16, 1, 819200},
		{"opt-13b", FP16, 1, 819200},
		{"opt-13b", FP16, 4, 204800},
		// 2 × 28 × 4 × 128 × 2 = 57,344 (the shared config's README says the same).
		{"qwen2.5-7b", BF16, 1, 57344},
		// 28 heads, 4 KV heads, TP 4 → 1 KV head: 2 × 28 × 1 × 128 × 2 = 14,336.
		{"qwen2.5-7b", BF16, 4, 14336},
		// 2 × 48 × 8 × 128 × 2 = 196,608.
		{"qwen2.5-14b", BF16, 1, 196608},
		// 2 × 80 × 8 × 128 × 2 = 327,680.
		{"qwen2.5-72b", BF16, 1, 327680},
		// MLA: 61 × (512 + 64) × 2 = 70,272, the same on every TP rank.
		{"deepseek-v3", BF16, 1, 70272},
		{"deepseek-v3", BF16, 8, 70272},
		{"deepseek-v3", FP8E4M3, 8, 35136},
	}
	for _, tt := range tests {
		m := mustPreset(t, tt.model)
		if err := m.ValidateTP(tt.tp); err != nil {
			t.Errorf("%s tp=%d: %v", tt.model, tt.tp, err)
		}
		if got := m.KVBytesPerToken(tt.kv, tt.tp); got != tt.want {
			t.Errorf("%s KVBytesPerToken(%v, tp=%d) = %d, want %d", tt.model, tt.kv, tt.tp, got, tt.want)
		}
	}
}

func TestValidateTP(t *testing.T) {
	m := mustPreset(t, "qwen2.5-7b") // 28 heads, 4 KV heads
	// 1, 2, 4 split the KV heads; 28 replicates them 7 ways.
	for _, tp := range []int{1, 2, 4, 28} {
		if err := m.ValidateTP(tp); err != nil {
			t.Errorf("tp=%d: %v", tp, err)
		}
	}
	// 0 and -1 are not degrees; 3 and 8 do not divide 28 heads; 7 and 14
	// divide the heads but neither split nor evenly replicate 4 KV heads.
	for _, tp := range []int{0, -1, 3, 8, 7, 14} {
		if err := m.ValidateTP(tp); !errors.Is(err, ErrBadTP) {
			t.Errorf("tp=%d: err = %v, want ErrBadTP", tp, err)
		}
	}
	// 7 divides 28 heads but neither divides nor is a multiple of 4 KV heads.
	if err := m.ValidateTP(7); !errors.Is(err, ErrBadTP) || !strings.Contains(err.Error(), "KV heads") {
		t.Errorf("tp=7: err = %v, want the KV-head error", err)
	}
	ds := mustPreset(t, "deepseek-v3")
	if err := ds.ValidateTP(16); err != nil {
		t.Errorf("deepseek-v3 tp=16: %v", err)
	}
}

func TestKVBytesPerTokenPanicsOnBadTP(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for tp=0")
		}
	}()
	m := mustPreset(t, "llama-3-8b")
	m.KVBytesPerToken(BF16, 0)
}

// TestParamsMatchPublished compares EstimateParams with the totals the model
// cards publish. Tolerance 2%: the cards round to 2–3 digits.
func TestParamsMatchPublished(t *testing.T) {
	tests := []struct {
		model     string
		published float64
	}{
		{"llama-3-8b", 8.03e9},    // Meta-Llama-3-8B card: 8.03B
		{"llama-3-70b", 70.6e9},   // Meta-Llama-3-70B card: 70.6B
		{"llama-3-405b", 405.9e9}, // Llama-3.1-405B: 405.85B in the safetensors index (card: 405B)
		{"llama-2-7b", 6.74e9},    // Llama-2-7b-hf: 6,738,415,616 in its safetensors index
		{"llama-2-13b", 13.0e9},   // Llama 2 paper: 13B (the checkpoint holds 13,015,864,320)
		{"llama-2-70b", 68.98e9},  // Llama-2-70b-hf: 68,976,648,192 in its safetensors index
		{"opt-13b", 13.0e9},       // OPT paper: 13B
		{"qwen2.5-7b", 7.61e9},    // Qwen2.5-7B-Instruct card: 7.61B
		{"qwen2.5-14b", 14.7e9},   // Qwen2.5-14B-Instruct card: 14.7B
		{"qwen2.5-72b", 72.7e9},   // Qwen2.5-72B-Instruct card: 72.7B
		{"qwen3-8b", 8.2e9},       // Qwen3-8B card: 8.2B (6.95B without embeddings)
		{"deepseek-v3", 671e9},    // DeepSeek-V3 report: 671B without the MTP module
	}
	for _, tt := range tests {
		m := mustPreset(t, tt.model)
		if rel := math.Abs(float64(m.Params)-tt.published) / tt.published; rel > 0.02 {
			t.Errorf("%s: Params = %d, published %.4g (off by %.2f%%)", tt.model, m.Params, tt.published, 100*rel)
		}
	}
	// Counts known to the parameter (the sums of the checkpoints' tensor
	// shapes) check the formulas exactly, biases and norms included.
	for name, want := range map[string]int64{
		"llama-2-13b": 13015864320,
		"llama-2-7b":  6738415616,
		"llama-2-70b": 68976648192,
		"llama-3-8b":  8030261248,
		"llama-3-70b": 70553706496,
		"qwen2.5-7b":  7615616512,
	} {
		if m := mustPreset(t, name); m.Params != want {
			t.Errorf("%s: Params = %d, want %d", name, m.Params, want)
		}
	}
}

func TestActiveParams(t *testing.T) {
	ds := mustPreset(t, "deepseek-v3")
	// DeepSeek: 36.6B activated per token, counting the 0.9B output head
	// but not the input embedding (tenstorrent/tt-metal README_WEIGHTS.md,
	// quoting the DeepSeek-V3 release).
	if got, want := float64(ds.ActiveParams()), 36.6e9; math.Abs(got-want)/want > 0.01 {
		t.Errorf("deepseek-v3 ActiveParams = %.4g, want %.4g ±1%%", got, want)
	}
	l := mustPreset(t, "llama-3-8b")
	// Dense, untied: all but the 128,256 × 4,096 input embedding.
	if got, want := l.ActiveParams(), l.Params-128256*4096; got != want {
		t.Errorf("llama-3-8b ActiveParams = %d, want %d", got, want)
	}
	if got := l.FLOPsPerToken(); got != 2*float64(l.ActiveParams()) {
		t.Errorf("FLOPsPerToken = %g, want 2 × ActiveParams", got)
	}
	o := mustPreset(t, "opt-13b")
	// Tied embeddings are the lm_head, so only the 2,050 × 5,120 positions are lookup-only.
	if got, want := o.ActiveParams(), o.Params-2050*5120; got != want {
		t.Errorf("opt-13b ActiveParams = %d, want %d", got, want)
	}
}

func TestWeightBytes(t *testing.T) {
	tests := []struct {
		model string
		dt    DType // overrides WeightDType when set
		tp    int
		want  int64
	}{
		{"llama-2-13b", 0, 1, 2 * 13015864320}, // fp16: 2 B/param = 26,031,728,640
		{"llama-2-13b", 0, 2, 13015864320},
		// Quantized, the embedding, lm_head (32,000 × 5,120 each) and the
		// norms (2 × 5,120 × 40 + 5,120) stay in 16 bits: 328,094,720.
		{"llama-2-13b", INT4, 1, (13015864320-328094720)/2 + 2*328094720},
		{"llama-2-13b", INT8, 4, (13015864320 - 328094720 + 2*328094720) / 4},
		{"llama-2-13b", 0, 3, (2*13015864320 + 2) / 3}, // ceil
	}
	for _, tt := range tests {
		m := mustPreset(t, tt.model)
		if tt.dt != 0 {
			m.WeightDType = tt.dt
		}
		if got := m.WeightBytes(tt.tp); got != tt.want {
			t.Errorf("%s %v tp=%d: WeightBytes = %d, want %d", tt.model, m.WeightDType, tt.tp, got, tt.want)
		}
	}
	// DeepSeek-V3 ships fp8 weights: one byte per parameter, but for its
	// embedding and lm_head (129,280 × 7,168 each) and norms (2 × 7,168 ×
	// 61 + 7,168), two.
	if ds := mustPreset(t, "deepseek-v3"); ds.WeightBytes(1) != ds.Params+2*129280*7168+2*7168*61+7168 {
		t.Errorf("deepseek-v3 fp8 WeightBytes = %d, want Params + 16-bit parts = %d", ds.WeightBytes(1), ds.Params+2*129280*7168+2*7168*61+7168)
	}
}

func TestValidateRejects(t *testing.T) {
	base := mustPreset(t, "llama-3-8b")
	tests := []struct {
		name   string
		mutate func(*Model)
		want   string
	}{
		{"zero layers", func(m *Model) { m.Layers = 0 }, "Layers"},
		{"negative heads", func(m *Model) { m.Heads = -1 }, "Heads"},
		{"kv not divisor", func(m *Model) { m.KVHeads = 5 }, "KVHeads"},
		{"huge hidden", func(m *Model) { m.Hidden = 1 << 30 }, "Hidden"},
		{"no dtype", func(m *Model) { m.WeightDType = 0 }, "WeightDType"},
		{"no params", func(m *Model) { m.Params = 0 }, "Params"},
		{"mla zero rank", func(m *Model) { m.MLA = &MLA{QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128} }, "MLA.KVLoRARank"},
		{"moe top-k > experts", func(m *Model) {
			m.MoE = &MoE{Experts: 4, ExpertsPerToken: 5, ExpertIntermediate: 8}
		}, "MoE.ExpertsPerToken"},
		{"moe dense > layers", func(m *Model) {
			m.MoE = &MoE{Experts: 4, ExpertsPerToken: 2, ExpertIntermediate: 8, DenseLayers: 33}
		}, "MoE.DenseLayers"},
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("base: %v", err)
	}
	for _, tt := range tests {
		m := base
		tt.mutate(&m)
		err := m.Validate()
		if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrBadModel naming %s", tt.name, err, tt.want)
		}
	}
}
