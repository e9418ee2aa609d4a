package model_test

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

func TestIDSizeAndFamily(t *testing.T) {
	for _, tc := range []struct {
		id     string
		size   float64
		family string
	}{
		{"meta-llama/Llama-3.3-70B-Instruct", 70, "llama"},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", 8, "llama"},
		{"neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", 70, "llama"},
		{"Qwen/Qwen2.5-0.5B-Instruct", 0.5, "qwen"},
		{"Qwen/Qwen3-30B-A3B", 30, "qwen"},                     // A3B is the active count, not a size word
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 0, "mixtral"}, // 8x7B states no one size
		{"deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 8, ""},    // two families
		{"facebook/opt-13b", 13, "opt"},
		{"my-org/llama-8b-optimized", 8, "llama"}, // "optimized" is not OPT
		{"llama-8b-70b-merge", 0, "llama"},        // two sizes
		{"deepseek-ai/DeepSeek-V3", 0, "deepseek"},
		{"m", 0, ""},
	} {
		size, ok := model.IDSize(tc.id)
		if size != tc.size || ok != (tc.size != 0) {
			t.Errorf("IDSize(%q) = %v, %v; want %v", tc.id, size, ok, tc.size)
		}
		fam, ok := model.IDFamily(tc.id)
		if fam != tc.family || ok != (tc.family != "") {
			t.Errorf("IDFamily(%q) = %q, %v; want %q", tc.id, fam, ok, tc.family)
		}
	}
}

func TestIDMismatch(t *testing.T) {
	preset := func(name string) model.Model {
		m, err := model.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		id, model string
		want      []string // all in the reason; none: agree
	}{
		{"meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b", nil},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b", nil},
		{"Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b", nil},   // 7.6B parameters
		{"meta-llama/Llama-2-7b-hf", "llama-3.1-8b", nil}, // sizes within the tolerance
		{"facebook/opt-13b", "opt-13b", nil},
		{"my-finetune", "llama-3.1-8b", nil}, // says nothing
		// Llama's architecture under another family's name (model_type llama).
		{"deepseek-ai/deepseek-coder-6.7b-instruct", "llama-2-7b", nil},
		{"tiiuae/Falcon3-7B-Instruct", "llama-3.1-8b", nil},
		{"deepseek-ai/DeepSeek-V3", "llama-3.1-8b", nil}, // no size stated, and a llama could be one
		{"meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-8b", []string{"70B parameters, where llama-3.1-8b has 8.03B"}},
		{"Qwen/Qwen2.5-72B-Instruct", "llama-3.1-70b", []string{"a qwen model, where llama-3.1-70b is llama"}},
		{"Qwen/Qwen2.5-7B-Instruct", "llama-3.1-70b", []string{"a qwen model", "7B parameters, where llama-3.1-70b has 70.6B"}},
	} {
		got := model.IDMismatch(tc.id, preset(tc.model))
		if len(tc.want) == 0 && got != "" || len(tc.want) > 0 && got == "" {
			t.Errorf("IDMismatch(%q, %s) = %q; want %q", tc.id, tc.model, got, tc.want)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("IDMismatch(%q, %s) = %q; want it to say %q", tc.id, tc.model, got, w)
			}
		}
	}
}

func TestIDAgrees(t *testing.T) {
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{
		"meta-llama/Llama-3.1-8B-Instruct": true,
		"org/llama-finetune":               true, // names the family
		"llama":                            true,
		"served-alias":                     false, // states nothing
		"meta-llama/Llama-3.3-70B":         false,
		"Qwen/Qwen2.5-7B":                  false,
	} {
		if got := model.IDAgrees(id, m); got != want {
			t.Errorf("IDAgrees(%q) = %v, want %v", id, got, want)
		}
	}
}
