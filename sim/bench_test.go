package sim_test

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
)

// The engine's speed in simulated requests per CPU-second, per KV strategy
// and allocator, and the default scenario end to end. Run with
//
//	go test -run '^$' -bench . -benchmem -count 6 ./sim/ | tee docs/bench/sim.txt
//
// and compare runs with benchstat.

// benchRequests is a fixed-seed workload of n independent requests on
// Llama-3.1-8B: Poisson arrivals at 10 per second, prompts log-uniform in
// [100, 8000] tokens and outputs uniform in [50, 500], about what one H100
// serves at a moderate load.
func benchRequests(b *testing.B, n int) []workload.Request {
	b.Helper()
	arr, err := workload.Poisson(10, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	lens := rand.New(rand.NewPCG(1, 2))
	reqs := make([]workload.Request, n)
	var at int64
	for i := range reqs {
		if i > 0 {
			at += arr.Gap()
		}
		lo, hi := 100.0, 8000.0
		prompt := int(lo * math.Pow(hi/lo, lens.Float64()))
		reqs[i] = workload.Request{ID: fmt.Sprintf("b%d", i), Arrival: at, PromptTokens: prompt,
			OutputTokens: 50 + lens.IntN(451), N: 1}
	}
	return reqs
}

// llamaH100 is the benchmarks' model and GPU: Llama-3.1-8B on one H100 80GB.
func llamaH100(b *testing.B) (model.Model, model.GPU) {
	b.Helper()
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		b.Fatal(err)
	}
	g, err := model.LookupGPU("h100-80g")
	if err != nil {
		b.Fatal(err)
	}
	return m, g
}

// BenchmarkEngine runs 2,000 requests through one engine per iteration and
// reports simulated requests per CPU-second (req/s: process CPU time, GC
// included, from getrusage) and engine steps and completed requests per run.
func BenchmarkEngine(b *testing.B) {
	m, g := llamaH100(b)
	reqs := benchRequests(b, 2000)
	for _, s := range []struct{ kv, alloc string }{
		{"paged:16", "caching"},
		{"paged:16", "caching:expandable_segments:True"},
		{"contiguous-max", "caching"},
		{"contiguous-max:oracle", "caching"},
		{"contiguous-grow", "caching"},
		{"contiguous-grow", "caching:expandable_segments:True"},
		{"vmm:2MiB", "vmm:2MiB"},
		{"paged:16", "async"},
		{"contiguous-grow", "async"},
	} {
		b.Run(fmt.Sprintf("kv=%s/alloc=%s", s.kv, s.alloc), func(b *testing.B) {
			c := sim.DefaultConfig(m, g)
			c.KV, c.Alloc = strategy.MustParseSpec(s.kv), registry.MustParse(s.alloc)
			b.ReportAllocs()
			var res sim.Result
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for range b.N {
				e, err := sim.New(c, reqs)
				if err != nil {
					b.Fatal(err)
				}
				if res, err = e.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(reqs))*float64(b.N)/(cpuSeconds()-cpu0), "req/s")
			b.ReportMetric(float64(res.Steps), "steps/op")
			b.ReportMetric(float64(res.RequestsCompleted), "completed/op")
		})
	}
}

// BenchmarkDefaultScenario builds scenario.Default and runs all its runs one
// after the other, as `gpufrag simulate` with no arguments does (target:
// under 10 s).
func BenchmarkDefaultScenario(b *testing.B) { benchDefaultScenario(b, nil) }

// benchDefaultScenario runs the default scenario's runs, each config first
// passed to prep when it is not nil (steptime_bench_test.go sets profiles).
func benchDefaultScenario(b *testing.B, prep func(*testing.B, []sim.Config)) {
	p, err := scenario.Build(scenario.Default(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if prep != nil {
		prep(b, p.Configs)
	}
	b.ReportAllocs()
	var steps int64
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for range b.N {
		steps = 0
		for _, c := range p.Configs {
			e, err := sim.New(c, p.Requests)
			if err != nil {
				b.Fatal(err)
			}
			res, err := e.Run()
			if err != nil {
				b.Fatal(err)
			}
			steps += res.Steps
		}
	}
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(len(p.Requests)*len(p.Configs))*float64(b.N)/cpu, "req/s")
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(steps), "steps/op")
}

// azureConvPaths are where BenchmarkAzureConv looks for the Azure LLM
// inference trace 2023 (conversation), relative to this package: the
// checkout's shared/ folder or one beside the checkout.
var azureConvPaths = []string{
	"../shared/data/traces/AzureLLMInferenceTrace_conv.csv",
	"../../shared/data/traces/AzureLLMInferenceTrace_conv.csv",
}

// BenchmarkAzureConv runs the whole Azure conv trace (19,366 requests) as
// the BLIS side by side in docs/benchmarks.md does: Llama-3.1-8B on one H100
// 80GB, paged:16 on the caching allocator, 2,048 batched tokens, 256
// sequences. It reports CPU-seconds per run and per request, and the steps
// the engine's fast paths covered, and is skipped when the trace is not
// there.
//
//	go test -run '^$' -bench AzureConv -benchmem -count 6 ./sim/
func BenchmarkAzureConv(b *testing.B) { benchAzureConv(b, nil) }

