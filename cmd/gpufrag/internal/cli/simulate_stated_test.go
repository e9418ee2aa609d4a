package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A benchmark run whose model id names FP8 weights, replayed without
// --weight-dtype: simulate warns that calibrate replays it as FP8 and
// names the flag; with the flag, or a run that states nothing, no
// warning.
func TestSimulateBenchSetupWarning(t *testing.T) {
	fp8 := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps1.lens.json")
	args := []string{"simulate", "--trace", fp8, "--model", "llama-3.1-70b", "--gpu", "l40s-48g", "--tp", "4", "--kv", "paged:16", "--max-rows", "20", "--json"}
	const want = "states model_id neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic (fp8), which calibrate replays as --weight-dtype fp8_e4m3; " +
		"simulate replays bf16: give --weight-dtype fp8_e4m3 to replay the run as it ran"
	code, _, errs := run(t, "", args...)
	if code != 0 || !strings.Contains(errs, want) {
		t.Errorf("without --weight-dtype: exit %d, stderr %q, want %q", code, errs, want)
	}
	code, _, errs = run(t, "", append(args, "--weight-dtype", "fp8")...)
	if code != 0 || strings.Contains(errs, "calibrate replays") {
		t.Errorf("with --weight-dtype fp8: exit %d, stderr %q", code, errs)
	}
	bf16 := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-8b-tp1-qps1.lens.json")
	code, _, errs = run(t, "", "simulate", "--trace", bf16, "--model", "llama-3.1-8b", "--gpu", "l40s-48g", "--kv", "paged:16", "--max-rows", "20", "--json")
	if code != 0 || strings.Contains(errs, "calibrate replays") {
		t.Errorf("a BF16 run: exit %d, stderr %q", code, errs)
	}
}

