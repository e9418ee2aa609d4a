package sizeclass

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// BenchmarkAllocFree times one free+alloc pair in steady state (see
// alloctest.BenchAllocFree). With the default classes every request of the
// benchmark's mix (512 B to 4 MiB) lands in the 8 MiB class, so a free is
// always followed by the reuse of the same slot. The paired variant
// allocator=sizeclass-fine spreads the same mix over classes 4× apart below
// 4 MiB, so free slots of one class pile up while another class needs new
// slabs: compare its frag-rate. Run as:
//
//	go test -run '^$' -bench . -benchmem ./alloc/sizeclass/
func BenchmarkAllocFree(b *testing.B) {
	alloctest.RunBenchAllocFree(b, Name, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, Config{}) })
	fine := Config{Classes: []int64{4 * mem.KiB, 16 * mem.KiB, 64 * mem.KiB, 256 * mem.KiB, mem.MiB, 4 * mem.MiB}}
	alloctest.RunBenchAllocFree(b, Name+"-fine", func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, fine) })
}

// BenchmarkStreams is alloctest.BenchStreams: a free+alloc pair with one
// live block on each of N streams, to show that the cost does not grow
// with the stream count. A 512 KiB class holds the benchmark's requests
// (64 B to 512 KiB): with the default 8 MiB slots, 20,000 of them would
// not fit in 80 GiB.
//
//	go test -run '^$' -bench BenchmarkStreams -benchmem -benchtime 2000x ./alloc/sizeclass/
func BenchmarkStreams(b *testing.B) {
	alloctest.RunBenchStreams(b, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, "512KiB/8MiB") })
}
