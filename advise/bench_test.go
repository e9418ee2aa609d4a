package advise

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkSweep searches 4 candidates (paged:16 and contiguous-grow on
// caching and async) of the small test trace with the real simulator,
// with 1 and 2 workers; sims/op counts the simulations.
//
//	go test ./advise -run '^$' -bench Sweep -benchmem -count 6
func BenchmarkSweep(b *testing.B) {
	base, w := smallSetup(b, nil)
	sp := Space{KVs: []string{"paged:16", "contiguous-grow"}, Allocs: []string{"caching", "async"},
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
