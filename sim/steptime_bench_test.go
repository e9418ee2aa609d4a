package sim_test

import (
	"io"
	"os"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// The engine's CPU cost with the Profile step-time model against the
// roofline's (BenchmarkDefaultScenario, BenchmarkAzureConv): the same runs
// with Config.Profile set to the GPU's embedded profile. Compare with
//
//	go test -run '^$' -bench 'AzureConv|DefaultScenario' -benchmem -count 6 ./sim/
//
// (the issue allows at most +20% CPU per simulated request).

// withProfiles sets every config's Profile to its GPU's embedded one.
func withProfiles(b *testing.B, cs []sim.Config) {
	b.Helper()
	for i := range cs {
		p, err := sim.DefaultProfile(cs[i].GPU.Name, cs[i].Engine)
		if err != nil {
			b.Fatal(err)
		}
		cs[i].Profile = p
	}
}

// BenchmarkDefaultScenarioProfile is BenchmarkDefaultScenario under the
// embedded h100-80g profile.
func BenchmarkDefaultScenarioProfile(b *testing.B) {
	p, err := scenario.Build(scenario.Default(), nil)
	if err != nil {
		b.Fatal(err)
	}
	withProfiles(b, p.Configs)
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

// BenchmarkAzureConvProfile is BenchmarkAzureConv under the embedded
// h100-80g profile; skipped when the trace is not there.
func BenchmarkAzureConvProfile(b *testing.B) {
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
	s.Runs = []scenario.Run{{KV: "paged:16", Alloc: "caching"}}
	p, err := scenario.Build(s, func(n string) (io.ReadCloser, error) { return os.Open(n) })
	if err != nil {
		b.Fatal(err)
	}
	withProfiles(b, p.Configs)
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
