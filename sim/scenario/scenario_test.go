package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

func read(t *testing.T, yaml string) *Scenario {
	t.Helper()
	s, err := Read(strings.NewReader(yaml), "test.yaml")
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return s
}

// memOpener opens files from a map, as the CLI's os.Open would from disk.
func memOpener(files map[string]string) Opener {
	return func(name string) (io.ReadCloser, error) {
		s, ok := files[name]
		if !ok {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

// TestDefault checks that the embedded default scenario reads back from
// DefaultYAML, builds, and builds the same requests and configs twice.
func TestDefault(t *testing.T) {
	s := Default()
	if s.Name != "long-context-chat" || s.Model != "llama-3.1-8b" || s.GPU != "h100-80g" || len(s.Runs) != 6 {
		t.Fatalf("default scenario: %+v", s)
	}
	again, err := Read(bytes.NewReader(DefaultYAML()), "default.yaml")
	if err == nil {
		again.File, again.doc = "", nil // Default names no file
	}
	if err != nil || !reflect.DeepEqual(s, again) {
		t.Fatalf("DefaultYAML reads back to %+v, %v", again, err)
	}
	p1, err := Build(s, nil)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	p2, err := Build(Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.Requests) < 100 {
		t.Fatalf("default scenario has only %d requests", len(p1.Requests))
	}
	if !reflect.DeepEqual(p1.Requests, p2.Requests) || !reflect.DeepEqual(p1.Configs, p2.Configs) || p1.Source != p2.Source {
		t.Fatal("two builds of the default scenario differ")
	}
	if len(p1.Configs) != len(s.Runs) {
		t.Fatalf("%d configs for %d runs", len(p1.Configs), len(s.Runs))
	}
	for i, c := range p1.Configs {
		if c.KV != s.Runs[i].KV.Spec || c.Alloc.String() != s.Runs[i].Alloc.String() {
			t.Errorf("config %d: kv %s alloc %s, run %+v", i, c.KV, c.Alloc, s.Runs[i])
		}
		if c.Duration != int64(s.Duration) || c.GPUMemoryUtilization != 0.9 || c.MaxBatchTokens != 8192 {
			t.Errorf("config %d: %+v", i, c)
		}
	}
	last := int64(-1)
	for _, r := range p1.Requests {
		if r.Arrival < last || r.Arrival >= int64(s.Duration) {
			t.Fatalf("request %s arrives at %d (previous %d, duration %d)", r.ID, r.Arrival, last, s.Duration)
		}
		last = r.Arrival
		if r.PromptTokens < 1 || r.PromptTokens > 100_000 || r.OutputTokens < 50 || r.OutputTokens > 1000 {
			t.Fatalf("request %+v outside the scenario's lengths", r)
		}
	}
	if !strings.Contains(p1.Source, "generated chat turns") {
		t.Errorf("source %q", p1.Source)
	}
}

// TestReadErrors checks the errors of Read: each wraps ErrBadScenario and
// names what is wrong, with the line for YAML errors.
func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "name: x\nmodle: llama-3.1-8b\n", `line 2: field "modle": unknown field`},
		{"unknown nested field", "engine:\n  max_seqs: 4\n  max_seq: 4\n", `line 3: field "engine.max_seq": unknown field`},
		{"two documents", "name: a\n---\nname: b\n", "more than one YAML document"},
		{"empty", "", "empty file"},
		{"bad duration", "duration: 5 parsecs\n", `line 1: duration "5 parsecs"`},
		{"negative duration", "duration: -5m\n", `line 1: duration "-5m"`},
		{"wrong type", "tp: two\n", "line 1"},
		{"too large", "name: x\n" + strings.Repeat("#", MaxScenarioBytes), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.yaml), "test.yaml")
			if !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadScenario containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "test.yaml") {
				t.Fatalf("%v does not name the file", err)
			}
		})
	}
}

const base = `model: llama-3.1-8b
gpu: h100-80g
seed: 7
runs:
  - {kv: "paged:16", alloc: caching}
`

