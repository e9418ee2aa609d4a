package human

import "testing"

func TestDidYouMean(t *testing.T) {
	gpus := []string{"a100-40g", "a100-80g", "h100-80g", "h200-141g"}
	models := []string{"llama-2-7b", "llama-3-8b", "llama-3.1-8b", "qwen2.5-7b"}
	for _, tc := range []struct {
		name  string
		known []string
		want  string
	}{
		{"h100", gpus, `; did you mean "h100-80g"?`},      // a prefix
		{"H100-80GB", gpus, `; did you mean "h100-80g"?`}, // case, one edit
		{"a100", gpus, `; did you mean "a100-40g" or "a100-80g"?`},
		{"llama3-8b", models, `; did you mean "llama-3-8b"?`},
		{"bestfi", []string{"bestfit", "random"}, `; did you mean "bestfit"?`},
		{"thresh", []string{"off", "threshold", "adaptive"}, `; did you mean "threshold"?`},
		{"mistral-7b", models, ""},
		{"x", gpus, ""},
		{"", gpus, ""},
		{"h100-80g", gpus, ""}, // known: nothing to suggest
	} {
		if got := DidYouMean(tc.name, tc.known); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"llama3-8b", "llama-3-8b", 1}, {"µs", "ms", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
