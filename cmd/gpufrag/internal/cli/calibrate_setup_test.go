package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
)

// writeSweepRun writes a vllm bench serve --save-result --save-detailed
// file of a concurrency sweep's run: n requests of in prompt tokens (a
// random dataset at range ratio 0 when every entry is the same) and out
// output tokens, all sent at once under max_concurrency conc, with TTFTs
// and gaps of a server that computed every prompt. extra holds more
// top-level keys (a sweep's serve parameters, --metadata).
func writeSweepRun(t *testing.T, dir, name, date string, conc int, in []int, out int, extra map[string]any) string {
	t.Helper()
	n := len(in)
	var ttfts []float64
	var itls [][]float64
	outs, total := make([]int, n), 0
	for i := range in {
		ttfts = append(ttfts, 0.08+0.001*float64(conc))
		gaps := make([]float64, out-1)
		for k := range gaps {
			gaps[k] = 0.010 + 0.0002*float64(conc)
		}
		itls = append(itls, gaps)
		outs[i] = out
		total += in[i]
	}
	dur := float64(n) / float64(conc) * (0.08 + float64(out)*0.011)
	doc := map[string]any{"date": date, "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
		"tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": n, "request_rate": "inf", "burstiness": 1.0,
		"max_concurrency": conc, "duration": dur, "completed": n, "total_input_tokens": total, "total_output_tokens": n * out,
		"output_throughput": float64(n*out) / dur, "input_lens": in, "output_lens": outs, "ttfts": ttfts, "itls": itls,
		"errors": make([]string, n)}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func fixedLens(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// calibrate8B is a short calibration of Llama-3.1-8B on one H100.
var calibrate8B = []string{"--model", "llama-3.1-8b", "--gpu", "h100-80g", "--max-evals", "5", "--parallel", "1"}

// calibrateJSON runs calibrate with args and --json and returns the report.
func calibrateJSON(t *testing.T, args ...string) (*calib.FitReport, string) {
	t.Helper()
	code, stdout, stderr := run(t, "", append(append([]string{"calibrate", "--json"}, args...), calibrate8B...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep calib.FitReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	var doc any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if p := nullAt(doc, "$"); p != "" {
		t.Errorf("calibrate --json: %s is null (docs/json.md: no field is ever null)", p)
	}
	return &rep, stderr
}

// TestCalibrateFixedLengthSweep is issue 24's case: a concurrency sweep of
// fixed-length random prompts (--random-input-len 1024, range ratio 0)
// has the same input lengths in the same order on every run, which says
// nothing of whether the prompts were the same; --warm-prompts auto
// replays every run cold and says why, in the JSON and on stderr. Runs of
// varying lengths that match in order are still replayed warm.
func TestCalibrateFixedLengthSweep(t *testing.T) {
	dir := t.TempDir()
	c8 := writeSweepRun(t, dir, "c8.json", "20251101-100000", 8, fixedLens(32, 1024), 16, nil)
	c32 := writeSweepRun(t, dir, "c32.json", "20251101-101000", 32, fixedLens(32, 1024), 16, nil)
	rep, stderr := calibrateJSON(t, c8, "--holdout", c32)
	for _, r := range rep.Runs {
		if r.WarmPrompts || !strings.HasPrefix(r.WarmReason, "replayed cold") {
			t.Errorf("%s: warm %v, reason %q", r.File, r.WarmPrompts, r.WarmReason)
		}
	}
	if r := rep.Runs[1].WarmReason; !strings.Contains(r, "they are all 1024 tokens") || !strings.Contains(r, "--warm-prompts all") {
		t.Errorf("the held-out run's reason does not say the lengths are fixed: %q", r)
	}
	if !strings.Contains(stderr, "c32.json: replayed cold, although "+c8+" sent the same 32 prompt lengths") {
		t.Errorf("stderr does not say why c32 is cold:\n%s", stderr)
	}

	// The same runs with prompts of varying lengths: c32 repeats c8's.
	var varying []int
	for i := range 32 {
		varying = append(varying, 200+(i*397)%900)
	}
	v8 := writeSweepRun(t, dir, "v8.json", "20251101-100000", 8, varying, 16, nil)
	v32 := writeSweepRun(t, dir, "v32.json", "20251101-101000", 32, varying, 16, nil)
	rep, _ = calibrateJSON(t, v8, "--holdout", v32)
	if r := rep.Runs[1]; !r.WarmPrompts || !strings.Contains(r.WarmReason, "sent the same 32 prompt lengths in the same order") {
		t.Errorf("varying lengths: warm %v, reason %q", r.WarmPrompts, r.WarmReason)
	}
	if r := rep.Runs[0]; r.WarmPrompts || !strings.Contains(r.WarmReason, "no earlier run") {
		t.Errorf("the first run: warm %v, reason %q", r.WarmPrompts, r.WarmReason)
	}
}

// TestCalibrateSetupFlags: calibrate takes the setup flags simulate takes,
// checks them the same way, replays with them and reports them.
func TestCalibrateSetupFlags(t *testing.T) {
	dir := t.TempDir()
	f := writeSweepRun(t, dir, "c8.json", "20251101-100000", 8, fixedLens(16, 512), 16, nil)
	rep, _ := calibrateJSON(t, f, "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--max-context", "8192", "--max-seqs", "64",
		"--max-batch-tokens", "2048", "--chunked-prefill=false", "--prefix-caching=false", "--gpu-memory-utilization", "0.85",
		"--engine", "vllm-v0")
	want := calib.SetupReport{WeightDType: "fp8_e4m3", KVDType: "fp8_e4m3", MaxContext: 8192, MaxBatchTokens: 2048, MaxSeqs: 64,
		GPUMemoryUtilization: 0.85, FromFiles: []calib.Stated{}}
	if !reflect.DeepEqual(rep.Setup, want) || rep.Engine != "vllm-v0" || rep.TP != 1 {
		t.Errorf("setup %+v, engine %s, tp %d; want %+v", rep.Setup, rep.Engine, rep.TP, want)
	}
	if r := rep.Runs[0].WarmReason; !strings.Contains(r, "prefix caching off") {
		t.Errorf("reason %q", r)
	}
	// vLLM V0's default, as simulate's: chunked prefill off up to a 32K context.
	rep, _ = calibrateJSON(t, f, "--engine", "vllm-v0", "--max-context", "8192")
	if rep.Setup.ChunkedPrefill || !rep.Setup.PrefixCaching || rep.Setup.WeightDType != "bf16" || rep.Setup.MaxSeqs != 256 {
		t.Errorf("vllm-v0 defaults: %+v", rep.Setup)
	}
	// vLLM 0.6's multi-step scheduling: replayed and reported, and the
	// decode steps' host time spread over the steps makes TPOT fall.
	one, _ := calibrateJSON(t, f, "--engine", "vllm-v0", "--engine-version", "0.6.0", "--max-context", "8192",
		"--params", "overhead.step_ns", "--max-evals", "1")
	ten, _ := calibrateJSON(t, f, "--engine", "vllm-v0", "--engine-version", "0.6.0", "--max-context", "8192",
		"--params", "overhead.step_ns", "--max-evals", "1", "--num-scheduler-steps", "10")
	if ten.Setup.SchedulerSteps != 10 || one.Setup.SchedulerSteps != 0 || !strings.Contains(ten.Setup.String(), "10 scheduler steps") {
		t.Errorf("scheduler steps in the report: %d and %d (%s)", one.Setup.SchedulerSteps, ten.Setup.SchedulerSteps, ten.Setup)
	}
	// 1 is off, as 0: the report leaves it out (num_scheduler_steps is
	// present only above 1).
	if off, _ := calibrateJSON(t, f, "--engine", "vllm-v0", "--engine-version", "0.6.0", "--max-context", "8192",
		"--params", "overhead.step_ns", "--max-evals", "1", "--num-scheduler-steps", "1"); off.Setup.SchedulerSteps != 0 {
		t.Errorf("--num-scheduler-steps 1: the report has num_scheduler_steps %d, want it left out", off.Setup.SchedulerSteps)
	}
	// FP8 weights halve the bytes a decode step reads: TPOT falls.
	bf16, _ := calibrateJSON(t, f, "--params", "overhead.step_ns", "--max-evals", "1")
	fp8, _ := calibrateJSON(t, f, "--params", "overhead.step_ns", "--max-evals", "1", "--weight-dtype", "fp8")
	tpot := func(r *calib.FitReport) float64 {
		for _, m := range r.Runs[0].Metrics {
			if m.Metric == calib.MedianTPOT && m.Before != nil {
				return *m.Before
			}
		}
		t.Fatal("no simulated median TPOT")
		return 0
	}
	if a, b := tpot(one), tpot(ten); !(b < a) {
		t.Errorf("median TPOT before the fit: 1 scheduler step %.4g s, 10 steps %.4g s; want 10 below", a, b)
	}
	if a, b := tpot(bf16), tpot(fp8); !(b < 0.8*a) {
		t.Errorf("median TPOT before the fit: bf16 %.4g s, fp8 %.4g s; want fp8 well below", a, b)
	}
	// Keeping every layer's attention in 16 bits reads more bytes a step
	// than all-FP8 and fewer than BF16, and the report says so.
	part, _ := calibrateJSON(t, f, "--params", "overhead.step_ns", "--max-evals", "1", "--weight-dtype", "fp8", "--unquantized", "self_attn")
	if a, b, c := tpot(bf16), tpot(part), tpot(fp8); !(c < b && b < a) || part.Setup.Unquantized != "self_attn" {
		t.Errorf("median TPOT before the fit: bf16 %.4g s, fp8 with 16-bit attention %.4g s, fp8 %.4g s; want them in that order (unquantized %q)",
			a, b, c, part.Setup.Unquantized)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--weight-dtype", "fp4"}, `--weight-dtype "fp4": want bf16, fp16, fp8, int8 or int4`},
		{[]string{"--kv-dtype", "fp9"}, "--kv-dtype"},
		{[]string{"--max-context", "0"}, "--max-context 0: want a positive number"},
		{[]string{"--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization 1.5: want a share in (0, 1]"},
		{[]string{"--tp", "0"}, "--tp 0: want at least 1"},
		{[]string{"--tp", "3"}, "--tp 3 with --model llama-3.1-8b"},
		{[]string{"--mixed-chunk"}, "--mixed-chunk is SGLang's --enable-mixed-chunk: it needs --engine sglang"},
		{[]string{"--num-scheduler-steps", "8"}, "--num-scheduler-steps is vLLM V0's multi-step scheduling: it needs --engine vllm-v0"},
		{[]string{"--engine", "trt"}, `--engine "trt": want vllm-v1, vllm-v0 or sglang`},
		{[]string{"--warm-prompts", "all", "--prefix-caching=false"}, "--warm-prompts all puts the prompts in the prefix cache: it needs prefix caching"},
	} {
		code, _, stderr := run(t, "", append(append([]string{"calibrate", f}, calibrate8B...), tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestCalibrateStatedSetup: what the files state of the setup (a sweep's
// serve parameters, --metadata, the model id's weight type) is replayed
// where no flag says otherwise, and listed in the report; a flag overrides
// it with a warning naming both; runs that state different setups, or a
// value no flag takes, are refused naming the file and the key.
func TestCalibrateStatedSetup(t *testing.T) {
	dir := t.TempDir()
	lens := fixedLens(16, 512)
	sweep := map[string]any{"max_num_seqs": 64, "enable_prefix_caching": false, "tensor_parallel_size": "1",
		"kv_cache_dtype": "auto", "model_id": "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic"}
	a := writeSweepRun(t, dir, "a.json", "20251101-100000", 8, lens, 16, sweep)
	b := writeSweepRun(t, dir, "b.json", "20251101-101000", 16, lens, 16, sweep)
	rep, _ := calibrateJSON(t, a, "--holdout", b)
	if s := rep.Setup; s.MaxSeqs != 64 || s.PrefixCaching || s.WeightDType != "fp8_e4m3" || s.KVDType != "bf16" || rep.TP != 1 {
		t.Errorf("setup %+v, tp %d", s, rep.TP)
	}
	var got []string
	for _, st := range rep.Setup.FromFiles {
		got = append(got, st.Flag+"="+st.Value+" <- "+st.Said)
	}
	want := []string{"tp=1 <- tensor_parallel_size 1", "max-seqs=64 <- max_num_seqs 64", "prefix-caching=false <- enable_prefix_caching false",
		"weight-dtype=fp8_e4m3 <- model_id neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic (fp8)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from_files %q, want %q", got, want)
	}
	code, stdout, _ := run(t, "", append([]string{"calibrate", a}, calibrate8B...)...)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(stdout), " "), "From the files: --tp 1 ("+a+" states tensor_parallel_size 1);") {
		t.Errorf("the text report does not list the files' settings (exit %d):\n%s", code, stdout)
	}

	// A flag overrides the files.
	rep, stderr := calibrateJSON(t, a, "--max-seqs", "32", "--weight-dtype", "bf16")
	if rep.Setup.MaxSeqs != 32 || rep.Setup.WeightDType != "bf16" || !strings.Contains(stderr, "--max-seqs 32 overrides what "+a+" states max_num_seqs 64") ||
		!strings.Contains(stderr, "--weight-dtype bf16 overrides what "+a+" states model_id") {
		t.Errorf("override: setup %+v, stderr:\n%s", rep.Setup, stderr)
	}

	// Runs that disagree, and values no flag takes.
	c := writeSweepRun(t, dir, "c.json", "20251101-102000", 16, lens, 16, map[string]any{"max_num_seqs": 128, "model_id": sweep["model_id"]})
	orig := writeSweepRun(t, dir, "orig.json", "20251101-102000", 16, lens, 16, map[string]any{"max_num_seqs": 64})
	bad := writeSweepRun(t, dir, "bad.json", "20251101-102000", 16, lens, 16, map[string]any{"gpu_memory_utilization": "1.5"})
	tp := writeSweepRun(t, dir, "tp.json", "20251101-102000", 16, lens, 16, map[string]any{"tensor_parallel_size": 3})
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{a, "--holdout", c}, a + " states max_num_seqs 64 and " + c + " states max_num_seqs 128: the runs of one calibration must share one setup"},
		{[]string{bad}, bad + ": gpu_memory_utilization 1.5: want a share in (0, 1]"},
		// The FP8 checkpoint's run beside its BF16 original's: one weight
		// type would be wrong for one of them, whatever the flags.
		{[]string{a, "--holdout", orig, "--max-seqs", "64"}, a + " names model neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic and " + orig +
			" names meta-llama/Llama-3.1-8B-Instruct, whose weights differ (fp8_e4m3, not quantized): the runs of one calibration must share one setup"},
		{[]string{tp}, "with the setup the files state (" + tp + " states tensor_parallel_size 3): --tp 3 with --model llama-3.1-8b"},
	} {
		code, _, stderr := run(t, "", append(append([]string{"calibrate"}, tt.args...), calibrate8B...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 with %q", tt.args, code, stderr, tt.want)
		}
	}
	// A run of a 70B model calibrated as the 8B: a warning naming both.
	big := writeSweepRun(t, dir, "big.json", "20251101-102000", 16, lens, 16, map[string]any{"model_id": "meta-llama/Llama-3.3-70B-Instruct"})
	if _, stderr := calibrateJSON(t, big); !strings.Contains(stderr, big+" names model meta-llama/Llama-3.3-70B-Instruct: 70B parameters, "+
		"where llama-3.1-8b has 8.03B; calibrate replays every run as --model llama-3.1-8b") {
		t.Errorf("a 70B run calibrated as llama-3.1-8b: stderr %q", stderr)
	}
	if _, stderr := calibrateJSON(t, a); strings.Contains(stderr, "names model") {
		t.Errorf("an 8B run calibrated as llama-3.1-8b: stderr %q", stderr)
	}
	// Given, the flag settles the disagreement.
	if code, _, stderr := run(t, "", append([]string{"calibrate", a, "--holdout", c, "--max-seqs", "64"}, calibrate8B...)...); code != 0 {
		t.Errorf("--max-seqs over disagreeing files: exit %d: %s", code, stderr)
	}
}

// TestCalibrateSGLangHarnessChunk: SGLang's bench_serving files replay
// under SGLang's chunked_prefill_size for the GPU (2,048 on an RTX 4090,
// scenario.EngineConfig) whether the engine is given (--engine sglang) or
// told by the files' harness: the same files, the same setup.
func TestCalibrateSGLangHarnessChunk(t *testing.T) {
	in := benchFixture("sglang_bench_details_synthetic.jsonl")
	for _, extra := range [][]string{nil, {"--engine", "sglang"}} {
		args := append([]string{"calibrate", in, "--model", "llama-3.1-8b", "--gpu", "rtx4090-24g", "--max-evals", "1", "--json"}, extra...)
		code, stdout, stderr := run(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		var rep calib.FitReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v: bad JSON: %v", extra, err)
		}
		if rep.Engine != "sglang" || rep.Setup.MaxBatchTokens != 2048 {
			t.Errorf("%v: engine %s, max_batch_tokens %d; want sglang, 2048", extra, rep.Engine, rep.Setup.MaxBatchTokens)
		}
	}
}

// TestCalibrateJointStart: --profile takes a joint step-time model too
// (sim/profiles/joint.yaml, calib/loso's leave-one-out models) and starts
// from its profile for the runs' GPU, engine and release: the embedded
// joint model given as a file reproduces the default start's report
// figure for figure, a leave-one-out model starts elsewhere, and the
// report names the start.
func TestCalibrateJointStart(t *testing.T) {
	f := writeSweepRun(t, t.TempDir(), "c8.json", "20251101-100000", 8, fixedLens(16, 512), 16, nil)
	args := []string{f, "--engine", "vllm-v0", "--engine-version", "0.6.0", "--params", "overhead.step_ns", "--max-evals", "3"}
	def, _ := calibrateJSON(t, args...)
	joint, _ := calibrateJSON(t, append(args, "--profile", filepath.Join("..", "..", "..", "..", "sim", "profiles", "joint.yaml"))...)
	loso, _ := calibrateJSON(t, append(args, "--profile", filepath.Join("..", "..", "..", "..", "calib", "loso", "without-source-surajssd-llm-k8s.yaml"))...)
	if !strings.Contains(joint.Start, "joint.yaml (a joint model: h100-80g under vllm-v0 0.6.0)") || !strings.HasPrefix(def.Start, "embedded") {
		t.Errorf("start_profile %q and %q", joint.Start, def.Start)
	}
	before := func(r *calib.FitReport) []float64 {
		var out []float64
		for _, m := range r.Runs[0].Metrics {
			if m.Before != nil {
				out = append(out, *m.Before)
			}
		}
		return out
	}
	if a, b := before(def), before(joint); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Errorf("before the fit: embedded %v, joint.yaml %v; want the same", a, b)
	}
	if a, b := before(def), before(loso); reflect.DeepEqual(a, b) {
		t.Errorf("a leave-one-out model started where the embedded one does: %v", b)
	}
	// A joint model with one value out of range is refused by the joint
	// loader, naming the value; a file of neither shape says so.
	jointYAML, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "sim", "profiles", "joint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad, neither := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "neither.yaml")
	broken := regexp.MustCompile(`step_ns: \d+`).ReplaceAll(jointYAML, []byte("step_ns: -1"))
	if bytes.Equal(broken, jointYAML) {
		t.Fatal("joint.yaml has no step_ns to break")
	}
	if err := os.WriteFile(bad, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(neither, []byte("foo: 1\nengines: [a, b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{{bad, "step_ns"}, {neither, "neither a profile"}} {
		code, _, stderr := run(t, "", append([]string{"calibrate", f, "--profile", c.file}, calibrate8B...)...)
		if code == 0 || !strings.Contains(stderr, "--profile") || !strings.Contains(stderr, filepath.Base(c.file)) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want an error naming --profile, the file and %q", filepath.Base(c.file), code, stderr, c.want)
		}
	}
}

// nullAt returns the path of the first null in a decoded JSON document
// ("$.warnings", "$.runs[2].metrics[0].measured"), or "".
func nullAt(v any, path string) string {
	switch x := v.(type) {
	case nil:
		return path
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p := nullAt(x[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := nullAt(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}