// TestBuildErrors checks that Build refuses bad scenarios with an
// ErrBadScenario that names the field.
func TestBuildErrors(t *testing.T) {
	requests := "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"no model", "gpu: h100-80g\nruns: [{kv: 'paged:16', alloc: caching}]\n" + requests, "field \"model\": missing"},
		{"no gpu", "model: llama-3.1-8b\nruns: [{kv: 'paged:16', alloc: caching}]\n" + requests, "field \"gpu\": missing"},
		{"bad kv dtype", base + "kv_dtype: fp7\n" + requests, "kv_dtype"},
		{"bad on_oom", base + "engine: {on_oom: panic}\n" + requests, "engine.on_oom"},
		{"no runs", "model: llama-3.1-8b\ngpu: h100-80g\n" + requests, "field \"runs\": no KV strategy"},
		{"run without alloc", base + "  - {kv: contiguous-grow}\n" + requests, "field \"runs[1]\": needs both kv and alloc"},
		{"bad run on_oom", base + "  - {kv: contiguous-grow, alloc: caching, on_oom: retry}\n" + requests, "runs[1].on_oom"},
		{"vmm kv on caching", base + "  - {kv: \"vmm:2MiB\", alloc: caching}\n" + requests,
			"field \"runs[1]\": bad strategy spec: kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc caching does not grow blocks in place"},
		{"vmm kv on another page", base + "  - {kv: \"vmm:2MiB\", alloc: \"vmm:64KiB\"}\n" + requests,
			"field \"runs[1]\": bad strategy spec: kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc vmm:64KiB grows them by 64KiB"},
		{"no workload", base, "want exactly one of trace, requests and sessions (got 0)"},
		{"two workloads", base + requests + "  sessions: {count: 1, min_turns: 1, max_turns: 1, min_user: 1, max_user: 2}\n", "(got 2)"},
		{"bad dist", base + "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: normal, min: 10, max: 20}, output: {dist: fixed, min: 5}}\n",
			`field "workload.requests.prompt.dist": "normal"`},
		{"min above max", base + "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: uniform, min: 30, max: 20}, output: {dist: fixed, min: 5}}\n",
			"field \"workload.requests.prompt\": want 1 ≤ min ≤ max"},
		{"empty prompt", base + "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 0}, output: {dist: fixed, min: 5}}\n",
			"field \"workload.requests.prompt\": want 1 ≤ min"},
		{"no rate", base + "workload:\n  requests: {count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n", "workload.requests"},
		{"neither count nor duration", base + "workload:\n  requests: {rate: 1, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n",
			"field \"workload.requests.count\": give a count or a duration"},
		{"sessions without count or duration", base + "workload:\n  sessions: {rate: 1, min_turns: 1, max_turns: 2, min_user: 1, max_user: 2}\n",
			"field \"workload.sessions\": give a count"},
		{"bad sessions", base + "workload:\n  sessions: {count: 2, rate: 1, min_turns: 3, max_turns: 2, min_user: 1, max_user: 2}\n", "workload.sessions"},
		{"trace without file", base + "workload:\n  trace: {format: azure}\n", "field \"workload.trace.file\": missing"},
		{"trace bad format", base + "workload:\n  trace: {file: t.csv, format: parquet}\n", "workload.trace.format"},
		{"bad beam", base + requests + "  beam: [0]\n", "workload.beam"},
		// The default scenario at --duration 100000h: 7.2M conversations, 61M
		// requests, refused before any is generated (it passed 23 GB).
		{"sessions over the bound", base + "duration: 100000h\nworkload:\n  sessions: {rate: 0.02, min_turns: 1, max_turns: 16, min_user: 1, max_user: 2}\n",
			"more than the 1000000 requests a generated workload may have"},
		// 200,000 sessions are under the bound, their ~1.6M turns are not.
		{"turns over the bound", base + "workload:\n  sessions: {count: 200000, rate: 1, min_turns: 1, max_turns: 16, min_user: 1, max_user: 2}\n",
			"is about 1.7e+06 requests, more than the 1000000"},
		{"requests over the bound", base + "duration: 1000h\nworkload:\n  requests: {rate: 1, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n",
			"is more than 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(read(t, tc.yaml), memOpener(nil))
			if !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadScenario containing %q", err, tc.want)
			}
		})
	}
}

