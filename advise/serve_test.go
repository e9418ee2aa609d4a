package advise

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// The deploy command sets what the run's inputs need besides the swept
// settings: a 70B model on 8 GPUs with an fp8 KV cache and an 8K context
// does not start from `vllm serve ID --block-size 16 ...` alone (it did).
func TestDeployInputs(t *testing.T) {
	s := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, MaxBatchTokens: 8192, MaxSeqs: 256}
	in := Inputs{Model: "llama-3.1-70b", ModelID: "meta-llama/Llama-3.1-70B", TP: 8, KVDType: "fp8", MaxContext: 8192}
	d := NewDeploy(s, in)
	want := "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 8 --max-model-len 8192 --kv-cache-dtype fp8 --block-size 16 " +
		"--gpu-memory-utilization 0.9 --max-num-batched-tokens 8192 --max-num-seqs 256"
	if d.Command != want || len(d.Notes) != 0 || len(d.Env) != 0 {
		t.Errorf("deploy %+v\nwant command %s", d, want)
	}
	for _, c := range []struct{ dtype, flag, note string }{
		{"fp8_e5m2", "--kv-cache-dtype fp8_e5m2", ""},
		{"int8", "", "has no int8"},
		{"bf16", "", "--dtype bfloat16"},
	} {
		d := NewDeploy(s, Inputs{Model: "x", ModelID: "m/x", TP: 1, KVDType: c.dtype})
		notes := strings.Join(d.Notes, "\n")
		if c.flag != "" && !strings.Contains(d.Command, c.flag) || c.flag == "" && strings.Contains(d.Command, "--kv-cache-dtype") ||
			!strings.Contains(notes, c.note) || strings.Contains(d.Command, "--tensor-parallel-size") {
			t.Errorf("kv dtype %s: %+v", c.dtype, d)
		}
	}
}

// --weight-dtype in the deploy command: fp8 from a checkpoint that is not
// one is vLLM's online quantization; an fp8 checkpoint's id needs nothing;
// int4 asks for a quantized checkpoint; a 16-bit type is --dtype.
func TestDeployWeightDType(t *testing.T) {
	s := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, MaxBatchTokens: 8192, MaxSeqs: 256}
	for _, c := range []struct{ id, dtype, flag, note string }{
		{"meta-llama/Llama-3.1-70B", "fp8_e4m3", "--quantization fp8", ""},
		{"neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "fp8_e4m3", "", ""},
		{"meta-llama/Llama-3.1-70B", "int4", "", "serve a checkpoint quantized to int4"},
		{"meta-llama/Llama-3.1-70B", "fp16", "--dtype float16", ""},
	} {
		d := NewDeploy(s, Inputs{Model: "llama-3.1-70b", ModelID: c.id, TP: 4, WeightDType: c.dtype})
		notes := strings.Join(d.Notes, "\n")
		if c.flag != "" && !strings.Contains(d.Command, c.flag) || c.flag == "" && (strings.Contains(d.Command, "--quantization") || strings.Contains(d.Command, "--dtype")) ||
			c.note != "" && !strings.Contains(notes, c.note) {
			t.Errorf("%s as %s: %+v", c.id, c.dtype, d)
		}
	}
}

// A 16-bit KV type other than the weights' --dtype: one note that vLLM
// cannot serve the pair, not a second --dtype to add.
func TestDeployKVAndWeightTypes(t *testing.T) {
	s := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, MaxBatchTokens: 8192, MaxSeqs: 256}
	d := NewDeploy(s, Inputs{Model: "llama-3.1-8b", ModelID: "meta-llama/Llama-3.1-8B", TP: 1, WeightDType: "bf16", KVDType: "fp16"})
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(d.Command, "--dtype bfloat16") || !strings.Contains(notes, "KV cache in fp16 with bf16 weights: vLLM keeps a 16-bit KV cache in --dtype's type (bfloat16)") ||
		strings.Contains(notes, "add --dtype float16") {
		t.Errorf("%+v", d)
	}
}

// A benchmark run's model id is served where it agrees with --model; one
// of another size or family, or a local path, leaves the preset's.
func TestRunModelID(t *testing.T) {
	m, err := model.Preset("llama-3.1-70b")
	if err != nil {
		t.Fatal(err)
	}
	preset := "meta-llama/Llama-3.1-70B"
	for _, c := range []struct{ run, want string }{
		{"meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"},
		{"meta-llama/Llama-3.1-8B-Instruct", preset},
		{"Qwen/Qwen2.5-72B", preset},
		{"/models/llama-70b", preset},
		{"llama", preset},               // a --served-model-name alias: no org/name
		{"my-org/served-alias", preset}, // names neither family nor size
		{"", preset},
	} {
		if got := RunModelID(preset, c.run, m); got != c.want {
			t.Errorf("RunModelID(%q) = %q; want %q", c.run, got, c.want)
		}
	}
}

// A deploy read back from JSON prints the lines it was made with, for
// contiguous KV (a sentence and the environment's line) as for vLLM.
func TestDeployJSONLines(t *testing.T) {
	for _, s := range []Settings{
		{KV: kv("paged:16"), Alloc: al("caching:expandable_segments:True"), GPUMemoryUtilization: 0.9},
		{KV: kv("contiguous-grow"), Alloc: al("caching"), GPUMemoryUtilization: 0.9},
	} {
		d := NewDeploy(s, Inputs{ModelID: "m/x", Model: "x", TP: 2})
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back Deploy
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(back.Lines(), "\n"), strings.Join(d.Lines(), "\n"); got != want {
			t.Errorf("%s: read back %s\n%s\nwant\n%s", s, b, got, want)
		}
	}
}
