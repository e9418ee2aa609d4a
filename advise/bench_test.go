package advise

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// BenchmarkSweep searches 4 candidates (paged:16 and contiguous-grow on
// caching and async) of the small test trace with the real simulator,
// with 1 and 2 workers; sims/op counts the simulations.
//
//	go test ./advise -run '^$' -bench Sweep -benchmem -count 6
func BenchmarkSweep(b *testing.B) {
	base, w := smallSetup(b, nil)
	sp := Space{KVs: kvs("paged:16", "contiguous-grow"), Allocs: als("caching", "async"),
		Utils: []float64{0.9}, Buckets: []int{0}, Defrags: []string{"off"}}
	cs, err := sp.Candidates()
	if err != nil {
		b.Fatal(err)
	}
	s := DefaultSearch()
	s.StartRPS = w.NativeRPS
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var sims atomic.Int64
			sim := SimEvaluator(base, w)
			eval := func(st Settings, rate float64) (Outcome, error) {
				sims.Add(1)
				return sim(st, rate)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Run(cs, nil, eval, Options{SLO: DefaultSLO(), Search: s, Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sims.Load())/float64(b.N), "sims/op")
		})
	}
}

// BenchmarkDefaultSweep runs the default sweep (DefaultSpace, the shared
// Azure conversation trace has no prefix ids so prefix caching stays on) of
// `gpufrag advise --trace AzureLLMInferenceTrace_conv.csv --model
// llama-3.1-8b --gpu a100-80g` as the CLI runs it: each run stopped once it
// is certain to fail (sim.Config.EarlyStop) and the bisection pruned to the
// candidates that can reach the top two (Options.Prune), against the
// whole search (every run to its end, every candidate bisected), on the
// trace's first 2,000 requests and, for the CLI's way only, on all 19,366.
// Skipped without ../shared/data.
//
//	go test ./advise -run '^$' -bench DefaultSweep -benchtime 1x -count 3
func BenchmarkDefaultSweep(b *testing.B) {
	for _, tc := range []struct {
		name    string
		rows    int
		fast    bool
		workers int
	}{{"rows=2000/whole", 2000, false, 2}, {"rows=2000/cli", 2000, true, 2}, {"rows=all/cli", 0, true, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			base, w := azureSetup(b, tc.rows)
			sp := DefaultSpace()
			sp.PrefixCaching = sp.PrefixCaching[:1]
			cs, err := sp.Candidates()
			if err != nil {
				b.Fatal(err)
			}
			s := DefaultSearch()
			s.StartRPS = w.NativeRPS
			slo := DefaultSLO()
			var sims atomic.Int64
			count := func(e Evaluator) Evaluator {
				return func(st Settings, rate float64) (Outcome, error) {
					sims.Add(1)
					return e(st, rate)
				}
			}
			o := Options{SLO: slo, Search: s, Workers: tc.workers}
			eval := count(SimEvaluator(base, w))
			if tc.fast {
				stopping := base
				stopping.EarlyStop = sim.EarlyStop{OnFailure: true, TTFTP99: slo.TTFTP99, TPOTP99: slo.TPOTP99}
				eval, o.Rerun, o.Prune = count(SimEvaluator(stopping, w)), count(SimEvaluator(base, w)), true
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Run(cs, nil, eval, o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sims.Load())/float64(b.N), "sims/op")
		})
	}
}
