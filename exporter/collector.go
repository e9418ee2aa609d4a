package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "gpufrag"

// labelNames are the labels of every per-series metric, in Labels.values order.
var labelNames = []string{"gpu", "instance", "model", "pool"}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	if labels == nil {
		labels = labelNames
	}
	fq := prometheus.BuildFQName(namespace, "", name)
	d := prometheus.NewDesc(fq, help, labels, nil)
	recordDesc(d, fq, help)
	return d
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
		"Largest single request that would succeed now, counting memory the allocator would release first; absent where the device's capacity is unknown.")
	reservedDesc = newDesc("reserved_bytes",
		"Bytes held from the device by the allocator (sum of segment sizes).")
	allocatedDesc = newDesc("allocated_bytes",
		"Bytes in live blocks, after the allocator's rounding (for snapshots as PyTorch counts allocated_bytes: not blocks awaiting other streams).")
	requestedDesc = newDesc("requested_bytes",
		"Bytes callers asked for, over live blocks.")
	cachedFreeDesc = newDesc("cached_free_bytes",
		"Reserved bytes in free blocks inside the segments.")
	deviceFreeDesc = newDesc("device_free_bytes",
		"Device memory held by nobody; absent where the device's capacity is unknown.")
	entropyDesc = newDesc("allocation_size_entropy",
		"Shannon entropy in bits of live allocation sizes over power-of-two buckets.")
	distinctSizesDesc = newDesc("allocation_distinct_sizes",
		"Number of distinct live allocation sizes.")
	oomsDesc = newDesc("ooms_total",
		"Requests that failed for lack of memory since the source started.")
	lastOOMDesc = newDesc("last_oom_timestamp_seconds",
		"When the OOM counted last in gpufrag_ooms_total happened, unix seconds (0: none yet); snapshot files only.")
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

// Inference-engine counters (vLLM, SGLang), per gpu, instance, model, pool.
var (
	kvPreemptionsDesc = newDesc("kv_preemptions_total",
		"Sequences the engine preempted for lack of KV-cache blocks (vllm:num_preemptions).")
	kvPrefixQueriesDesc = newDesc("kv_prefix_cache_queries_total",
		"Tokens looked up in the engine's prefix cache (vllm:prefix_cache_queries).")
	kvPrefixHitsDesc = newDesc("kv_prefix_cache_hits_total",
		"Tokens found in the engine's prefix cache (vllm:prefix_cache_hits).")
)

// GPU device memory, per gpu (index).
var (
	gpuTotalDesc = newDesc("gpu_memory_total_bytes", "Device memory of the GPU, as the driver reports it.", "gpu")
	gpuUsedDesc  = newDesc("gpu_memory_used_bytes", "Device memory in use on the GPU, as the driver reports it.", "gpu")
	gpuFreeDesc  = newDesc("gpu_memory_free_bytes", "Device memory free on the GPU, as the driver reports it.", "gpu")
	gpuInfoDesc  = newDesc("gpu_info", "GPU identity; always 1.", "gpu", "uuid", "name")
	gpuProcDesc  = newDesc("gpu_process_memory_used_bytes", "Device memory used by one process on the GPU.", "gpu", "pid")
)

// Cluster occupancy, per cluster.
var (
	clusterNodesDesc     = newDesc("cluster_nodes", "Nodes in the cluster.", "cluster")
	clusterGPUsDesc      = newDesc("cluster_gpus", "GPUs in the cluster.", "cluster")
	clusterAllocDesc     = newDesc("cluster_allocated_gpus", "GPUs requested by bound pods (milli-GPUs / 1000).", "cluster")
	clusterWholeFreeDesc = newDesc("cluster_whole_free_nodes", "GPU nodes with every GPU free.", "cluster")
	clusterStrandedDesc  = newDesc("cluster_stranded_gpu_nodes", "Nodes with idle GPUs that no pending pod can use.", "cluster")
	clusterPendingDesc   = newDesc("cluster_pending_pods", "Pods waiting for GPUs.", "cluster")
)

var sourceUpDesc = newDesc("source_up",
	"1 if the source's last collection succeeded, 0 if it failed.", "source")

