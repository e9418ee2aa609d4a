package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/sim"
)

const detailedBench = "../../../../workload/testdata/bench/vllm_bench_detailed_synthetic.json"

// TestSimulateBench: a vLLM benchmark result as the workload, timed with
// an embedded profile: the JSON says what ran (engine, profile, weights,
// the file's own client cap) and holds the file's measured figures beside
// the simulated ones.
func TestSimulateBench(t *testing.T) {
	o, out := simulateJSON(t, "--trace", detailedBench, "--format", "vllm-bench", "--profile", "h100-80g",
		"--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--alloc", "caching")
	tm := o.Timing
	if tm == nil || tm.Engine != "vllm-v1" || tm.EngineVersion != sim.DefaultEngineVersion(sim.EngineVLLMV1).String() || tm.StepTime != "profile" ||
		tm.Profile == nil || tm.Profile.GPU != "h100-80g" || tm.Profile.From != "embedded" || tm.Profile.FittedTo != nil ||
		!strings.HasPrefix(tm.Profile.Fitted, sim.JointPath) || tm.WeightDType != "bf16" || tm.MaxConcurrency != 2 {
		t.Fatalf("timing %+v", tm)
	}
	b := o.Bench
	// The file's median_ttft_ms 65, median_tpot_ms 20.5, output_throughput 12.5.
	if b == nil || b.Harness != "vllm" || b.MaxConcurrency != 2 || b.TTFT.P50 == nil || *b.TTFT.P50 != 0.065 ||
		b.TPOT.P50 == nil || *b.TPOT.P50 != 0.0205 || b.OutputTokensPerS == nil || *b.OutputTokensPerS != 12.5 || b.TTFT.P99 == nil {
		t.Fatalf("bench %s", mustMarshal(t, b))
	}
	if len(o.Results) != 1 {
		t.Fatalf("%d results", len(o.Results))
	}
	r := o.Results[0]
	if r.RequestsTotal != 5 || r.RequestsCompleted != 5 || !(r.TTFT.P50 > 0) || !(r.TPOT.P50 > 0) || !(r.OutputTokensPerS > 0) {
		t.Fatalf("result %+v", r)
	}
	// Side by side in the document: "bench" comes before "results".
	if i, j := strings.Index(out, `"bench"`), strings.Index(out, `"results"`); i < 0 || j < i {
		t.Fatalf("bench at %d, results at %d", i, j)
	}
	// And in the text, a row beneath the simulated ones: the file's
	// completed 4, 12.5 tok/s (%.0f: 12), TTFT 65 / 79.7 ms, TPOT 20.5 / 21.97 ms, ITL
	// 20.5 / 22 ms; no batch, OOMs or preemptions (the file has none).
	code, text, errs := run(t, "", "simulate", "--trace", detailedBench, "--format", "vllm-bench", "--profile", "h100-80g",
		"--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--alloc", "caching")
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, errs)
	}
	var row []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "measured ") {
			row = strings.Fields(line)
		}
	}
	if want := []string{"measured", "4", "-", "-", "-", "-", "12", "-", "65ms", "80ms", "20ms", "22ms", "20ms", "22ms"}; !slices.Equal(row, want) {
		t.Errorf("measured row %q, want %q\n%s", row, want, text)
	}
	if !strings.Contains(strings.Join(strings.Fields(text), " "), "measured: the benchmark file's own figures, as its client computed them ("+filepath.Base(detailedBench)+")") {
		t.Errorf("no legend for the measured row:\n%s", text)
	}

	// --max-concurrency caps any trace: six requests sent at once (qps inf)
	// run one after the other under a cap of one, each TTFT its own prefill.
	inf := "../../../../workload/testdata/bench/vllm_bench_qpsinf_cut.json"
	args := []string{"--trace", inf, "--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--alloc", "caching"}
	open, _ := simulateJSON(t, args...)
	one, _ := simulateJSON(t, append(args, "--max-concurrency", "1")...)
	if open.Timing == nil || open.Timing.MaxConcurrency != 0 || one.Timing.MaxConcurrency != 1 || one.Results[0].BatchSizeMean != 1 ||
		!(one.Results[0].TTFT.P99 < open.Results[0].TTFT.P99) || !(one.Results[0].SimulatedSeconds > open.Results[0].SimulatedSeconds) {
		t.Fatalf("cap 1 vs none: timing %+v / %+v, mean batch %v, TTFT p99 %v / %v, simulated %v / %v s", one.Timing, open.Timing,
			one.Results[0].BatchSizeMean, one.Results[0].TTFT.P99, open.Results[0].TTFT.P99, one.Results[0].SimulatedSeconds, open.Results[0].SimulatedSeconds)
	}
}

