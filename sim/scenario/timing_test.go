package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

const fewRequests = "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"

// profileYAML is gpu's embedded profile for the engine, as a file would hold it.
func profileYAML(t *testing.T, gpu string, engine sim.EngineKind) string {
	t.Helper()
	p, err := sim.DefaultProfile(gpu, engine, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBuildTiming: engine.name, engine.mixed_chunk, weight_dtype, profile
// (embedded, or a file relative to the scenario's directory) and
// workload.max_concurrency reach every config.
func TestBuildTiming(t *testing.T) {
	s := read(t, base+`  - {kv: contiguous-grow, alloc: caching}
weight_dtype: fp8
unquantized: model.layers.0, self_attn
profile: H100-80G
engine: {name: sglang, mixed_chunk: true}
workload:
  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}
  max_concurrency: 3
`)
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.DefaultProfile("h100-80g", sim.EngineSGLang, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range p.Configs {
		if c.Engine != sim.EngineSGLang || !c.MixedChunk || c.WeightDType != model.FP8E4M3 || c.MaxConcurrency != 3 ||
			!reflect.DeepEqual(c.Profile, want) || c.Unquantized.String() != "self_attn,layers.0" {
			t.Errorf("config %d: engine %v, mixed %v, weights %v (unquantized %v), cap %d, profile %+v", i, c.Engine, c.MixedChunk, c.WeightDType,
				c.Unquantized, c.MaxConcurrency, c.Profile)
		}
	}
	if p.ProfileFrom != ProfileFromEmbedded {
		t.Errorf("ProfileFrom %q", p.ProfileFrom)
	}

	// A file, relative to the scenario's directory.
	file := profileYAML(t, "h100-80g", sim.EngineVLLMV1)
	s = read(t, base+"profile: profiles/mine.yaml\n"+fewRequests)
	s.Dir = "studies"
	path := filepath.Join("studies", "profiles", "mine.yaml")
	p, err = Build(s, memOpener(map[string]string{path: file}))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Configs[0]; c.Profile == nil || c.Profile.GPU != "h100-80g" || c.Engine != sim.EngineVLLMV1 || p.ProfileFrom != path {
		t.Fatalf("profile file: %+v from %q", c.Profile, p.ProfileFrom)
	}

	// Nothing set: the default step model, vllm-v1 at its default
	// release, the model's weights, no cap.
	p, err = Build(read(t, base+fewRequests), nil)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := sim.DefaultStepProfile("h100-80g", sim.EngineVLLMV1, "")
	if c := p.Configs[0]; !reflect.DeepEqual(c.Profile, def) || c.Engine != sim.EngineVLLMV1 || c.EngineVersion != "" || c.MixedChunk ||
		c.WeightDType != 0 || c.MaxConcurrency != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	// profile: roofline; engine.version picks the overheads of its class.
	p, err = Build(read(t, base+"profile: roofline\n"+fewRequests), nil)
	if err != nil || p.Configs[0].Profile != nil || p.ProfileFrom != "" {
		t.Fatalf("roofline: %+v, %v", p, err)
	}
	p, err = Build(read(t, base+"profile: joint\nengine: {name: vllm-v0, version: v0.5.4}\n"+fewRequests), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Configs[0]; c.EngineVersion != "0.5.4" || c.Profile == nil || c.Profile.EngineVersion != "0.5.4" ||
		c.Profile.Overhead != sim.DefaultJoint().Engines[sim.ClassVLLMV0Sync] {
		t.Fatalf("vLLM 0.5.4: %+v", c)
	}
}

// TestBuildTimingErrors: each bad field is an ErrBadScenario naming it and
// saying what to do.
func TestBuildTimingErrors(t *testing.T) {
	files := map[string]string{
		"sglang.yaml": profileYAML(t, "h100-80g", sim.EngineSGLang),
		"v0.yaml":     profileYAML(t, "h100-80g", sim.EngineVLLMV0),
		"a100.yaml":   profileYAML(t, "a100-80g", sim.EngineVLLMV1),
		"broken.yaml": "gpu: h100-80g\n",
		"runs.jsonl":  readFixture(t, "sglang_bench_online.jsonl"),
		"lengths.csv": "input_tokens,output_tokens\n10,5\n",
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"engine name", base + "engine: {name: trtllm}\n" + fewRequests, `field "engine.name": "trtllm": want one of vllm-v1, vllm-v0, sglang`},
		{"mixed chunk on vllm", base + "engine: {mixed_chunk: true}\n" + fewRequests, "field \"engine.mixed_chunk\": is SGLang's --enable-mixed-chunk: it needs engine.name sglang, not vllm-v1"},
		{"scheduler steps on vllm-v1", base + "engine: {num_scheduler_steps: 10}\n" + fewRequests,
			"field \"engine.num_scheduler_steps\": is vLLM V0's --num-scheduler-steps: it needs engine.name vllm-v0, not vllm-v1"},
		{"negative scheduler steps", base + "engine: {name: vllm-v0, num_scheduler_steps: -2}\n" + fewRequests,
			"field \"engine.num_scheduler_steps\": -2 is negative"},
		{"scheduler steps before 0.6", base + "engine: {name: vllm-v0, version: 0.5.4, chunked_prefill: false, num_scheduler_steps: 10}\n" + fewRequests,
			"field \"engine.num_scheduler_steps\": 10: multi-step scheduling is vLLM V0's --num-scheduler-steps, from 0.6.0"},
		{"scheduler steps with chunked prefill", base + "engine: {name: vllm-v0, chunked_prefill: true, num_scheduler_steps: 10}\n" + fewRequests,
			"field \"engine.num_scheduler_steps\": 10 with chunked prefill: multi-step chunked prefill is not modelled; turn chunked prefill off, or use 1 step (engine.chunked_prefill false"},
		{"scheduler steps on the roofline", base + "profile: roofline\nengine: {name: vllm-v0, chunked_prefill: false, num_scheduler_steps: 10}\n" + fewRequests,
			"field \"engine.num_scheduler_steps\": 10 spreads the host's time of a step-time profile"},
		{"weight dtype", base + "weight_dtype: fp6\n" + fewRequests, `field "weight_dtype": bad dtype: "fp6"`},
		{"unquantized", base + "weight_dtype: fp8\nunquantized: layers.0.mlp.down_proj\n" + fewRequests, `field "unquantized": bad model: unquantized: "layers.0.mlp.down_proj" is not modelled`},
		{"no embedded profile", base + "profile: v100\n" + fewRequests, `field "profile": "v100" is not roofline, joint, a GPU preset (a100-40g`},
		{"embedded profile of another gpu", base + "profile: a100-80g\n" + fewRequests,
			"field \"profile\": a100-80g is the embedded profile of gpu a100-80g, but the scenario's gpu is h100-80g: use profile h100-80g (or joint), or set gpu a100-80g"},
		{"unknown release", base + "engine: {version: 0.30}\n" + fewRequests, `engine.version": engine version "0.30": not a vLLM release gpufrag knows (0.1 to 0.23); did you mean "0.23"?`},
		{"release before V1", base + "engine: {version: 0.6.0}\n" + fewRequests, "engine.version\": engine version \"0.6.0\": vLLM's V1 engine arrived in 0.8"},
		{"file of another class", base + "profile: v0.yaml\nengine: {name: vllm-v0, version: 0.5.4}\n" + fewRequests,
			"v0.yaml is for vllm-v0 0.7.3 (overheads of vllm-v0), but the scenario's release is 0.5.4 (vllm-v0-sync): set engine.version 0.7.3"},
		{"missing file", base + "profile: nothere.yaml\n" + fewRequests, "field \"profile\": open nothere.yaml"},
		{"incomplete file", base + "profile: broken.yaml\n" + fewRequests, "field \"profile\": bad profile: broken.yaml: line 1: field engine missing"},
		{"file of another gpu", base + "profile: a100.yaml\n" + fewRequests, "field \"profile\": a100.yaml is for gpu a100-80g, but the scenario's gpu is h100-80g"},
		{"file of another engine", base + "profile: sglang.yaml\n" + fewRequests,
			"field \"profile\": sglang.yaml is for engine sglang, but the scenario's engine is vllm-v1: set engine.name sglang (--engine)"},
		{"negative cap", base + fewRequests + "  max_concurrency: -2\n", "field \"workload.max_concurrency\": -2 is negative (0: no cap)"},
		{"negative run", base + "workload:\n  trace: {file: runs.jsonl, run: -1}\n", "field \"workload.trace.run\": -1 is negative"},
		{"run of a csv", base + "workload:\n  trace: {file: lengths.csv, format: vidur, rate: 1, run: 2}\n",
			"field \"workload.trace.run\": 2, but only benchmark result files (format vllm-bench) hold runs, not vidur"},
		{"run past the end", base + "workload:\n  trace: {file: runs.jsonl, run: 9}\n", "holds 7 benchmark runs (workload.trace.run, --run N)"},
		{"several runs", base + "workload:\n  trace: {file: runs.jsonl}\n", "choose one (1 to 7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(read(t, tc.yaml), memOpener(files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			var we *workload.Error
			if !errors.Is(err, ErrBadScenario) && !errors.As(err, &we) {
				t.Fatalf("%v is neither an ErrBadScenario nor a *workload.Error", err)
			}
		})
	}
}

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "workload", "testdata", "bench", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBuildBenchCap: a vllm-bench trace's own max_concurrency caps the
// runs unless workload.max_concurrency says otherwise (0 lifts it); the
// plan keeps the run for the report.
func TestBuildBenchCap(t *testing.T) {
	files := map[string]string{"detail.json": readFixture(t, "vllm_bench_detailed_synthetic.json"),
		"runs.jsonl": readFixture(t, "sglang_bench_online.jsonl")}
	for _, tc := range []struct {
		extra string
		want  int
	}{{"", 2}, {"  max_concurrency: 0\n", 0}, {"  max_concurrency: 5\n", 5}} {
		p, err := Build(read(t, base+"workload:\n  trace: {file: detail.json, format: vllm-bench}\n"+tc.extra), memOpener(files))
		if err != nil {
			t.Fatal(err)
		}
		if p.Configs[0].MaxConcurrency != tc.want || p.Bench == nil || p.Bench.MaxConcurrency != 2 || len(p.Requests) != 5 {
			t.Errorf("%q: cap %d (want %d), bench %+v, %d requests", tc.extra, p.Configs[0].MaxConcurrency, tc.want, p.Bench, len(p.Requests))
		}
	}
	p, err := Build(read(t, base+"workload:\n  trace: {file: runs.jsonl, run: 3}\n"), memOpener(files))
	if err != nil {
		t.Fatal(err)
	}
	if p.Bench == nil || p.Bench.Run != 3 || p.Bench.Harness != workload.HarnessSGLang {
		t.Fatalf("run 3: %+v", p.Bench)
	}
}

// TestBuildBenchMaxTokens: a benchmark file's requests ask for their
// output length as max_tokens (the clients send it), which SGLang's
// admission reserves: simulate runs the file as calibrate replays it. A
// generated workload, or another engine, leaves the context's room.
func TestBuildBenchMaxTokens(t *testing.T) {
	files := map[string]string{"runs.jsonl": readFixture(t, "sglang_bench_online.jsonl")}
	for _, tc := range []struct {
		extra string
		want  bool
	}{
		{"engine: {name: sglang}\nworkload:\n  trace: {file: runs.jsonl, run: 1}\n", true},
		{"engine: {name: vllm-v1}\nworkload:\n  trace: {file: runs.jsonl, run: 1}\n", false},
		{"engine: {name: sglang}\n" + fewRequests, false},
	} {
		p, err := Build(read(t, base+tc.extra), memOpener(files))
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		for i, c := range p.Configs {
			if c.MaxTokensIsOutput != tc.want {
				t.Errorf("%q: run %d: MaxTokensIsOutput %v, want %v", tc.extra, i, c.MaxTokensIsOutput, tc.want)
			}
		}
	}
}

// TestReportTiming: the report says how time was modelled (the default
// step model, engine and release included), and a benchmark file's figures
// in the results' units.
func TestReportTiming(t *testing.T) {
	s := read(t, base+fewRequests)
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReport(s, p, make([]sim.Result, len(p.Configs)))
	if r.Timing == nil || r.Timing.EngineVersion != sim.DefaultEngineVersion(sim.EngineVLLMV1).String() || r.Bench != nil ||
		(sim.DefaultStepTime == sim.StepTimeJoint) != (r.Timing.StepTime == "profile") {
		t.Fatalf("defaults: timing %+v, bench %+v", r.Timing, r.Bench)
	}

	files := map[string]string{"detail.json": readFixture(t, "vllm_bench_detailed_synthetic.json")}
	s = read(t, base+"profile: h100-80g\nweight_dtype: int4\nworkload:\n  trace: {file: detail.json}\n")
	if p, err = Build(s, memOpener(files)); err != nil {
		t.Fatal(err)
	}
	r = NewReport(s, p, make([]sim.Result, len(p.Configs)))
	v := sim.DefaultEngineVersion(sim.EngineVLLMV1).String()
	want := &Timing{Engine: "vllm-v1", EngineVersion: v, StepTime: "profile", WeightDType: "int4", MaxConcurrency: 2,
		Profile: &ProfileReport{GPU: "h100-80g", Engine: "vllm-v1", EngineVersion: v,
			Fitted: fmt.Sprintf("%s: %d figures of calib/published.yaml", sim.JointPath, len(sim.DefaultJoint().FittedTo)), From: "embedded"}}
	if !reflect.DeepEqual(r.Timing, want) {
		t.Errorf("timing %+v, want %+v", r.Timing, want)
	}
	f := func(v float64) *float64 { return &v }
	ms := func(v float64) *float64 { v /= 1e3; return &v } // the file's *_ms
	n := func(v int) *int { return &v }
	wantBench := &BenchReport{File: "detail.json", Run: 1, Runs: 1, Harness: "vllm", ModelID: "meta-llama/Llama-3.1-8B-Instruct",
		MaxConcurrency: 2, Completed: n(4), Failed: n(1),
		TTFT: BenchLatency{P50: ms(65), P99: ms(79.7)}, TPOT: BenchLatency{P50: ms(20.5), P99: ms(21.97)},
		ITL: BenchLatency{P50: ms(20.5), P99: ms(22)},
		E2E: BenchLatency{P50: ms(249.5), P99: ms(277.4)}, OutputTokensPerS: f(12.5), RequestsPerS: f(1.25), MeasuredDurationS: f(3.2)}
	if got, _ := json.Marshal(r.Bench); !bytes.Equal(got, mustJSON(t, wantBench)) {
		t.Errorf("bench\n%s\nwant\n%s", got, mustJSON(t, wantBench))
	}

	// The roofline on a benchmark file: still said, without a profile.
	s = read(t, base+"profile: roofline\nworkload:\n  trace: {file: detail.json}\n  max_concurrency: 0\n")
	if p, err = Build(s, memOpener(files)); err != nil {
		t.Fatal(err)
	}
	r = NewReport(s, p, nil)
	if r.Timing == nil || r.Timing.StepTime != "roofline" || r.Timing.Profile != nil || r.Timing.MaxConcurrency != 0 || r.Timing.WeightDType != "bf16" {
		t.Fatalf("roofline timing %+v", r.Timing)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTimingKeysDocumented: every key of "timing" and "bench" is named in
// docs/json.md's simulate section, so the contract page keeps up with the
// code.
func TestTimingKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	if i := strings.Index(sec, "## `gpufrag simulate --json`"); i >= 0 {
		sec = sec[i:]
	}
	if i := strings.Index(sec[1:], "\n## "); i >= 0 {
		sec = sec[:i+1]
	}
	x := 1.0
	k := 1
	full := map[string]any{
		"timing": &Timing{Profile: &ProfileReport{FittedTo: []string{"x"}, Fitted: "x", EngineVersion: "x"}},
		"bench": &BenchReport{Completed: &k, Failed: &k, TTFT: BenchLatency{P50: &x, P99: &x}, TPOT: BenchLatency{P50: &x, P99: &x},
			E2E: BenchLatency{P50: &x, P99: &x}, OutputTokensPerS: &x, RequestsPerS: &x, MeasuredDurationS: &x, ModelID: "m"},
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for key, sub := range m {
			if !strings.Contains(sec, "`"+key+"`") && !strings.Contains(sec, "`."+key+"`") && !strings.Contains(sec, "."+key+"`") {
				t.Errorf("docs/json.md's simulate section does not name %s%s", prefix, key)
			}
			walk(prefix+key+".", sub)
		}
	}
	var decoded map[string]any
	if err := json.Unmarshal(mustJSON(t, full), &decoded); err != nil {
		t.Fatal(err)
	}
	walk("", decoded)
}

// TestBuildV0ChunkedPrefill: vllm-v0 schedules prefill-only steps by
// default, as vLLM V0 did for contexts up to 32K; a model of longer context,
// or chunked_prefill given, keeps the setting it has.
func TestBuildV0ChunkedPrefill(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  bool
	}{
		{"engine: {name: vllm-v0, max_context: 2048}\n", false},
		{"engine: {name: vllm-v0, max_context: 32768}\n", false},
		{"engine: {name: vllm-v0}\n", true},                     // llama-3.1-8b: 128K context
		{"engine: {name: vllm-v0, max_context: 40000}\n", true}, // above 32K
		{"engine: {name: vllm-v0, max_context: 2048, chunked_prefill: true}\n", true},
		{"engine: {name: vllm-v1, max_context: 2048}\n", true},
		{"engine: {max_context: 2048}\n", true},
	} {
		p, err := Build(read(t, base+tc.extra+fewRequests), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		if got := p.Configs[0].ChunkedPrefill; got != tc.want {
			t.Errorf("%q: chunked prefill %v, want %v", tc.extra, got, tc.want)
		}
	}
}

// TestBuildSchedulerSteps: engine.num_scheduler_steps reaches every run's
// config and the timing report, which carries it only above 1 (0 and 1
// are both off).
func TestBuildSchedulerSteps(t *testing.T) {
	for _, tc := range []struct{ steps, report int }{{10, 10}, {1, 0}, {0, 0}} {
		y := fmt.Sprintf("%sengine: {name: vllm-v0, chunked_prefill: false, num_scheduler_steps: %d}\n%s", base, tc.steps, fewRequests)
		p, err := Build(read(t, y), nil)
		if err != nil {
			t.Fatalf("%d steps: %v", tc.steps, err)
		}
		for _, c := range p.Configs {
			if c.SchedulerSteps != tc.steps || c.Profile == nil {
				t.Errorf("%d steps: config has %d, profile %v", tc.steps, c.SchedulerSteps, c.Profile != nil)
			}
		}
		if got := newTiming(p).SchedulerSteps; got != tc.report {
			t.Errorf("%d steps: timing.num_scheduler_steps %d, want %d", tc.steps, got, tc.report)
		}
	}
}