var allDescs = []*prometheus.Desc{
	fragmentationDesc, healthDesc, internalFragDesc, largestFreeDesc,
	maxAllocatableDesc, reservedDesc, allocatedDesc, requestedDesc,
	cachedFreeDesc, deviceFreeDesc, entropyDesc, distinctSizesDesc, oomsDesc, lastOOMDesc,
	kvUsageDesc, kvBlocksDesc, kvFreeDesc, kvCachedDesc, kvEvictableDesc,
	kvBlockSizeDesc, kvPreemptionsDesc, kvPrefixQueriesDesc, kvPrefixHitsDesc,
	gpuTotalDesc, gpuUsedDesc, gpuFreeDesc, gpuInfoDesc, gpuProcDesc,
	clusterNodesDesc, clusterGPUsDesc, clusterAllocDesc, clusterWholeFreeDesc,
	clusterStrandedDesc, clusterPendingDesc,
	sourceUpDesc,
}

// Options tune a Collector. The zero value is New's behaviour.
type Options struct {
	// SourceTimeout bounds each ContextSource's collection per scrape
	// (0: no deadline, and the source is called on the scrape's goroutine).
	SourceTimeout time.Duration
	// MaxSeries caps the series one scrape exports (0: no cap). Sources are
	// exported in name order; a source whose series would pass the cap is
	// reported down for that scrape instead.
	MaxSeries int
	// Logger receives one line per change of a source's state (up to down
	// and back), never one per scrape. Nil: no logs.
	Logger *slog.Logger
}

// Collector is a prometheus.Collector over a fixed set of sources. Between
// scrapes it keeps only each VersionedSource's metrics for its current
// version and each source's last up/down state (for logging); it is safe
// for concurrent use if its sources are.
type Collector struct {
	sources []Source // sorted by name
	opts    Options

	mu      sync.Mutex
	state   map[string]bool // last reported up state per source
	cache   []cached        // per source, for VersionedSources
	flights []*flight       // per source, the ContextSource collection running
	prep    *prepared       // the families last assembled (Gatherer)

	// allVersioned: every source is a VersionedSource, so the families can
	// be kept between changes (prepared.go).
	allVersioned bool
	// gathering: Gatherer was called; metricsOf writes each source's
	// series once (cached.dtos) for assemble.
	gathering atomic.Bool
	// dirty and preparing coalesce the change hooks (changed); prepWG
	// counts the preparations running (one at most).
	dirty, preparing atomic.Bool
	prepWG           sync.WaitGroup

	fmtMu   sync.Mutex
	formats []formatUse // the formats scraped lately (encoded.go)
}

// VersionedSource is a Source whose samples change only at known moments
// (a background poll, a rescan): CollectVersioned returns them with a
// version that changes whenever they do. The Collector then builds the
// source's metrics once per version and re-sends them on later scrapes
// (through Collector.Gatherer, the families assembled and encoded from
// them are kept per state of the sources as well: prepared.go, encoded.go;
// the runtime collectors are gathered anew on every scrape). It is kept because it
// pays at Prometheus' intervals as soon as more than one server scrapes:
// with 8 GPUs × 16 polled instances polled every 15 s, two Prometheus
// replicas scraping every 15 s cost 5.8 CPU-ms a scrape with it and 9.3
// without, four 5.2 and 10.1; one replica never hits it (a rescan or a
// poll falls between any two of its scrapes) and costs 9.7 either way
// (BenchmarkScrapeInterval; docs/benchmarks.md, "Benchmarks: package
// exporter").
type VersionedSource interface {
	Source
	CollectVersioned() (samples []Sample, version uint64, err error)
}

// cached holds one VersionedSource's metrics for one version.
type cached struct {
	ok        bool
	versioned bool
	version   uint64
	metrics   []prometheus.Metric
	dtos      []famMetric // metrics written, once Gatherer is called
	keys      []seenKey
	series    int
}

// sourceResult is one source's part of a collection (pass).
type sourceResult struct {
	ent  cached // its metrics, when up
	up   float64
	name string
	// in is what the pass read of a VersionedSource: 0 when its own
	// collection failed, else its version + 1 (prepared.in); err is why
	// it is down (its own error, a check of its samples, a clash, the
	// cap), nil when up.
	in  uint64
	err error
}

// New returns a Collector over sources and registers it with reg. With a nil
// reg it is returned unregistered, for the caller to register. It fails on a
// nil source, an empty or repeated source name, or a registration error.
func New(reg prometheus.Registerer, sources ...Source) (*Collector, error) {
	return NewWithOptions(reg, Options{}, sources...)
}