// TestSimulateWarmPrompts: --warm-prompts replays a repeated benchmark:
// the JSON says so, paged finds the prompts cached (its TTFT falls and its
// prefix hits count them), and it needs prefix caching.
func TestSimulateWarmPrompts(t *testing.T) {
	inf := "../../../../workload/testdata/bench/vllm_bench_qpsinf_cut.json"
	args := []string{"--trace", inf, "--model", "llama-3.1-8b", "--gpu", "h100-80g", "--kv", "paged:16", "--alloc", "caching"}
	cold, _ := simulateJSON(t, args...)
	warm, _ := simulateJSON(t, append(args, "--warm-prompts")...)
	c, w := cold.Results[0], warm.Results[0]
	if cold.Timing.WarmPrompts || warm.Timing == nil || !warm.Timing.WarmPrompts || c.PrefixHitTokens != 0 || !(w.PrefixHitTokens > 0) ||
		!(w.TTFT.P50 < c.TTFT.P50) || w.OutputTokens != c.OutputTokens {
		t.Fatalf("warm %+v: hits %d, TTFT p50 %v, tokens %d; cold: hits %d, TTFT p50 %v, tokens %d",
			warm.Timing, w.PrefixHitTokens, w.TTFT.P50, w.OutputTokens, c.PrefixHitTokens, c.TTFT.P50, c.OutputTokens)
	}
	code, _, stderr := run(t, "", append([]string{"simulate"}, append(args, "--warm-prompts", "--prefix-caching=false")...)...)
	if code != 2 || !strings.Contains(stderr, "--warm-prompts") || !strings.Contains(stderr, "--prefix-caching=false") {
		t.Fatalf("--warm-prompts without prefix caching: exit %d, stderr %q", code, stderr)
	}
}