// TestBuildUnknownNames checks that an unknown model or GPU is an error of
// package model that names it.
func TestBuildUnknownNames(t *testing.T) {
	requests := "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"
	_, err := Build(read(t, strings.Replace(base, "llama-3.1-8b", "llama-9", 1)+requests), nil)
	if !errors.Is(err, model.ErrUnknownModel) || !strings.Contains(err.Error(), "llama-9") {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = Build(read(t, strings.Replace(base, "h100-80g", "h900", 1)+requests), nil)
	if !errors.Is(err, model.ErrUnknownGPU) || !strings.Contains(err.Error(), "h900") {
		t.Fatalf("unknown gpu: %v", err)
	}
}

// TestBuildEngine checks that the engine section and per-run overrides
// reach the configs, and that zero values keep sim.DefaultConfig's.
func TestBuildEngine(t *testing.T) {
	s := read(t, base+`  - {kv: contiguous-grow, alloc: "caching:expandable_segments:True", on_oom: preempt}
tp: 2
kv_dtype: fp8
duration: 90s
engine:
  gpu_memory_utilization: 0.8
  max_batch_tokens: 2048
  max_seqs: 32
  chunked_prefill: false
  activations: false
  on_oom: reserve
  max_context: 4096
  max_tokens: 256
workload:
  requests: {rate: 2, prompt: {dist: fixed, min: 100}, output: {dist: fixed, min: 10}}
`)
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Configs[0]
	fp8, _ := model.ParseDType("fp8")
	if c.TP != 2 || c.KVDType != fp8 || c.Duration != 90e9 || c.GPUMemoryUtilization != 0.8 ||
		c.MaxBatchTokens != 2048 || c.MaxSeqs != 32 || c.ChunkedPrefill || c.Activations ||
		c.OnOOM != sim.OnOOMReserve || c.MaxContext != 4096 || c.MaxTokens != 256 {
		t.Fatalf("config 0: %+v", c)
	}
	if p.Configs[1].OnOOM != sim.OnOOMPreempt || p.Configs[1].Alloc.String() != "caching:expandable_segments:True" {
		t.Fatalf("config 1: %+v", p.Configs[1])
	}
	def := sim.DefaultConfig(p.Model, p.GPU)
	s2 := read(t, base+"workload:\n  requests: {rate: 2, count: 1, prompt: {dist: fixed, min: 100}, output: {dist: fixed, min: 10}}\n")
	p2, err := Build(s2, nil)
	if err != nil {
		t.Fatal(err)
	}
	def.KV, def.Alloc = strategy.PagedSpec(16), registry.Default()
	if def.Profile, err = sim.DefaultStepProfile(p.GPU.Name, def.Engine, ""); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p2.Configs[0], def) {
		t.Fatalf("zero engine section gives %+v, want DefaultConfig %+v", p2.Configs[0], def)
	}
	// 90 s at 2 requests/s: about 180 Poisson arrivals, all inside the window.
	if n := len(p.Requests); n < 120 || n > 240 {
		t.Fatalf("%d requests in 90 s at 2/s", n)
	}
	for _, r := range p.Requests {
		if r.Arrival >= 90e9 || r.PromptTokens != 100 || r.OutputTokens != 10 || r.N != 1 {
			t.Fatalf("request %+v", r)
		}
	}
}