// benchAzureConv runs the Azure conv trace, its config first passed to prep
// when it is not nil.
func benchAzureConv(b *testing.B, prep func(*testing.B, []sim.Config)) {
	var file string
	for _, p := range azureConvPaths {
		if _, err := os.Stat(p); err == nil {
			file = p
			break
		}
	}
	if file == "" {
		b.Skip("the Azure conv trace is not in shared/data/traces")
	}
	s := scenario.Default()
	s.Model, s.GPU, s.Duration = "llama-3.1-8b", "h100-80g", 0
	s.Workload = scenario.Workload{Trace: &scenario.Trace{File: file, Format: "azure"}}
	s.Engine.MaxBatchTokens, s.Engine.MaxSeqs = 2048, 256
	s.Runs = []scenario.Run{{KV: scenario.KVSpec{Spec: strategy.PagedSpec(16)}, Alloc: scenario.AllocSpec{Spec: registry.Default()}}}
	p, err := scenario.Build(s, func(n string) (io.ReadCloser, error) { return os.Open(n) })
	if err != nil {
		b.Fatal(err)
	}
	if prep != nil {
		prep(b, p.Configs)
	}
	b.ReportAllocs()
	var res sim.Result
	var e *sim.Engine
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for range b.N {
		if e, err = sim.New(p.Configs[0], p.Requests); err != nil {
			b.Fatal(err)
		}
		if res, err = e.Run(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := (cpuSeconds() - cpu0) / float64(b.N)
	b.ReportMetric(cpu, "cpu-s/op")
	b.ReportMetric(cpu/float64(len(p.Requests))*1e6, "cpu-µs/req")
	b.ReportMetric(float64(res.Steps), "steps/op")
	b.ReportMetric(float64(res.RequestsCompleted), "completed/op")
	runSteps, tripRepeats := sim.FastPathSteps(e)
	b.ReportMetric(float64(runSteps), "decode-run-steps/op")
	b.ReportMetric(float64(tripRepeats), "repeated-trips/op")
}

// BenchmarkSparseLongRun runs 100 requests, one every 1,000 hours, over
// 100,000 simulated hours (3.6e8 sample times at one a second): a run whose
// cost is its idle time, not its 100 requests' steps. The engine jumps to
// each arrival; the samples of an idle stretch are one state, taken in one
// go and thinned as they are taken (MaxSamples), so a run costs its steps
// and the series it keeps. It reports CPU-seconds per run, the sampling
// loop's iterations, the samples taken and the samples kept.
//
//	go test -run '^$' -bench SparseLongRun -benchmem -count 6 ./sim/
func BenchmarkSparseLongRun(b *testing.B) {
	m, g := llamaH100(b)
	const hour = 3600 * int64(1e9)
	reqs := make([]workload.Request, 100)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("s%d", i), Arrival: int64(i) * 1000 * hour,
			PromptTokens: 1000 + 37*i, OutputTokens: 200 + 3*i, N: 1}
	}
	for _, kv := range []string{"paged:16", "contiguous-grow"} {
		b.Run("kv="+kv, func(b *testing.B) {
			c := sim.DefaultConfig(m, g)
			c.KV, c.Duration = strategy.MustParseSpec(kv), 100_000*hour
			b.ReportAllocs()
			var res sim.Result
			var e *sim.Engine
			var err error
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for range b.N {
				if e, err = sim.New(c, reqs); err != nil {
					b.Fatal(err)
				}
				if res, err = e.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
			iters, taken := sim.SampleWork(e)
			b.ReportMetric(float64(iters), "sample-iterations/op")
			b.ReportMetric(float64(taken), "samples-taken/op")
			b.ReportMetric(float64(len(res.Series.Time)), "samples-kept/op")
			b.ReportMetric(float64(res.Steps), "steps/op")
		})
	}
}

// BenchmarkSparseSessions runs the default scenario's six runs, one
// sub-benchmark each, on its sessions at 0.0001 a second over 1,000 hours
// (`simulate --duration 1000h --rate 0.0001`: 3,247 requests, 1.6M decode
// steps a run, the engine idle 99% of the time): a run whose cost should
// follow its arrivals, admissions and completions, not its decode steps.
// It reports CPU-seconds per run and the steps decode runs covered;
// -sparse-hours sets another duration (100000: the command).
//
//	go test -run '^$' -bench SparseSessions -benchmem -count 6 ./sim/
//	go test -run '^$' -bench 'SparseSessions/kv=paged' -benchtime 1x ./sim/ -args -sparse-hours 100000
func BenchmarkSparseSessions(b *testing.B) {
	s := scenario.Default()
	s.Duration = scenario.Duration(time.Duration(*sparseHours) * time.Hour)
	s.Workload.Sessions.Rate = 0.0001
	p, err := scenario.Build(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range p.Configs {
		b.Run("kv="+c.KV.String()+"/alloc="+c.Alloc.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuSeconds()
			var e *sim.Engine
			var res sim.Result
			for range b.N {
				e, res = runOnce(b, c, p.Requests)
			}
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(res.Steps), "steps/op")
			runSteps, _ := sim.FastPathSteps(e)
			b.ReportMetric(float64(runSteps), "decode-run-steps/op")
		})
	}
}

// sparseHours is BenchmarkSparseSessions' simulated duration.
var sparseHours = flag.Int("sparse-hours", 1000, "BenchmarkSparseSessions: simulated hours")

// runOnce builds an engine for c and runs reqs through it.
func runOnce(b *testing.B, c sim.Config, reqs []workload.Request) (*sim.Engine, sim.Result) {
	e, err := sim.New(c, reqs)
	if err != nil {
		b.Fatal(err)
	}
	res, err := e.Run()
	if err != nil {
		b.Fatal(err)
	}
	return e, res
}