// A replay of a benchmark file under another workload (--rate, even the
// run's own, --max-rows, --max-concurrency, a --duration that leaves
// requests unfinished) keeps the run's own figures, marked as not
// comparable, in --json and in the text; so does a cut file's, whose
// figures are the whole run's. The plain replay of a whole file, and a
// duration it finishes within, do not mark them.
func TestSimulateBenchNotComparable(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.json")
	n := 30
	lens := make([]int, n)
	for i := range lens {
		lens[i] = 64
	}
	doc := map[string]any{"backend": "vllm", "request_rate": 4, "num_prompts": n, "completed": n, "input_lens": lens, "output_lens": lens,
		"median_ttft_ms": 20, "output_throughput": 200}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(whole, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join("..", "..", "..", "..", "examples", "vllm_bench_qps16.json")
	for _, tc := range []struct {
		file  string
		extra []string
		want  string
	}{
		{whole, nil, ""},
		{whole, []string{"--rate", "4"}, "its arrivals are respaced to 4 requests/s (workload.trace.rate, --rate; the run's: 4)"},
		{whole, []string{"--rate", "8"}, "its arrivals are respaced to 8 requests/s"},
		{whole, []string{"--max-rows", "10"}, "20 of the run's requests are left out (workload.trace.max_rows, --max-rows)"},
		{whole, []string{"--max-concurrency", "4"}, "its client holds at most 4 requests in flight"},
		{whole, []string{"--duration", "10h"}, ""},
		{whole, []string{"--duration", "1s"}, "it stops at the scenario's duration (--duration) with requests unfinished"},
		{cut, nil, "the file's per-request arrays hold 20 of the run's 200 requests (a cut file), and its figures are the whole run's"},
	} {
		base := []string{"simulate", "--trace", tc.file, "--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16"}
		if tc.file == cut {
			base = []string{"simulate", "--trace", tc.file, "--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8", "--kv", "paged:16"}
		}
		code, out, errs := run(t, "", append(append(append([]string{}, base...), tc.extra...), "--json")...)
		var doc struct {
			Bench struct {
				NotComparable string `json:"not_comparable"`
			} `json:"bench"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("%s %v: exit %d: %s", filepath.Base(tc.file), tc.extra, code, errs)
		}
		if got := doc.Bench.NotComparable; tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s %v: not_comparable %q, want %q", filepath.Base(tc.file), tc.extra, got, tc.want)
		}
		code, out, _ = run(t, "", append(append([]string{}, base...), tc.extra...)...)
		text := strings.Join(strings.Fields(out), " ")
		marked := strings.Contains(text, "measured, another workload") && strings.Contains(text, "(not comparable with this replay: ")
		if code != 0 || marked != (tc.want != "") || tc.want == "" && !strings.Contains(text, "measured: the benchmark file's own figures, as its client computed them (whole.json)") {
			t.Errorf("%s %v: exit %d, the text marks the measured row %v, want %v", filepath.Base(tc.file), tc.extra, code, marked, tc.want != "")
		}
	}
}

// --seed does not draw a benchmark run's arrivals (--arrival-seed does):
// given alone with such a file, simulate says so.
func TestSimulateBenchSeedWarning(t *testing.T) {
	in := filepath.Join("..", "..", "..", "..", "examples", "vllm_bench_qps16.json")
	args := []string{"simulate", "--trace", in, "--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8", "--kv", "paged:16", "--json"}
	const want = "--seed 5 does not draw a benchmark run's arrivals: they are drawn from the run's own seed, 0; --arrival-seed N draws others"
	if code, _, errs := run(t, "", append(args, "--seed", "5")...); code != 0 || !strings.Contains(errs, want) {
		t.Errorf("--seed 5: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run(t, "", append(args, "--seed", "5", "--arrival-seed", "3")...); code != 0 || strings.Contains(errs, "does not draw") {
		t.Errorf("--seed 5 --arrival-seed 3: exit %d, stderr %q", code, errs)
	}
}

// A file with no measured figure (a cut copy of lengths only) cannot be
// fitted; the error says, metric by metric, why.
func TestCalibrateNothingFittable(t *testing.T) {
	in := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-8b-tp1-qps5.lens.json")
	code, _, errs := run(t, "", "calibrate", in, "--model", "llama-3.1-8b", "--gpu", "l40s-48g", "--max-evals", "1")
	for _, want := range []string{"no metric of the runs to fit to can be fitted:", in + ": median_ttft: the file does not give it",
		in + ": output_throughput: the file does not give it"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr %q; want %q", code, errs, want)
		}
	}
}

// An engine release the default engine (vLLM V1) never had: simulate and
// calibrate name the flag that picks the older engine; advise, which
// sweeps V1's settings only, says so; an SGLang file's calibrate, whose
// engine its harness gives, takes an SGLang release.
func TestEngineVersionHints(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"simulate", "--engine-version", "0.5.5"}, 2, "for an earlier release use engine vllm-v0 (engine.name vllm-v0, --engine vllm-v0)"},
		{[]string{"advise", "--trace", filepath.Join(root, "examples", "azure_conv.csv"), "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--engine-version", "0.5.5"},
			2, "--engine-version 0.5.5: advise sweeps the settings of vLLM's V1 engine, whose releases start at 0.8"},
		{[]string{"calibrate", filepath.Join(root, "workload", "testdata", "bench", "sglang_bench_details_synthetic.jsonl"), "--model", "llama-3.1-8b",
			"--gpu", "rtx4090-24g", "--engine-version", "0.4.0", "--max-evals", "1", "--json"}, 0, ""},
	} {
		code, _, errs := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// advise --run takes one run of a benchmark file of several and records
// it in the report's inputs; without it, the error names the flag.
func TestAdviseRun(t *testing.T) {
	in := filepath.Join("..", "..", "..", "..", "workload", "testdata", "bench", "sglang_bench_details_synthetic.jsonl")
	args := []string{"advise", "--trace", in, "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--kv", "paged:16", "--alloc", "caching", "--json"}
	if code, _, errs := run(t, "", args...); code != 1 || !strings.Contains(errs, "choose one (1 to 2)") || !strings.Contains(errs, "--run N") {
		t.Errorf("without --run: exit %d, stderr %q", code, errs)
	}
	code, out, errs := run(t, "", append(args, "--run", "1")...)
	var doc struct {
		Inputs struct {
			Trace struct {
				Run int `json:"run"`
			} `json:"trace"`
		} `json:"inputs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Inputs.Trace.Run != 1 {
		t.Errorf("--run 1: exit %d, inputs.trace.run %d: %s", code, doc.Inputs.Trace.Run, errs)
	}
	if code, _, errs := run(t, "", append(args, "--run", "-1")...); code != 2 || !strings.Contains(errs, "--run -1: want a run's number") {
		t.Errorf("--run -1: exit %d, stderr %q", code, errs)
	}
}

// simulate --profile takes a joint model file as calibrate's does: the
// embedded joint.yaml given as a file times the runs as the default does;
// a file of neither shape is refused saying what each looks like.
func TestSimulateJointProfileFile(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	args := []string{"simulate", "--trace", filepath.Join(root, "examples", "vllm_bench_qps16.json"), "--model", "llama-3.1-70b",
		"--gpu", "a100-40g", "--tp", "8", "--kv", "paged:16", "--json"}
	tpot := func(extra ...string) float64 {
		t.Helper()
		code, out, errs := run(t, "", append(append([]string{}, args...), extra...)...)
		var doc struct {
			Results []struct {
				TPOT struct{ P50 float64 } `json:"tpot_s"`
			} `json:"results"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Results) != 1 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		return doc.Results[0].TPOT.P50
	}
	if a, b := tpot(), tpot("--profile", filepath.Join(root, "sim", "profiles", "joint.yaml")); a != b || a == 0 {
		t.Errorf("TPOT p50 %v by default, %v with the joint model's file", a, b)
	}
	if a, b := tpot(), tpot("--profile", filepath.Join(root, "calib", "loso", "without-source-surajssd-llm-k8s.yaml")); a == b {
		t.Errorf("a leave-one-out model times the run as the default does (%v)", a)
	}
	bad := filepath.Join(t.TempDir(), "neither.yaml")
	if err := os.WriteFile(bad, []byte("foo: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", append(append([]string{}, args...), "--profile", bad)...); code == 0 || !strings.Contains(errs, "neither a profile") {
		t.Errorf("neither shape: exit %d, stderr %q", code, errs)
	}
}

// advise on a benchmark file whose client capped its requests in flight
// says that its rates are an open loop's.
func TestAdviseOpenLoopWarning(t *testing.T) {
	in := filepath.Join("..", "..", "..", "..", "workload", "testdata", "bench", "vllm_bench_detailed_synthetic.json")
	code, _, errs := run(t, "", "advise", "--trace", in, "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--kv", "paged:16", "--alloc", "caching", "--json")
	if want := "vllm_bench_detailed_synthetic.json: its client held at most 2 requests in flight (max_concurrency); advise sends the requests at each rate " +
		"it tries, with no such cap, so its rates are an open loop's"; code != 0 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if strings.Contains(errs, "names model") {
		t.Errorf("the run's model is the one advised for: stderr %q", errs)
	}
	// The same run advised for a 70B model: the run's id names another size.
	code, _, errs = run(t, "", "advise", "--trace", in, "--model", "llama-3.1-70b", "--gpu", "a100-80g", "--tp", "2", "--kv", "paged:16", "--alloc", "caching", "--json")
	if want := "names model meta-llama/Llama-3.1-8B-Instruct: 8B parameters, where llama-3.1-70b has 70.6B; advise sizes every candidate for --model llama-3.1-70b"; code != 0 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// A benchmark run of a 70B model replayed as another model: simulate says
// what the run's model id names and what it replays instead, with or
// without --model; the model the run served gives no warning.
func TestSimulateBenchModelMismatch(t *testing.T) {
	cut := filepath.Join("..", "..", "..", "..", "examples", "vllm_bench_qps16.json") // meta-llama/Llama-3.3-70B-Instruct
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--gpu", "h100-80g"}, "names model meta-llama/Llama-3.3-70B-Instruct: 70B parameters, where llama-3.1-8b has 8.03B; " +
			"simulate replays llama-3.1-8b, the scenario's model (no --model was given)"},
		{[]string{"--model", "qwen2.5-72b", "--gpu", "a100-40g", "--tp", "8"}, "names model meta-llama/Llama-3.3-70B-Instruct: a llama model, " +
			"where qwen2.5-72b is qwen2; simulate replays --model qwen2.5-72b"},
		{[]string{"--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8"}, ""},
	} {
		code, _, errs := run(t, "", append([]string{"simulate", "--trace", cut, "--kv", "paged:16", "--json"}, tc.flags...)...)
		if code != 0 || tc.want != "" && !strings.Contains(errs, tc.want) || tc.want == "" && strings.Contains(errs, "names model") {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.flags, code, errs, tc.want)
		}
	}
}

// An SGLang bench_serving run replayed without --engine: simulate says that
// calibrate replays it with SGLang's scheduler and names the flag; with
// --engine sglang, no warning.
func TestSimulateBenchSGLangEngine(t *testing.T) {
	in := filepath.Join("..", "..", "..", "..", "workload", "testdata", "bench", "sglang_bench_details_synthetic.jsonl")
	args := []string{"simulate", "--trace", in, "--run", "1", "--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--json"}
	const want = "sglang_bench_details_synthetic.jsonl is a run of SGLang's bench_serving, which calibrate replays with --engine sglang; " +
		"simulate replays vllm-v1: give --engine sglang"
	if code, _, errs := run(t, "", args...); code != 0 || !strings.Contains(errs, want) {
		t.Errorf("without --engine: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run(t, "", append(args, "--engine", "sglang")...); code != 0 || strings.Contains(errs, "bench_serving, which calibrate") {
		t.Errorf("with --engine sglang: exit %d, stderr %q", code, errs)
	}
}

// Run 2 of a file whose run 1 sent the same 12 prompt lengths in the same
// order (12 distinct lengths: 2^28.8 orders): simulate says calibrate
// replays it warm and names --warm-prompts; run 1, or run 2 with the flag,
// gets no such warning.
func TestSimulateBenchEarlierSamePrompts(t *testing.T) {
	in := filepath.Join(t.TempDir(), "two.jsonl")
	var lines []string
	for _, rate := range []float64{1, 4} {
		var lens, outs []int
		for i := range 12 {
			lens = append(lens, 100+7*i)
			outs = append(outs, 16)
		}
		doc := map[string]any{"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": rate, "num_prompts": 12,
			"completed": 12, "input_lens": lens, "output_lens": outs}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"simulate", "--trace", in, "--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--json"}
	const want = "run 2 of 2: run 1 of the file sent the same 12 prompt lengths in the same order (odds of 1 in 2^29 for unrelated prompts), " +
		"so a server with prefix caching on had these prompts cached, and calibrate replays this run warm; simulate replays it cold: give --warm-prompts"
	for _, tc := range []struct {
		extra []string
		warn  bool
	}{
		{[]string{"--run", "2"}, true},
		{[]string{"--run", "1"}, false},
		{[]string{"--run", "2", "--warm-prompts"}, false},
	} {
		code, _, errs := run(t, "", append(append([]string{}, args...), tc.extra...)...)
		if code != 0 || strings.Contains(errs, want) != tc.warn || !tc.warn && strings.Contains(errs, "calibrate replays this run warm") {
			t.Errorf("%v: exit %d, stderr %q; want the warning %v", tc.extra, code, errs, tc.warn)
		}
	}
}

// advise on an FP8 checkpoint's run: it warns that it sizes the candidates
// for BF16 weights and names --weight-dtype, which it now takes (and
// records in inputs.weight_dtype); with the flag, no warning.
func TestAdviseBenchWeightDType(t *testing.T) {
	fp8 := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps1.lens.json")
	args := []string{"advise", "--trace", fp8, "--max-rows", "40", "--model", "llama-3.1-70b", "--gpu", "l40s-48g", "--tp", "4", "--kv", "paged:16",
		"--alloc", "caching", "--gpu-memory-utilization", "0.9", "--bucket", "0", "--defrag", "off", "--max-num-batched-tokens", "8192",
		"--max-num-seqs", "256", "--prefix-caching", "on", "--json"}
	const want = "states model_id neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic (fp8), which calibrate replays as --weight-dtype fp8_e4m3; " +
		"advise replays bf16: give --weight-dtype fp8_e4m3"
	if code, _, errs := run(t, "", args...); code != 0 || !strings.Contains(errs, want) {
		t.Errorf("without --weight-dtype: exit %d, stderr %q", code, errs)
	}
	code, out, errs := run(t, "", append(args, "--weight-dtype", "fp8")...)
	// The deploy command serves the run's FP8 checkpoint, which needs no --quantization.
	if code != 0 || strings.Contains(errs, "calibrate replays") || !strings.Contains(out, `"weight_dtype": "fp8_e4m3"`) ||
		!strings.Contains(out, "vllm serve neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic --tensor-parallel-size 4") || strings.Contains(out, "--quantization") {
		t.Errorf("with --weight-dtype fp8: exit %d, stderr %q", code, errs)
	}
	// The model's own type changes nothing: no weight_dtype, no --dtype.
	code, out, _ = run(t, "", append(args, "--weight-dtype", "bf16")...)
	if code != 0 || strings.Contains(out, `"weight_dtype"`) || strings.Contains(out, "--dtype") {
		t.Errorf("with --weight-dtype bf16, the model's own: exit %d, weight_dtype or --dtype in the advice", code)
	}
}