// NewWithOptions is New with options.
func NewWithOptions(reg prometheus.Registerer, opts Options, sources ...Source) (*Collector, error) {
	if opts.SourceTimeout < 0 || opts.MaxSeries < 0 {
		return nil, fmt.Errorf("exporter: negative option in %+v", opts)
	}
	c := &Collector{
		sources: slices.Clone(sources),
		opts:    opts,
		state:   make(map[string]bool, len(sources)),
		cache:   make([]cached, len(sources)),
		flights: make([]*flight, len(sources)),
	}
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
	c.allVersioned = true
	for _, s := range c.sources {
		if _, ok := s.(VersionedSource); !ok {
			c.allVersioned = false
		}
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
// sends its samples sorted by labels, then its gpufrag_source_up. A source
// that fails, times out, or whose samples repeat a label set already exported
// in this scrape (or would pass Options.MaxSeries), sends only
// gpufrag_source_up 0.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for i, r := range c.pass(true) {
		if r.up == 1 {
			for _, m := range r.ent.metrics {
				ch <- m
			}
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, r.up, c.sources[i].Name())
	}
}

// pass collects every source in name order and decides which are up, as
// Collect documents; with log, it logs each change of a source's state
// (a scrape's pass does, not the one that prepares families after a
// change, which can see a source not polled yet while the daemon starts).
func (c *Collector) pass(log bool) []sourceResult {
	out := make([]sourceResult, len(c.sources))
	seen := make(map[seenKey]bool)
	series := 0
	for i, s := range c.sources {
		ent, in, err := c.metricsOf(i, s)
		if err == nil {
			for _, k := range ent.keys {
				if seen[k] {
					err = fmt.Errorf("%w: %+v", errDuplicate, k.labels)
					break
				}
			}
		}
		// A source over the cap on its own has no metrics built (metricsOf)
		// and is always refused here.
		if err == nil && c.opts.MaxSeries > 0 && series+ent.series > c.opts.MaxSeries {
			err = fmt.Errorf("exporter: %d series would pass the cap of %d (--max-series)", series+ent.series, c.opts.MaxSeries)
		}
		up := 0.0
		if err == nil {
			up = 1
			series += ent.series
			for _, k := range ent.keys {
				seen[k] = true
			}
		}
		if log {
			c.logState(s.Name(), err)
		}
		out[i] = sourceResult{ent: ent, up: up, name: s.Name(), in: in, err: err}
	}
	return out
}

// metricsOf collects source i and returns its metrics, from the cache when
// a VersionedSource's version has not changed, and what it read of a
// VersionedSource (sourceResult.in). The error is the source's own or a
// check of its samples.
func (c *Collector) metricsOf(i int, s Source) (cached, uint64, error) {
	vs, versioned := s.(VersionedSource)
	var samples []Sample
	var version uint64
	var err error
	if versioned {
		if sv, ok := s.(stateVersioner); ok {
			// The version alone first: the samples are copied only when
			// the cache does not hold them.
			if version, err = sv.stateVersion(); err != nil {
				return cached{}, 0, err
			}
			if ent, ok := c.cachedAt(i, version); ok {
				return ent, version + 1, nil
			}
		}
		err = recovered(s.Name(), func() (err error) {
			samples, version, err = vs.CollectVersioned()
			return err
		})
		if err != nil {
			return cached{}, 0, err
		}
		if ent, ok := c.cachedAt(i, version); ok {
			return ent, version + 1, nil
		}
		samples = slices.Clone(samples)
		sortSamples(samples)
	} else if samples, err = c.collectSource(i, s); err != nil {
		return cached{}, 0, err
	}
	in := uint64(0)
	if versioned {
		in = version + 1
	}
	keys, err := checkSamples(samples)
	if err != nil {
		return cached{}, in, err
	}
	ent := cached{ok: true, versioned: versioned, version: version, keys: keys, series: countSeries(samples)}
	if c.opts.MaxSeries == 0 || ent.series <= c.opts.MaxSeries {
		ent.metrics = buildMetrics(samples, ent.series)
		if c.gathering.Load() {
			ent.dtos = writeMetrics(ent.metrics)
		}
	}
	if versioned {
		c.mu.Lock()
		c.cache[i] = ent
		c.mu.Unlock()
	}
	return ent, in, nil
}

