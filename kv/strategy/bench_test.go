package strategy

import (
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// BenchmarkLifecycle admits a request, decodes its output one token per
// Grow and releases it, for each strategy, with up to 32 requests live so
// the allocator and pool have company. It reports Breakdown.KVWaste after
// the last request.
//
//	go test ./kv/strategy -run '^$' -bench Lifecycle -benchmem
func BenchmarkLifecycle(b *testing.B) {
	for _, ps := range propSpecs {
		b.Run("strategy="+ps.strategy+"/alloc="+ps.alloc, func(b *testing.B) {
			env := newEnv(b, ps.alloc, 4*mem.GiB, 1*mem.GiB)
			env.MaxContext = 1024
			s, err := Parse(ps.strategy, env)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			const window = 32
			var waste float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := SeqID(i)
				if i >= window {
					if err := s.Release(id - window); err != nil {
						b.Fatal(err)
					}
				}
				prompt := 1 + rng.IntN(512)
				out := rng.IntN(1024 - prompt)
				if err := s.Admit(id, Request{Prompt: prompt, MaxOutput: 1024 - prompt, TrueOutput: out, N: 1}); err != nil {
					b.Fatal(err)
				}
				for range out {
					if err := s.Grow(id, 1); err != nil {
						b.Fatal(err)
					}
				}
				waste = s.Usage().KVWaste()
			}
			b.ReportMetric(waste, "kv-waste")
		})
	}
}