// TestWorkloadKinds builds each kind of workload.
func TestWorkloadKinds(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		for _, d := range []string{"uniform", "loguniform", "", "fixed"} {
			s := read(t, base+"workload:\n  requests: {rate: 10, cv: 2, count: 200, prompt: {dist: "+d+", min: 100, max: 5000}, output: {dist: uniform, min: 0, max: 7}}\n")
			p, err := Build(s, nil)
			if err != nil {
				t.Fatalf("dist %q: %v", d, err)
			}
			if len(p.Requests) != 200 || p.Requests[0].Arrival != 0 || p.Source != "200 generated requests" {
				t.Fatalf("dist %q: %d requests, first at %d, source %q", d, len(p.Requests), p.Requests[0].Arrival, p.Source)
			}
			lo, hi := 100, 5000
			if d == "fixed" {
				hi = 100
			}
			seen := map[int]bool{}
			for i, r := range p.Requests {
				if r.PromptTokens < lo || r.PromptTokens > hi || r.OutputTokens < 0 || r.OutputTokens > 7 {
					t.Fatalf("dist %q: request %+v", d, r)
				}
				if i > 0 && r.Arrival < p.Requests[i-1].Arrival {
					t.Fatalf("dist %q: arrivals out of order at %d", d, i)
				}
				seen[r.PromptTokens] = true
			}
			if d != "fixed" && len(seen) < 100 {
				t.Fatalf("dist %q: only %d distinct prompts in 200", d, len(seen))
			}
		}
	})
	t.Run("loguniform favours short prompts", func(t *testing.T) {
		s := read(t, base+"workload:\n  requests: {rate: 10, count: 2000, prompt: {dist: loguniform, min: 1000, max: 100000}, output: {dist: fixed, min: 1}}\n")
		p, err := Build(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Uniform in log space: 1K-10K and 10K-100K are equally likely.
		var below int
		for _, r := range p.Requests {
			if r.PromptTokens < 10_000 {
				below++
			}
		}
		if below < 850 || below > 1150 {
			t.Fatalf("%d of 2000 loguniform prompts below 10K, want about 1000", below)
		}
	})
	t.Run("lognormal gives the vLLM paper's ShareGPT means", func(t *testing.T) {
		// The parameters calib/README.md solved for the paper's means (161.31
		// in, 337.99 out, both truncated to [4, 1024]); 20,000 draws put the
		// sample means within about 2% (standard errors 1.1% and 0.8%).
		s := read(t, base+"workload:\n  requests: {rate: 10, count: 20000, prompt: {dist: lognormal, mu: 4.4619, sigma: 1.56, min: 4, max: 1024}, output: {dist: lognormal, mu: 5.7594, sigma: 1.0, min: 4, max: 1024}}\n")
		p, err := Build(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var in, out float64
		for _, r := range p.Requests {
			if r.PromptTokens < 4 || r.PromptTokens > 1024 || r.OutputTokens < 4 || r.OutputTokens > 1024 {
				t.Fatalf("request %+v outside [4, 1024]", r)
			}
			in += float64(r.PromptTokens)
			out += float64(r.OutputTokens)
		}
		n := float64(len(p.Requests))
		t.Logf("means %.2f in / %.2f out over %d requests", in/n, out/n, len(p.Requests))
		if in/n < 161.31*0.97 || in/n > 161.31*1.03 || out/n < 337.99*0.97 || out/n > 337.99*1.03 {
			t.Fatalf("means %.1f in / %.1f out, want 161.31 / 337.99 within 3%%", in/n, out/n)
		}
	})
	t.Run("lognormal errors", func(t *testing.T) {
		for _, tc := range []struct{ dist, want string }{
			{"{dist: lognormal, mu: 5, sigma: 0, min: 1, max: 100}", "0 < sigma"},
			{"{dist: lognormal, mu: .nan, sigma: 1, min: 1, max: 100}", "|mu| ≤ 20"},
			{"{dist: lognormal, mu: 15, sigma: 0.5, min: 1, max: 100}", "falls in [1, 100]"},
			{"{dist: uniform, mu: 5, min: 1, max: 100}", "mu and sigma belong to dist lognormal"},
		} {
			s := read(t, base+"workload:\n  requests: {rate: 10, count: 5, prompt: "+tc.dist+", output: {dist: fixed, min: 1}}\n")
			if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error containing %q", tc.dist, err, tc.want)
			}
		}
	})
	t.Run("sessions", func(t *testing.T) {
		s := read(t, base+`workload:
  sessions: {rate: 0.5, count: 5, min_turns: 2, max_turns: 4, system_tokens: 600, min_user: 10, max_user: 50, min_output: 5, max_output: 9, think_s: 3}
  bucket: 16
  beam: [1, 2]
`)
		p, err := Build(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Requests); n < 10 || n > 20 {
			t.Fatalf("%d turns for 5 sessions of 2-4 turns", n)
		}
		sessions := map[string]int{}
		widths := map[int]int{}
		for _, r := range p.Requests {
			sessions[r.Session]++
			widths[r.N]++
			if r.PromptTokens%16 != 0 {
				t.Fatalf("prompt %d not bucketed to 16", r.PromptTokens)
			}
		}
		if len(sessions) != 5 || len(widths) != 2 {
			t.Fatalf("sessions %v, widths %v", sessions, widths)
		}
		if !strings.Contains(p.Source, "generated chat turns") {
			t.Fatalf("source %q", p.Source)
		}
	})
	t.Run("sessions cut by duration", func(t *testing.T) {
		s := read(t, base+"duration: 20s\nworkload:\n  sessions: {rate: 0.5, min_turns: 1, max_turns: 30, min_user: 10, max_user: 50, min_output: 5, max_output: 9, think_s: 10}\n")
		p, err := Build(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Requests) == 0 {
			t.Fatal("no requests")
		}
		for _, r := range p.Requests {
			if r.Arrival >= 20e9 {
				t.Fatalf("turn %s at %d, after the 20 s window", r.ID, r.Arrival)
			}
		}
	})
	t.Run("timed trace", func(t *testing.T) {
		csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
			"2023-11-16 18:15:46.0000000,374,44\n" +
			"2023-11-16 18:15:47.5000000,1200,10\n" +
			"2023-11-16 18:15:47.5000000,bad,10\n" +
			"2023-11-16 18:15:49.0000000,80,0\n"
		s := read(t, base+"workload:\n  trace: {file: conv.csv, skip_bad_rows: true}\n")
		p, err := Build(s, memOpener(map[string]string{"conv.csv": csv}))
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 1_500_000_000, 3_000_000_000}
		if len(p.Requests) != 3 || p.Skipped != 1 || len(p.Warnings) != 1 {
			t.Fatalf("%d requests, %d skipped, warnings %q", len(p.Requests), p.Skipped, p.Warnings)
		}
		for i, r := range p.Requests {
			if r.Arrival != want[i] {
				t.Fatalf("request %d at %d, want %d", i, r.Arrival, want[i])
			}
		}
		if p.Requests[1].PromptTokens != 1200 || p.Requests[2].OutputTokens != 0 {
			t.Fatalf("requests %+v", p.Requests)
		}
		if p.Source != "trace conv.csv (azure, 3 requests)" {
			t.Fatalf("source %q", p.Source)
		}
		// rate rescales a timed trace: 3 requests over 3 s at 2/s take 1.5 s.
		s.Workload.Trace.Rate = 2
		p, err = Build(s, memOpener(map[string]string{"conv.csv": csv}))
		if err != nil {
			t.Fatal(err)
		}
		if last := p.Requests[2].Arrival; last == want[2] {
			t.Fatalf("rate 2 left the last arrival at %d", last)
		}
	})
	t.Run("length-only trace", func(t *testing.T) {
		csv := "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n74,918,992,0.08\n500,20,520,25\n12,1,13,12\n"
		open := memOpener(map[string]string{"sharegpt.csv": csv})
		s := read(t, base+"workload:\n  trace: {file: sharegpt.csv, format: vidur}\n")
		_, err := Build(s, open)
		if !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), "has no arrival times; give a rate") {
			t.Fatalf("length-only trace without a rate: %v", err)
		}
		s.Workload.Trace.Rate = 4
		p1, err := Build(s, open)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := Build(s, open)
		if len(p1.Requests) != 3 || p1.Requests[0].PromptTokens != 74 || p1.Requests[2].Arrival == 0 {
			t.Fatalf("requests %+v", p1.Requests)
		}
		if !reflect.DeepEqual(p1.Requests, p2.Requests) {
			t.Fatal("Poisson arrivals differ between two builds with one seed")
		}
		s.Seed++
		p3, _ := Build(s, open)
		if reflect.DeepEqual(p1.Requests, p3.Requests) {
			t.Fatal("another seed gives the same arrivals")
		}
	})
	t.Run("trace errors", func(t *testing.T) {
		s := read(t, base+"workload:\n  trace: {file: missing.csv}\n")
		if _, err := Build(s, memOpener(nil)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing file: %v", err)
		}
		if _, err := Build(s, nil); !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), "no way to open missing.csv") {
			t.Fatalf("nil opener: %v", err)
		}
		bad := memOpener(map[string]string{"missing.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,-5,1\n"})
		var werr *workload.Error
		if _, err := Build(s, bad); !errors.As(err, &werr) || werr.Line != 2 {
			t.Fatalf("bad row: %v", err)
		}
	})
}

