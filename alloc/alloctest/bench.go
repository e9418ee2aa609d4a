package alloctest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// BenchCapacity is the device used by BenchAllocFree: an 80 GiB GPU, the
// size of an A100/H100, large enough for 10,000 live blocks of the mix below.
const BenchCapacity = 80 * mem.GiB

// BenchSizes draws the request mix of BenchAllocFree: log-uniform sizes from
// 512 B to 4 MiB (activations and small tensors, both pools of the caching
// allocator), so that 10,000 live blocks fit in BenchCapacity with room for
// the cache. The seed is fixed, so every allocator sees the same requests.
func BenchSizes(n int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int64, n)
	for i := range out {
		// 2^(9 + 13u) for u uniform in [0,1): 512 B .. 4 MiB, then jitter
		// within the power of two so sizes are not all round.
		e := 9 + r.IntN(13)
		out[i] = int64(1)<<e + r.Int64N(int64(1)<<e)
	}
	return out
}

// BenchAllocFree measures one free+alloc pair in steady state with live
// blocks outstanding: it fills the allocator with live allocations, then each
// iteration frees a pseudo-randomly chosen live block and allocates a new one
// in its place. It reports the fragmentation rate reached after a fixed
// warm-up of 2×live steps as the custom metric "frag-rate" (frag.Compute), so
// quality shows beside speed and does not vary with b.N.
//
// Run as, for example:
//
//	go test ./alloc/... -run '^$' -bench 'BenchmarkAllocFree' -benchmem -count 6
func BenchAllocFree(b *testing.B, newA New, live int) {
	dev := mem.MustDevice(BenchCapacity, 0)
	a, err := newA(dev)
	if err != nil {
		b.Fatal(err)
	}
	const ring = 1 << 14
	sizes := BenchSizes(ring, 42)
	r := rand.New(rand.NewPCG(7, 7))
	victims := make([]int, ring)
	for i := range victims {
		victims[i] = r.IntN(live)
	}
	hs := make([]alloc.Handle, live)
	for i := range hs {
		blk, err := a.Alloc(sizes[i%ring], 0)
		if err != nil {
			b.Fatalf("fill %d: %v", i, err)
		}
		hs[i] = blk.Handle
	}
	// Warm up so the steady state (caches, free lists) is reached before timing.
	step := func(i int) {
		j := victims[i&(ring-1)]
		if err := a.Free(hs[j]); err != nil {
			b.Fatal(err)
		}
		blk, err := a.Alloc(sizes[(i*7+3)&(ring-1)], 0)
		if err != nil {
			b.Fatalf("alloc %d: %v", i, err)
		}
		hs[j] = blk.Handle
	}
	for i := range 2 * live {
		step(i)
	}
	// The fragmentation reached after the fixed warm-up, so the metric does
	// not depend on b.N.
	fr := frag.Compute(a.Layout()).FragRate
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	b.ReportMetric(fr, "frag-rate")
}

// BenchLiveCounts are the live-block counts of the standard benchmark.
var BenchLiveCounts = []int{100, 10000}

// RunBenchAllocFree runs BenchAllocFree as BenchmarkAllocFree/allocator=NAME/live=N.
func RunBenchAllocFree(b *testing.B, name string, newA New) {
	b.Run("allocator="+name, func(b *testing.B) {
		for _, n := range BenchLiveCounts {
			b.Run(fmt.Sprintf("live=%d", n), func(b *testing.B) { BenchAllocFree(b, newA, n) })
		}
	})
}

// BenchStreamCounts are the stream counts of BenchStreams: 100 as in a
// busy server, 1,000, and 20,000, a trace with a stream per request.
var BenchStreamCounts = []int{100, 1000, 20000}

// BenchStreams measures one free+alloc pair on an allocator shared by
// streams streams, each holding one live block: each iteration frees a
// pseudo-randomly chosen stream's block and allocates a new one on that
// stream, and every 64th iteration is followed by a Sync where the
// allocator has one, so frees are pending on up to 64 streams at a time.
// Requests are BenchSizes / 8 (64 B to 512 KiB), small-pool sizes, so that
// the caching allocator's per-stream 2 MiB segments for 20,000 streams fit
// in BenchCapacity. Setup (one allocation per stream) is outside the
// timer. An allocator whose per-operation cost grows with the stream count
// shows it here.
func BenchStreams(b *testing.B, newA New, streams int) {
	a, err := newA(mem.MustDevice(BenchCapacity, 0))
	if err != nil {
		b.Fatal(err)
	}
	sy, _ := a.(alloc.Syncer)
	const ring = 1 << 14
	sizes := BenchSizes(ring, 42)
	for i := range sizes {
		sizes[i] /= 8
	}
	r := rand.New(rand.NewPCG(7, 7))
	hs := make([]alloc.Handle, streams)
	for i := range hs {
		blk, err := a.Alloc(sizes[i&(ring-1)], i)
		if err != nil {
			b.Fatalf("fill %d: %v", i, err)
		}
		hs[i] = blk.Handle
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := r.IntN(streams)
		if err := a.Free(hs[j]); err != nil {
			b.Fatal(err)
		}
		blk, err := a.Alloc(sizes[(i*7+3)&(ring-1)], j)
		if err != nil {
			b.Fatalf("alloc %d: %v", i, err)
		}
		hs[j] = blk.Handle
		if sy != nil && i%64 == 63 {
			sy.Sync()
		}
	}
}

// RunBenchStreams runs BenchStreams as BenchmarkStreams/streams=N.
func RunBenchStreams(b *testing.B, newA New) {
	for _, n := range BenchStreamCounts {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { BenchStreams(b, newA, n) })
	}
}
