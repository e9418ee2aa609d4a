package vmm

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// BenchmarkAllocFree times one free+alloc pair in steady state (see
// alloctest.BenchAllocFree), with the default 2 MiB pages. Run as:
//
//	go test -run '^$' -bench . -benchmem ./alloc/vmm/
func BenchmarkAllocFree(b *testing.B) {
	alloctest.RunBenchAllocFree(b, Name, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, DefaultConfig()) })
}

// BenchmarkStreams is alloctest.BenchStreams: a free+alloc pair with one
// live block on each of N streams, to show that the cost does not grow
// with the stream count.
//
//	go test -run '^$' -bench BenchmarkStreams -benchmem -benchtime 2000x ./alloc/vmm/
func BenchmarkStreams(b *testing.B) {
	alloctest.RunBenchStreams(b, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, DefaultConfig()) })
}
