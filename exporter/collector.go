package exporter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "gpufrag"

// labelNames are the labels of every per-series metric, in Labels.values order.
var labelNames = []string{"gpu", "instance", "model", "pool"}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	if labels == nil {
		labels = labelNames
	}
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// Memory metrics (definitions in package frag).
var (
	fragmentationDesc = newDesc("fragmentation_ratio",
		"Fragmentation rate: 1 - largest free block / cached free bytes (0 when nothing is cached).")
	healthDesc = newDesc("health_ratio",
		"Health: largest free block / cached free bytes (1 when nothing is cached); below 0.5 act.")
	internalFragDesc = newDesc("internal_fragmentation_ratio",
		"Share of allocated bytes lost to rounding: (allocated - requested) / allocated.")
	largestFreeDesc = newDesc("largest_free_block_bytes",
		"Largest free block inside any reserved segment.")
	maxAllocatableDesc = newDesc("max_allocatable_bytes",
		"Largest single request that would succeed now, counting memory the allocator would release first.")
	reservedDesc = newDesc("reserved_bytes",
		"Bytes held from the device by the allocator (sum of segment sizes).")
	allocatedDesc = newDesc("allocated_bytes",
		"Bytes in live blocks, after the allocator's rounding.")
	requestedDesc = newDesc("requested_bytes",
		"Bytes callers asked for, over live blocks.")
	cachedFreeDesc = newDesc("cached_free_bytes",
		"Reserved bytes not allocated (reserved - allocated).")
	deviceFreeDesc = newDesc("device_free_bytes",
		"Device memory held by nobody.")
	entropyDesc = newDesc("allocation_size_entropy",
		"Shannon entropy in bits of live allocation sizes over power-of-two buckets.")
	distinctSizesDesc = newDesc("allocation_distinct_sizes",
		"Number of distinct live allocation sizes.")
	oomsDesc = newDesc("ooms_total",
		"Requests that failed for lack of memory since the source started.")
)

// KV-cache block pool metrics.
var (
	kvUsageDesc = newDesc("kv_cache_usage_ratio",
		"KV-cache usage as vLLM computes it: 1 - free blocks / (blocks - 1).")
	kvBlocksDesc = newDesc("kv_blocks",
		"KV-cache pool size in blocks, including the null block (vLLM num_gpu_blocks).")
	kvFreeDesc = newDesc("kv_free_blocks",
		"KV-cache blocks in the free queue: free plus evictable prefix-cached blocks.")
	kvCachedDesc = newDesc("kv_cached_blocks",
		"KV-cache blocks in the prefix cache, held or evictable.")
	kvEvictableDesc = newDesc("kv_evictable_blocks",
		"Prefix-cached KV-cache blocks that no sequence holds.")
	kvBlockSizeDesc = newDesc("kv_block_size_tokens",
		"Token slots per KV-cache block.")
)

var sourceUpDesc = newDesc("source_up",
	"1 if the source's last collection succeeded, 0 if it failed.", "source")

var allDescs = []*prometheus.Desc{
	fragmentationDesc, healthDesc, internalFragDesc, largestFreeDesc,
	maxAllocatableDesc, reservedDesc, allocatedDesc, requestedDesc,
	cachedFreeDesc, deviceFreeDesc, entropyDesc, distinctSizesDesc, oomsDesc,
	kvUsageDesc, kvBlocksDesc, kvFreeDesc, kvCachedDesc, kvEvictableDesc,
	kvBlockSizeDesc, sourceUpDesc,
}

// Collector is a prometheus.Collector over a fixed set of sources. It keeps
// no state between scrapes and is safe for concurrent use if its sources are.
type Collector struct {
	sources []Source // sorted by name
}

// New returns a Collector over sources and registers it with reg. With a nil
// reg it is returned unregistered, for the caller to register. It fails on a
// nil source, an empty or repeated source name, or a registration error.
func New(reg prometheus.Registerer, sources ...Source) (*Collector, error) {
	c := &Collector{sources: slices.Clone(sources)}
	seen := make(map[string]bool, len(sources))
	for i, s := range c.sources {
		if s == nil {
			return nil, fmt.Errorf("exporter: source %d is nil", i)
		}
		name := s.Name()
		switch {
		case name == "":
			return nil, fmt.Errorf("exporter: source %d has an empty name", i)
		case seen[name]:
			return nil, fmt.Errorf("exporter: source name %q used twice", name)
		}
		seen[name] = true
	}
	slices.SortFunc(c.sources, func(a, b Source) int { return strings.Compare(a.Name(), b.Name()) })
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("exporter: register collector: %w", err)
		}
	}
	return c, nil
}