// cachedAt returns source i's cached metrics when they are of version.
func (c *Collector) cachedAt(i int, version uint64) (cached, bool) {
	c.mu.Lock()
	ent := c.cache[i]
	c.mu.Unlock()
	if !ent.ok || ent.version != version {
		return cached{}, false
	}
	if ent.dtos == nil && ent.metrics != nil && c.gathering.Load() {
		ent.dtos = writeMetrics(ent.metrics) // cached before Gatherer was called
		c.mu.Lock()
		c.cache[i] = ent
		c.mu.Unlock()
	}
	return ent, true
}

// stateVersioner is a VersionedSource that tells its version (or its
// error) without copying its samples: PolledSource and SnapshotDir. A
// scrape that finds every source at the version its families were
// prepared from reads no samples (Collector.unchanged).
type stateVersioner interface {
	stateVersion() (uint64, error)
}

// versionOf returns what CollectVersioned would return of s but its
// samples.
func versionOf(s VersionedSource) (version uint64, err error) {
	if sv, ok := s.(stateVersioner); ok {
		return sv.stateVersion()
	}
	err = recovered(s.Name(), func() (err error) {
		_, version, err = s.CollectVersioned()
		return err
	})
	return version, err
}

// recovered runs fn, turning a panic into an error.
func recovered(name string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("exporter: source %q panicked: %v", name, r)
		}
	}()
	return fn()
}

// logState logs a source's first state when it is down, and every change;
// not the first down state of a source from NewOffSource, whose caller
// logged it.
func (c *Collector) logState(name string, err error) {
	if c.opts.Logger == nil {
		return
	}
	up := err == nil
	c.mu.Lock()
	was, known := c.state[name]
	c.state[name] = up
	c.mu.Unlock()
	var off offError
	switch {
	case known && was == up:
	case !known && errors.As(err, &off):
	case up && known:
		c.opts.Logger.Info("source up", "source", name)
	case !up:
		c.opts.Logger.Warn("source down", "source", name, "err", err.Error())
	}
}

// flight is one running collection of a ContextSource, shared by the
// scrapes that arrive while it runs.
type flight struct {
	done    chan struct{}
	samples []Sample
	err     error
}

// collectSource collects s (the i-th source), turning a panic into an error
// so that one broken source cannot take the scrape (or the process) down,
// and bounding a ContextSource by Options.SourceTimeout: the collection runs
// in its own goroutine with that deadline; scrapes that arrive while it runs
// wait for the same call (each at most the timeout) instead of starting
// another, so a hung source holds one goroutine however often it is scraped.
func (c *Collector) collectSource(i int, s Source) ([]Sample, error) {
	cs, ok := s.(ContextSource)
	if !ok || c.opts.SourceTimeout <= 0 {
		var fn func() ([]Sample, error) = s.Collect
		if ok {
			fn = func() ([]Sample, error) { return cs.CollectContext(context.Background()) }
		}
		return safeCollect(s.Name(), fn)
	}
	c.mu.Lock()
	f := c.flights[i]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.flights[i] = f
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.SourceTimeout)
			defer cancel()
			f.samples, f.err = safeCollect(s.Name(), func() ([]Sample, error) { return cs.CollectContext(ctx) })
			c.mu.Lock()
			c.flights[i] = nil
			c.mu.Unlock()
			close(f.done)
		}()
	}
	c.mu.Unlock()
	timer := time.NewTimer(c.opts.SourceTimeout)
	defer timer.Stop()
	select {
	case <-f.done:
		return slices.Clone(f.samples), f.err
	case <-timer.C:
		return nil, fmt.Errorf("exporter: source %q: no answer within %v", s.Name(), c.opts.SourceTimeout)
	}
}

func safeCollect(name string, fn func() ([]Sample, error)) (samples []Sample, err error) {
	defer func() {
		if r := recover(); r != nil {
			samples, err = nil, fmt.Errorf("exporter: source %q panicked: %v", name, r)
		}
	}()
	samples, err = fn()
	if err != nil {
		return nil, err
	}
	samples = slices.Clone(samples)
	sortSamples(samples)
	return samples, nil
}
