package exporter

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkGather measures one scrape of gpus × instances fragmented caching
// allocators (issue 6's target: 8 × 16 under 5 ms p99). Run with
//
//	go test -run '^$' -bench Gather -benchmem ./exporter/
func BenchmarkGather(b *testing.B) {
	for _, n := range []struct{ gpus, instances int }{{1, 1}, {8, 16}} {
		b.Run(fmt.Sprintf("gpus=%d/instances=%d", n.gpus, n.instances), func(b *testing.B) {
			var srcs []Source
			for g := range n.gpus {
				for i := range n.instances {
					name := fmt.Sprintf("engine-%d-%d", g, i)
					srcs = append(srcs, NewAllocatorSource(name,
						Labels{GPU: fmt.Sprint(g), Instance: fmt.Sprint(i), Pool: "caching"},
						fragmentedCaching(b), nil))
				}
			}
			reg := prometheus.NewRegistry()
			if _, err := New(reg, srcs...); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