// TestBuildRuns runs every config of a small scenario through the engine:
// what Build produces is what sim.New accepts.
func TestBuildRuns(t *testing.T) {
	s := read(t, `model: qwen2.5-7b
gpu: rtx3090-24g
seed: 3
engine: {max_seqs: 16}
workload:
  requests: {rate: 20, count: 30, prompt: {dist: loguniform, min: 100, max: 4000}, output: {dist: uniform, min: 1, max: 64}}
  beam: [1, 1, 2]
runs:
  - {kv: contiguous-max, alloc: caching}
  - {kv: "contiguous-max:oracle", alloc: caching}
  - {kv: contiguous-grow, alloc: "caching:expandable_segments:True"}
  - {kv: "paged:16", alloc: caching}
  - {kv: "vmm:2MiB", alloc: "vmm:2MiB"}
`)
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		p.Configs = p.Configs[len(p.Configs)-2:] // paged and vmm
	}
	for _, c := range p.Configs {
		e, err := sim.New(c, p.Requests)
		if err != nil {
			t.Fatalf("%s on %s: %v", c.KV, c.Alloc, err)
		}
		res, err := e.Run()
		if err != nil {
			t.Fatalf("%s on %s: %v", c.KV, c.Alloc, err)
		}
		if res.RequestsTotal != 30 || res.RequestsCompleted+res.RequestsFailedOOM+res.RequestsRejected != 30 {
			t.Fatalf("%s on %s: %+v", c.KV, c.Alloc, res)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildPairError: an impossible pair is refused by Build with the one
// message of strategy.CheckPair, wrapping both ErrBadScenario and
// strategy.ErrBadSpec; a spec that does not parse is refused as the file is
// read, naming its line and field (it is parsed once, there).
func TestBuildPairError(t *testing.T) {
	requests := "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"
	_, err := Build(read(t, base+"  - {kv: \"vmm:64KiB\", alloc: direct}\n"+requests), memOpener(nil))
	if !errors.Is(err, ErrBadScenario) || !errors.Is(err, strategy.ErrBadSpec) {
		t.Errorf("vmm:64KiB on direct: %v, want ErrBadScenario and strategy.ErrBadSpec", err)
	}
	for _, c := range []struct{ run, want string }{
		{"  - {kv: \"vmm:lots\", alloc: caching}\n", `test.yaml: line 6: field "kv": bad strategy spec: "vmm:lots": page size "lots"`},
		{"  - kv: paged:16\n    alloc: slab\n", `test.yaml: line 7: field "alloc": bad allocator spec: unknown allocator "slab"`},
		{"  - {kv: paged:16, alloc: caching, allocator: arena}\n", `line 6: field "runs[1].allocator": unknown field`},
	} {
		_, err := Read(strings.NewReader(base+c.run+requests), "test.yaml")
		if !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an ErrBadScenario naming %q", c.run, err, c.want)
		}
	}
}

// TestReadTrace: the one way in for a trace file (advise --trace uses it):
// the same requests Build reads, the whole file's SHA-256, and the trace
// section's checks with their field names.
func TestReadTrace(t *testing.T) {
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:46.0000000,374,44\n" +
		"2023-11-16 18:15:47.5000000,1200,10\n" +
		"2023-11-16 18:15:49.0000000,80,0\n"
	open := memOpener(map[string]string{"conv.csv": csv})
	tr, sum, err := ReadTrace(&Trace{File: "conv.csv", Format: "azure", MaxRows: 2}, open)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256([]byte(csv)); sum != hex.EncodeToString(want[:]) {
		t.Errorf("digest %s, want %x (the whole file, past max_rows)", sum, want)
	}
	p, err := Build(read(t, base+"workload:\n  trace: {file: conv.csv, format: azure, max_rows: 2}\n"), open)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.Requests, p.Requests) {
		t.Errorf("ReadTrace %+v, Build %+v", tr.Requests, p.Requests)
	}
	for _, c := range []struct {
		tr   Trace
		want string
	}{
		{Trace{Format: "azure"}, `workload.trace.file: missing`},
		{Trace{File: "conv.csv", Format: "parquet"}, `workload.trace.format: `},
		{Trace{File: "conv.csv", Run: 2, Format: "azure"}, `workload.trace.run: 2, but only benchmark result files`},
		{Trace{File: "none.csv"}, `workload.trace.file: `},
	} {
		if _, _, err := ReadTrace(&c.tr, open); !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an ErrBadScenario naming %q", c.tr, err, c.want)
		}
	}
}

// TestAllocsFor: the pairing rule with the registry's default: the listed
// allocators a strategy runs on, else its own (ok false), else an error
// when the registry refuses that one too.
func TestAllocsFor(t *testing.T) {
	allocs := []registry.Spec{registry.MustParse("caching"), registry.MustParse("vmm:2MiB")}
	for _, c := range []struct {
		kv, want string
		ok       bool
	}{
		{"paged:16", "caching vmm:2MiB", true},
		{"vmm:2MiB", "vmm:2MiB", true},
		{"vmm:64KiB", "vmm:64KiB", false},
	} {
		fit, ok, err := AllocsFor(strategy.MustParseSpec(c.kv), allocs)
		var got []string
		for _, a := range fit {
			got = append(got, a.String())
		}
		if err != nil || ok != c.ok || strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q, %v, %v; want %q, %v", c.kv, got, ok, err, c.want, c.ok)
		}
	}
	if _, _, err := AllocsFor(strategy.MustParseSpec("vmm:1000"), allocs); !errors.Is(err, alloc.ErrBadSpec) || !strings.Contains(err.Error(), "no allocator can run kv vmm:1000B") {
		t.Errorf("vmm:1000: %v", err)
	}
}
