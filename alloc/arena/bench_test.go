package arena

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// BenchmarkAllocFree is the shared steady-state free+alloc benchmark on an
// 80 GiB device with the default arena (0.9 of it). Run as:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./alloc/arena/
//
// On the project's shared 2-core VM (AMD EPYC at 2.4 GHz, timings swinging
// ±25% with the neighbours' load) it measured 245–350 ns/op at live=100 and
// 320–450 ns/op at live=10000, 0 B/op and 0 allocs/op, frag-rate 0.005,
// over several -count 6 runs. The pair is one TakeBestFit, one Insert and a
// slot-table Put and Delete: about eight bin-tree operations in all (the
// harness and the slot table alone take ~20 ns).
func BenchmarkAllocFree(b *testing.B) {
	alloctest.RunBenchAllocFree(b, Name, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, DefaultConfig()) })
}

// BenchmarkStreams is alloctest.BenchStreams: a free+alloc pair with one
// live block on each of N streams, to show that the cost does not grow
// with the stream count.
//
//	go test -run '^$' -bench BenchmarkStreams -benchmem -benchtime 2000x ./alloc/arena/
func BenchmarkStreams(b *testing.B) {
	alloctest.RunBenchStreams(b, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, DefaultConfig()) })
}