// TestSimulateTimingDefault: without any timing option the document says
// the default step model timed the run (sim.DefaultStepTime) for the
// default release; --profile roofline and --engine-version change it.
func TestSimulateTimingDefault(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(tr, []byte("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n100,20,120,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--trace", tr, "--rate", "1", "--kv", "paged:16", "--alloc", "caching"}
	def, out := simulateJSON(t, args...)
	wantStep := map[string]string{sim.StepTimeJoint: "profile", sim.StepTimeRoofline: "roofline"}[sim.DefaultStepTime]
	if def.Timing == nil || def.Timing.StepTime != wantStep || def.Timing.EngineVersion != "0.23.0" || strings.Contains(out, `"bench"`) {
		t.Fatalf("default timing %+v", def.Timing)
	}
	roof, _ := simulateJSON(t, append(args, "--profile", "roofline")...)
	old, _ := simulateJSON(t, append(args, "--engine", "vllm-v0", "--engine-version", "0.5.4", "--profile", "joint")...)
	if roof.Timing.StepTime != "roofline" || roof.Timing.Profile != nil || old.Timing.StepTime != "profile" || old.Timing.EngineVersion != "0.5.4" ||
		old.Timing.Profile.EngineVersion != "0.5.4" || old.Results[0].TTFT.P50 == roof.Results[0].TTFT.P50 {
		t.Fatalf("roofline %+v, vLLM 0.5.4 %+v", roof.Timing, old.Timing)
	}
}

// TestSimulatePrintProfile: --print-profile prints the embedded profile of
// --gpu (with its comments) for vllm-v1, the derived one for another
// engine, a file's as it loads, and --json the same document as JSON.
func TestSimulatePrintProfile(t *testing.T) {
	code, out, errs := run(t, "", "simulate", "--gpu", "a100-40g", "--print-profile", "--profile", "roofline")
	want := []byte(out)
	p, err := sim.LoadProfile(strings.NewReader(out), "stdout")
	if d, _ := sim.DefaultProfile("a100-40g", sim.EngineVLLMV1, ""); code != 0 || err != nil || !reflect.DeepEqual(p, d) ||
		!strings.HasPrefix(out, "# The joint step-time model's profile of a100-40g under vllm-v1") || !strings.Contains(errs, "times its steps with the roofline") {
		t.Fatalf("exit %d, stderr %q, %v:\n%s", code, errs, err, out)
	}

	// Another engine and release: its derived profile, the overheads of
	// its class.
	code, out, errs = run(t, "", "simulate", "--gpu", "h200-141g", "--engine", "sglang", "--engine-version", "0.4", "--print-profile")
	p, err = sim.LoadProfile(strings.NewReader(out), "stdout")
	if code != 0 || err != nil || errs != "" {
		t.Fatalf("exit %d, %s: %v", code, errs, err)
	}
	if d, _ := sim.DefaultProfile("h200-141g", sim.EngineSGLang, "0.4.0"); !reflect.DeepEqual(p, d) || p.EngineVersion != "0.4.0" {
		t.Fatalf("sglang profile %+v, want %+v", p, d)
	}

	// A scenario's profile file is read from beside the scenario, whatever
	// the working directory.
	dir := t.TempDir()
	var b bytes.Buffer
	p.FittedTo = []string{"my-run-1"}
	if err := p.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("name: s\nmodel: llama-3.1-8b\ngpu: h200-141g\nprofile: mine.yaml\nengine: {name: sglang}\n"+
		"runs: [{kv: 'paged:16', alloc: caching}]\nworkload:\n  requests: {rate: 1, count: 2, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 3}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "", "simulate", "--scenario", scen, "--print-profile")
	if code != 0 || out != b.String() || strings.Contains(errs, "roofline") {
		t.Fatalf("scenario's profile: exit %d, stderr %q\n%s", code, errs, out)
	}
	// A scenario's multi-step scheduling, and a flag that changes its engine.
	ms := filepath.Join(dir, "ms.yaml")
	if err := os.WriteFile(ms, []byte("name: ms\nmodel: llama-3-8b\ngpu: h100-80g\nengine: {name: vllm-v0, version: 0.6.0, chunked_prefill: false, num_scheduler_steps: 10}\n"+
		"runs: [{kv: 'paged:16', alloc: caching}]\nworkload:\n  requests: {rate: 1, count: 2, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 3}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, _ := simulateJSON(t, "--scenario", ms); m.Timing == nil || m.Timing.SchedulerSteps != 10 {
		t.Errorf("scenario with num_scheduler_steps 10: timing %+v", m.Timing)
	}
	if code, _, errs := run(t, "", "simulate", "--scenario", ms, "--engine", "sglang"); code != 2 ||
		!strings.Contains(errs, "--engine sglang: the scenario's engine.num_scheduler_steps 10") || !strings.Contains(errs, "--num-scheduler-steps 0") {
		t.Errorf("--engine sglang over a multi-step scenario: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run(t, "", "simulate", "--scenario", ms, "--engine", "sglang", "--engine-version", "0.5.6", "--num-scheduler-steps", "0"); code != 0 {
		t.Errorf("--engine sglang --num-scheduler-steps 0 over a multi-step scenario: exit %d, stderr %q", code, errs)
	}
	o, _ := simulateJSON(t, "--scenario", scen)
	if o.Timing == nil || o.Timing.Profile == nil || o.Timing.Profile.From != filepath.Join(dir, "mine.yaml") ||
		!reflect.DeepEqual(o.Timing.Profile.FittedTo, []string{"my-run-1"}) || o.Timing.Engine != "sglang" {
		t.Fatalf("scenario's profile in the report: %+v", o.Timing)
	}

	// --json: the same keys in the same order, the same values.
	code, js, errs := run(t, "", "simulate", "--gpu", "a100-40g", "--print-profile", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d, %s", code, errs)
	}
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatalf("--print-profile --json: %v\n%s", err, js)
	}
	if err := yaml.Unmarshal(want, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if got, wantJS := mustMarshal(t, fromJSON), mustMarshal(t, fromYAML); got != wantJS {
		t.Fatalf("JSON and YAML differ:\n%s\n%s", got, wantJS)
	}
	var top yaml.Node
	if err := yaml.Unmarshal(want, &top); err != nil {
		t.Fatal(err)
	}
	last := -1
	for i := 0; i < len(top.Content[0].Content); i += 2 {
		k := top.Content[0].Content[i].Value
		at := strings.Index(js, `"`+k+`":`)
		if at < last {
			t.Fatalf("key %q out of the YAML's order in\n%s", k, js)
		}
		last = at
	}
}

// TestSimulateTimingUsage: bad timing flags are usage errors (exit 2)
// naming the flag; a profile for another GPU is refused naming both.
func TestSimulateTimingUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--engine", "trtllm"}, 2, `--engine "trtllm": want vllm-v1, vllm-v0 or sglang`},
		{[]string{"--mixed-chunk"}, 2, "--mixed-chunk is SGLang's --enable-mixed-chunk: it needs --engine sglang"},
		{[]string{"--engine", "vllm-v0", "--mixed-chunk"}, 2, "needs --engine sglang"},
		{[]string{"--num-scheduler-steps", "10"}, 2, "--num-scheduler-steps is vLLM V0's multi-step scheduling: it needs --engine vllm-v0"},
		{[]string{"--engine", "vllm-v0", "--num-scheduler-steps", "-1"}, 2, "--num-scheduler-steps -1: want 0 or more"},
		{[]string{"--engine", "vllm-v0", "--engine-version", "0.5.4", "--chunked-prefill=false", "--num-scheduler-steps", "10"}, 2,
			"--num-scheduler-steps: 10: multi-step scheduling is vLLM V0's --num-scheduler-steps, from 0.6.0"},
		{[]string{"--engine", "vllm-v0", "--num-scheduler-steps", "10"}, 2,
			"--num-scheduler-steps: 10 with chunked prefill: multi-step chunked prefill is not modelled; turn chunked prefill off, or use 1 step (engine.chunked_prefill false, --chunked-prefill=false)"},
		{[]string{"--engine", "vllm-v0", "--chunked-prefill=false", "--num-scheduler-steps", "10", "--profile", "roofline"}, 2,
			"--num-scheduler-steps: 10 spreads the host's time of a step-time profile over the decode steps; the roofline (profile roofline) has none to spread"},
		{[]string{"--weight-dtype", "fp6"}, 2, `--weight-dtype "fp6": want bf16, fp16, fp8, int8 or int4`},
		{[]string{"--unquantized", "layers.1.mlp.down_proj"}, 2, `--unquantized "layers.1.mlp.down_proj": bad model: unquantized: "layers.1.mlp.down_proj" is not modelled`},
		{[]string{"--weight-dtype", "fp8", "--unquantized", "layers.32"}, 2, "--unquantized: bad model: llama-3.1-8b: unquantized: layer 32, but the model has 32 layers"},
		{[]string{"--unquantized", "self_attn"}, 2, "--unquantized: self_attn names what quantized weights keep in 16 bits, but the weights are bf16"},
		{[]string{"--profile", "v100"}, 2, `--profile "v100": not roofline, joint or a GPU's name`},
		{[]string{"--profile", "roofine"}, 2, `did you mean "roofline"?`},
		{[]string{"--engine-version", "0.24"}, 2, `--engine-version: engine version "0.24": not a vLLM release gpufrag knows (0.1 to 0.23); did you mean "0.23"?`},
		{[]string{"--engine", "sglang", "--engine-version", "0.8.3"}, 2, `not a SGLang release gpufrag knows (0.1 to 0.5)`},
		{[]string{"--engine-version", "0.5.4"}, 2, "--engine-version: engine version \"0.5.4\": vLLM's V1 engine arrived in 0.8; for an earlier release use engine vllm-v0"},
		{[]string{"--profile", ""}, 2, "--profile: empty"},
		{[]string{"--max-concurrency", "-1"}, 2, "--max-concurrency -1"},
		{[]string{"--run", "2"}, 2, "--run has no effect without --trace"},
		{[]string{"--trace", detailedBench, "--run", "0"}, 2, "--run 0: want a run number from 1"},
		{[]string{"--profile", "a100-80g"}, 2, "--profile: a100-80g is the embedded profile of gpu a100-80g, but the scenario's gpu is h100-80g"},
		{[]string{"--profile", "nothere.yaml"}, 1, "--profile nothere.yaml: open nothere.yaml"},
		{[]string{"--trace", detailedBench, "--run", "3"}, 1, "holds 1 benchmark run (workload.trace.run, --run N)"},
	} {
		code, _, errs := run(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("simulate %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
