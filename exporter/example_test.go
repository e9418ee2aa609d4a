package exporter_test

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// An engine that embeds gpufrag's block pool exports it next to its other
// metrics. The engine's scheduler and the scrape share one lock. A real
// engine would serve reg with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).
func ExampleNew() {
	var mu sync.Mutex
	pool, err := blockpool.New(101, 16, blockpool.Options{})
	if err != nil {
		panic(err)
	}
	mu.Lock()
	if _, err := pool.Allocate(nil, 25); err != nil {
		panic(err)
	}
	mu.Unlock()

	reg := prometheus.NewPedanticRegistry()
	_, err = exporter.New(reg,
		exporter.NewBlockPoolSource("kv",
			exporter.Labels{GPU: "0", Instance: "engine-0", Model: "llama-3-8b", Pool: "kv"}, pool, &mu),
	)
	if err != nil {
		panic(err)
	}

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			fmt.Println(f.GetName(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// gpufrag_kv_block_size_tokens 16
	// gpufrag_kv_blocks 101
	// gpufrag_kv_cache_usage_ratio 0.25
	// gpufrag_kv_cached_blocks 0
	// gpufrag_kv_evictable_blocks 0
	// gpufrag_kv_free_blocks 75
	// gpufrag_source_up 1
}
