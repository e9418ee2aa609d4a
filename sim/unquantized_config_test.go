package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// TestConfigUnquantized: Config.Unquantized replaces the model's list and
// moves weight bytes to 16 bits for quantized weights; given for 16-bit
// weights, where it can change nothing, it is an error naming the field
// rather than a silent no-op.
func TestConfigUnquantized(t *testing.T) {
	m, g := presetPair(t, "llama-3.1-8b", "h100-80g")
	c := DefaultConfig(m, g)
	c.Unquantized = model.Unquantized{Attention: true}
	if _, err := c.validate(); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "unquantized") || !strings.Contains(err.Error(), "bf16") {
		t.Errorf("bf16 weights with unquantized self_attn: %v, want ErrBadConfig naming unquantized and bf16", err)
	}
	c.WeightDType = model.FP8E4M3
	v, err := c.validate()
	if err != nil {
		t.Fatal(err)
	}
	all := m
	all.WeightDType = model.FP8E4M3
	if w, lo, hi := v.Model.WeightBytes(1), all.WeightBytes(1), m.WeightBytes(1); !(lo < w && w < hi) || v.Model.Unquantized.String() != "self_attn" {
		t.Errorf("fp8 with 16-bit attention: %d B of weights (unquantized %q), want between all-FP8 %d and BF16 %d", w, v.Model.Unquantized, lo, hi)
	}
}
