package calib

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestRunStated: what one run states, key by key; the weights' type from
// quantization where its name tells it, else the model id, else dtype
// (vLLM's --dtype is the activations'); "auto" states nothing.
func TestRunStated(t *testing.T) {
	arg := func(kv ...string) []workload.BenchArg {
		var out []workload.BenchArg
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, workload.BenchArg{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		model  string
		server []workload.BenchArg
		want   []string // flag=value <- said
		warn   string
	}{
		{"none", "meta-llama/Llama-3.1-8B-Instruct", nil, nil, ""},
		{"sweep", "m", arg("tensor_parallel_size", "2", "kv_cache_dtype", "fp8", "max_model_len", "8192", "max_num_seqs", "4",
			"max_num_batched_tokens", "2048", "enable_chunked_prefill", "True", "enable_prefix_caching", "false", "gpu_memory_utilization", "0.90"),
			[]string{"tp=2 <- tensor_parallel_size 2", "kv-dtype=fp8_e4m3 <- kv_cache_dtype fp8", "max-context=8192 <- max_model_len 8192",
				"max-seqs=4 <- max_num_seqs 4", "max-batch-tokens=2048 <- max_num_batched_tokens 2048", "chunked-prefill=true <- enable_chunked_prefill True",
				"prefix-caching=false <- enable_prefix_caching false", "gpu-memory-utilization=0.9 <- gpu_memory_utilization 0.90"}, ""},
		{"auto", "m", arg("dtype", "auto", "kv_cache_dtype", "auto"), nil, ""},
		{"dtype", "m", arg("dtype", "float16"), []string{"weight-dtype=fp16 <- dtype float16"}, ""},
		{"model id over dtype", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", arg("dtype", "bfloat16"),
			[]string{"weight-dtype=fp8_e4m3 <- model_id neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic (fp8)"}, ""},
		{"quantization over all", "x/Llama-3.1-8B-Instruct-FP8", arg("dtype", "bfloat16", "quantization", "awq"),
			[]string{"weight-dtype=int4 <- quantization awq"}, ""},
		{"unknown quantization", "x/Llama-3.1-8B-Instruct-FP8", arg("dtype", "bfloat16", "quantization", "gptq"), nil,
			"states quantization gptq, whose weight type calibrate cannot tell from its name: give --weight-dtype"},
		{"two types in the id", "x/Llama-FP8-INT4", nil, nil, ""},
	} {
		r := &workload.BenchResult{Model: tc.model, Server: tc.server, Run: 1, Runs: 1}
		got, warns, err := runStated(r, "f.json")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var s []string
		for _, st := range got {
			s = append(s, st.Flag+"="+st.Value+" <- "+st.Said)
			if st.Where != "f.json" {
				t.Errorf("%s: where %q", tc.name, st.Where)
			}
		}
		if !reflect.DeepEqual(s, tc.want) {
			t.Errorf("%s: stated %q, want %q", tc.name, s, tc.want)
		}
		if w := strings.Join(warns, "\n"); tc.warn == "" && w != "" || !strings.Contains(w, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.name, w, tc.warn)
		}
	}
	for _, bad := range [][]string{{"max_num_seqs", "0"}, {"tensor_parallel_size", "two"}, {"gpu_memory_utilization", "1.5"},
		{"enable_prefix_caching", "maybe"}, {"kv_cache_dtype", "int4"}, {"dtype", "fp4"}} {
		_, _, err := runStated(&workload.BenchResult{Server: arg(bad...)}, "f.json")
		if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "f.json: "+bad[0]+" "+bad[1]+": ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestResolveStated: a given flag wins over the files (warned where they
// differ); otherwise the files must agree.
func TestResolveStated(t *testing.T) {
	st := []Stated{{"max-seqs", "64", "a.json", "max_num_seqs 64"}, {"tp", "2", "a.json", "tensor_parallel_size 2"},
		{"max-seqs", "64", "b.json", "max_num_seqs 64"}, {"tp", "4", "b.json", "tensor_parallel_size 4"}}
	none := func(string) (string, bool) { return "", false }
	if _, _, err := ResolveStated(st, none); !errors.Is(err, ErrSetup) ||
		!strings.Contains(err.Error(), "a.json states tensor_parallel_size 2 and b.json states tensor_parallel_size 4") || !strings.Contains(err.Error(), "give --tp") {
		t.Errorf("disagreeing files: %v", err)
	}
	apply, warns, err := ResolveStated(st, func(f string) (string, bool) { return "4", f == "tp" })
	if err != nil || !reflect.DeepEqual(apply, st[:1]) || len(warns) != 1 || warns[0] != "--tp 4 overrides what a.json states tensor_parallel_size 2" {
		t.Errorf("--tp 4: apply %+v, warns %q, %v", apply, warns, err)
	}
}

// TestStatedSetupModelIDs: runs that name different models are refused
// where they disagree on the weights' quantized type as each resolves it
// (an FP8 checkpoint beside its original: one weight type would be wrong
// for one of them), and warned about otherwise (online FP8 quantization
// beside an FP8 checkpoint; a 16-bit dtype beside none); runs that name no
// model say nothing.
func TestStatedSetupModelIDs(t *testing.T) {
	file := func(name string, ids ...string) *File {
		f := &File{Name: name}
		for i, id := range ids {
			f.Runs = append(f.Runs, &workload.BenchResult{Model: id, Run: i + 1, Runs: len(ids)})
		}
		return f
	}
	const base, fp8 = "meta-llama/Llama-3.1-70B-Instruct", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic"
	server := func(f *File, key, value string) *File {
		for _, r := range f.Runs {
			r.Server = append(r.Server, workload.BenchArg{Key: key, Value: value})
		}
		return f
	}
	quant := func(f *File, v string) *File { return server(f, "quantization", v) }
	dtype := func(f *File, v string) *File { return server(f, "dtype", v) }
	for _, tc := range []struct {
		name      string
		files     []*File
		err, warn string
	}{
		{"same", []*File{file("a.json", base), file("b.json", base)}, "", ""},
		{"unnamed", []*File{file("a.json", base), file("b.json", "")}, "", ""},
		{"fp8 beside bf16", []*File{file("a.json", base), file("b.json", fp8)},
			"a.json names model " + base + " and b.json names " + fp8 + ", whose weights differ (not quantized, fp8_e4m3): " +
				"the runs of one calibration must share one setup; calibrate them apart", ""},
		{"within a file", []*File{file("s.jsonl", fp8, fp8, "x/Llama-3.1-70B-Instruct-AWQ")},
			"s.jsonl: run 1 of 3 names model " + fp8 + " and s.jsonl: run 3 of 3 names x/Llama-3.1-70B-Instruct-AWQ, whose weights differ (fp8_e4m3, int4)", ""},
		{"online FP8 beside an FP8 checkpoint", []*File{quant(file("a.json", base), "fp8"), file("b.json", fp8)}, "",
			"a.json names model " + base + " and b.json names " + fp8 + ": calibrate replays every run as the one model --model gives"},
		{"BF16 stated beside none", []*File{dtype(file("a.json", base), "bfloat16"), file("b.json", "x/Llama-3.1-70B-Instruct")}, "",
			"a.json names model " + base + " and b.json names x/Llama-3.1-70B-Instruct"},
		{"another model", []*File{file("a.json", base), file("b.json", "Qwen/Qwen2.5-7B-Instruct"), file("c.json", "other")}, "",
			"a.json names model " + base + " and b.json names Qwen/Qwen2.5-7B-Instruct: calibrate replays every run as the one model --model gives"},
	} {
		_, warns, err := StatedSetup(tc.files)
		switch {
		case tc.err != "":
			if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		w := strings.Join(warns, "\n")
		if tc.warn == "" && w != "" || !strings.Contains(w, tc.warn) || strings.Count(w, "calibrate replays every run") > 1 {
			t.Errorf("%s: warnings %q, want %q once", tc.name, w, tc.warn)
		}
	}
}