// Describe sends every Desc the collector can emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect collects every source in name order, one after the other, and
// sends its samples sorted by labels, then its gpufrag_source_up. A source that fails, or whose
// samples repeat a label set already exported in this scrape, sends only
// gpufrag_source_up 0.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	seenMem := make(map[Labels]bool)
	seenKV := make(map[Labels]bool)
	for _, s := range c.sources {
		samples, err := collectSource(s)
		if err == nil {
			err = checkSamples(samples, seenMem, seenKV)
		}
		up := 0.0
		if err == nil {
			up = 1
			for _, sm := range samples {
				emit(ch, sm)
			}
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, up, s.Name())
	}
}

// collectSource calls s.Collect, turning a panic into an error so that one
// broken source cannot take the scrape (or the process) down.
func collectSource(s Source) (samples []Sample, err error) {
	defer func() {
		if r := recover(); r != nil {
			samples, err = nil, fmt.Errorf("exporter: source %q panicked: %v", s.Name(), r)
		}
	}()
	samples, err = s.Collect()
	if err != nil {
		return nil, err
	}
	samples = slices.Clone(samples)
	sortSamples(samples)
	return samples, nil
}

var errDuplicate = errors.New("exporter: label set exported twice")

// checkSamples validates a source's samples against each other and against
// those already exported in this scrape and, if all are valid, records them
// as seen. Nothing is recorded when a sample is invalid.
func checkSamples(samples []Sample, seenMem, seenKV map[Labels]bool) error {
	mine := make(map[Labels]uint8, len(samples)) // bit 0: memory, bit 1: KV
	for _, sm := range samples {
		if err := sm.Labels.valid(); err != nil {
			return err
		}
		if sm.Memory != nil && sm.Memory.OOMs < 0 {
			return fmt.Errorf("exporter: negative OOM count %d", sm.Memory.OOMs)
		}
		var kind uint8
		if sm.Memory != nil {
			kind |= 1
		}
		if sm.KV != nil {
			kind |= 2
		}
		if mine[sm.Labels]&kind != 0 ||
			sm.Memory != nil && seenMem[sm.Labels] || sm.KV != nil && seenKV[sm.Labels] {
			return fmt.Errorf("%w: %+v", errDuplicate, sm.Labels)
		}
		mine[sm.Labels] |= kind
	}
	for l, kind := range mine {
		if kind&1 != 0 {
			seenMem[l] = true
		}
		if kind&2 != 0 {
			seenKV[l] = true
		}
	}
	return nil
}

func emit(ch chan<- prometheus.Metric, sm Sample) {
	lv := sm.Labels.values()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	if m := sm.Memory; m != nil {
		f := m.Metrics
		gauge(fragmentationDesc, f.FragRate)
		gauge(healthDesc, f.Health)
		gauge(internalFragDesc, f.InternalFrag)
		gauge(largestFreeDesc, float64(f.LargestFreeBlock))
		gauge(maxAllocatableDesc, float64(f.MaxAllocatable))
		gauge(reservedDesc, float64(f.Reserved))
		gauge(allocatedDesc, float64(f.Allocated))
		gauge(requestedDesc, float64(f.Requested))
		gauge(cachedFreeDesc, float64(f.CachedFree))
		gauge(deviceFreeDesc, float64(f.DeviceFree))
		gauge(entropyDesc, f.SizeEntropy)
		gauge(distinctSizesDesc, float64(f.DistinctSizes))
		ch <- prometheus.MustNewConstMetric(oomsDesc, prometheus.CounterValue, float64(m.OOMs), lv...)
	}
	if kv := sm.KV; kv != nil {
		gauge(kvUsageDesc, kv.Usage)
		gauge(kvBlocksDesc, float64(kv.Blocks))
		gauge(kvFreeDesc, float64(kv.Free))
		gauge(kvCachedDesc, float64(kv.Cached))
		gauge(kvEvictableDesc, float64(kv.Evictable))
		gauge(kvBlockSizeDesc, float64(kv.BlockSize))
	}
}
