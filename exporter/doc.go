// Package exporter bridges gpufrag's domain state to Prometheus (STYLE.md
// items 14 and 15). Domain packages (alloc, frag, kv/blockpool, ...) never
// import Prometheus: they expose plain snapshots (alloc.Stats, mem.Layout,
// blockpool.Stats) and this package turns those snapshots into metrics at
// scrape time.
//
// # Sources
//
// A Source returns one Sample per label set (gpu, instance, model, pool) each
// time it is collected. Two sources ship here for in-process use, so that a Go
// engine embedding gpufrag's allocators or block pool exports the same metrics
// as the gpufrag exporter daemon:
//
//   - AllocatorSource bridges any alloc.Allocator: frag.Compute over its
//     Layout (which carries MaxAllocatable) plus the OOM counter of its Stats.
//   - BlockPoolSource bridges a *blockpool.Pool: vLLM's usage gauge and the
//     free, cached and evictable block counts.
//
// Allocators and pools are not safe for concurrent use, and Prometheus
// collects from the HTTP handler's goroutine, so both sources take the
// sync.Locker that the engine already holds around its allocator or pool
// (nil when the caller serialises scrapes with its own work in another way).
// FuncSource adapts any function, for snapshot files, remote endpoints and
// tests.
//
// # Collector
//
// Collector implements prometheus.Collector over a fixed set of sources with
// package-level Descs and MustNewConstMetric: nothing is stored between
// scrapes, so each scrape reflects the sources' state at that moment. New
// takes the Registerer to use (never the global default registry implicitly).
//
// Each source reports gpufrag_source_up{source="..."}: 1 when its Collect
// succeeded, 0 when it returned an error, panicked, or produced invalid or
// duplicate label sets. A failing source contributes no other series for that
// scrape and never fails the scrape as a whole, so the other sources keep
// being exported.
//
// # Metrics
//
// Memory (per gpu, instance, model, pool; definitions in package frag):
//
//	gpufrag_fragmentation_ratio           frag_rate = 1 − health
//	gpufrag_health_ratio                  largest_free_block ÷ cached_free
//	gpufrag_internal_fragmentation_ratio  (allocated − requested) ÷ allocated
//	gpufrag_largest_free_block_bytes
//	gpufrag_max_allocatable_bytes
//	gpufrag_reserved_bytes
//	gpufrag_allocated_bytes
//	gpufrag_requested_bytes
//	gpufrag_cached_free_bytes
//	gpufrag_device_free_bytes
//	gpufrag_allocation_size_entropy       Shannon entropy in bits (see below)
//	gpufrag_allocation_distinct_sizes
//	gpufrag_ooms_total                    counter
//
// KV-cache block pools (per gpu, instance, model, pool):
//
//	gpufrag_kv_cache_usage_ratio   1 − free ÷ (blocks − 1), vllm:kv_cache_usage_perc
//	gpufrag_kv_blocks              pool size including the null block (vLLM num_gpu_blocks)
//	gpufrag_kv_free_blocks         free queue: free plus evictable cached blocks
//	gpufrag_kv_cached_blocks       blocks in the prefix cache, held or evictable
//	gpufrag_kv_evictable_blocks    cached blocks with no holder
//	gpufrag_kv_block_size_tokens   token slots per block
//
// Per source:
//
//	gpufrag_source_up{source}
//
// The entropy gauge is named without a unit suffix: "bits" is rejected by
// Prometheus' metric lint (it asks for base unit bytes), and an entropy is
// not a quantity of memory. Its HELP text states the unit.
//
// Labels have bounded cardinality: gpu, instance, model and pool (source only
// on gpufrag_source_up). Empty label values are allowed and exported as
// empty strings, which Prometheus treats as absent.
package exporter
