package scenario

import (
	"strings"
	"testing"
)

// TestEngineSettingsNameTheirField: a setting the engine cannot take on its
// own (a TP degree the model's heads do not split over, a utilization
// above 1, a negative limit, unquantized modules of 16-bit weights) is
// refused by Build naming the scenario file, the line and the YAML key.
// Before, each was "every run (6): bad config: tp: ..." from the runs,
// with neither file, line nor key (the review's item 1).
func TestEngineSettingsNameTheirField(t *testing.T) {
	requests := "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"tp 3", "tp: 3\n", `line 6: field "tp": bad tensor parallelism: llama-3.1-8b: 32 attention heads do not split over tp=3`},
		{"tp -1", "tp: -1\n", `line 6: field "tp": -1: want a number of GPUs, 1 or more`},
		{"utilization 1.5", "engine:\n  gpu_memory_utilization: 1.5\n", `line 7: field "engine.gpu_memory_utilization": 1.5: want the share of the GPU's memory`},
		{"utilization NaN", "engine:\n  gpu_memory_utilization: .nan\n", `line 7: field "engine.gpu_memory_utilization": NaN: want`},
		{"utilization -0.5", "engine: {gpu_memory_utilization: -0.5}\n", `line 6: field "engine.gpu_memory_utilization": -0.5: want`},
		{"max_seqs", "engine:\n  max_seqs: -3\n", `line 7: field "engine.max_seqs": -3: want a number of requests, 1 or more (absent or 0: 256)`},
		{"max_batch_tokens", "engine:\n  max_batch_tokens: -1\n", `line 7: field "engine.max_batch_tokens": -1: want a number of tokens, 1 or more (absent or 0: 8192)`},
		{"max_context", "engine:\n  max_context: -1\n", `line 7: field "engine.max_context": -1: want a number of tokens, 1 or more (absent or 0: the model's, 131072)`},
		{"max_tokens", "engine:\n  max_tokens: -1\n", `line 7: field "engine.max_tokens": -1: want a number of tokens`},
		{"unquantized of bf16", "unquantized: self_attn\n", `line 6: field "unquantized": self_attn names what quantized weights keep in 16 bits, but the weights are bf16: give weight_dtype (--weight-dtype) fp8, int8 or int4`},
		{"unquantized past the layers", "weight_dtype: fp8\nunquantized: layers.999\n", `line 7: field "unquantized": bad model: llama-3.1-8b: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := read(t, base+tc.yaml+requests)
			_, err := Build(s, nil)
			if want := "bad scenario: test.yaml: " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Build: %v\nwant %q...", err, want)
			}
			if _, err := EngineConfig(s); err == nil || !strings.HasPrefix(err.Error(), "bad scenario: test.yaml: "+tc.want) {
				t.Errorf("EngineConfig: %v", err)
			}
		})
	}
	// The same setting from a flag (Override): the field, and what is
	// wrong, for the caller to name its flag.
	s := read(t, base+"tp: 3\n"+requests)
	s.Override("tp")
	_, err := Build(s, nil)
	field, what, ok := FieldOf(err)
	if !ok || field != "tp" || !strings.HasPrefix(what.Error(), "bad tensor parallelism: ") {
		t.Errorf("FieldOf(%v) = %q, %v, %v", err, field, what, ok)
	}
}
