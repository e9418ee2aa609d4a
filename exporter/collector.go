package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	cachedFreeDesc, deviceFreeDesc, entropyDesc, distinctSizesDesc, oomsDesc,
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

// Collector is a prometheus.Collector over a fixed set of sources. It keeps
// no samples between scrapes (only each source's last up/down state, for
// logging) and is safe for concurrent use if its sources are.
type Collector struct {
	sources []Source // sorted by name
	opts    Options

	mu      sync.Mutex
	state   map[string]bool // last reported up state per source
	cache   []cached        // per source, for VersionedSources
	flights []*flight       // per source, the ContextSource collection running

	registeredWith prometheus.Registerer // New's reg, when not nil
}

// VersionedSource is a Source whose samples change only at known moments
// (a background poll, a rescan): CollectVersioned returns them with a
// version that changes whenever they do. The Collector then builds the
// source's metrics once per version and re-sends them on later scrapes,
// which takes the metric construction off the scrape path.
type VersionedSource interface {
	Source
	CollectVersioned() (samples []Sample, version uint64, err error)
}

// cached holds one VersionedSource's metrics for one version.
type cached struct {
	ok      bool
	version uint64
	metrics []prometheus.Metric
	keys    []seenKey
	series  int
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
	slices.SortFunc(c.sources, func(a, b Source) int { return strings.Compare(a.Name(), b.Name()) })
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("exporter: register collector: %w", err)
		}
		c.registeredWith = reg
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
	c.collect(func(m prometheus.Metric) { ch <- m })
}

// sourceState is what a source's collection depended on for a
// VersionedSource: the version of its samples, or that it failed. Given the
// same states for every source, Collect sends the same metrics (the
// duplicate and MaxSeries checks depend only on the samples).
type sourceState struct {
	version uint64
	failed  bool
}

// versionPeeker is a VersionedSource that tells its state without copying
// its samples.
type versionPeeker interface {
	versionState() (uint64, error)
}

// states returns every source's current state, or ok false when a source
// is not a VersionedSource (its samples can change at any moment).
func (c *Collector) states() (st []sourceState, ok bool) {
	st = make([]sourceState, len(c.sources))
	for i, s := range c.sources {
		vs, versioned := s.(VersionedSource)
		if !versioned {
			return nil, false
		}
		var version uint64
		err := recovered(s.Name(), func() (err error) {
			if p, ok := s.(versionPeeker); ok {
				version, err = p.versionState()
			} else {
				_, version, err = vs.CollectVersioned()
			}
			return err
		})
		if err != nil {
			st[i] = sourceState{failed: true}
		} else {
			st[i] = sourceState{version: version}
		}
	}
	return st, true
}

// collect is Collect sending to send; it returns the states of the sources
// as they were read for this collection (ok false when a source is not
// versioned).
func (c *Collector) collect(send func(prometheus.Metric)) (st []sourceState, ok bool) {
	st, ok = make([]sourceState, len(c.sources)), true
	seen := make(map[seenKey]bool)
	series := 0
	for i, s := range c.sources {
		ent, sst, versioned, err := c.metricsOf(i, s)
		ok = ok && versioned
		st[i] = sst
		if err == nil {
			for _, k := range ent.keys {
				if seen[k] {
					err = fmt.Errorf("%w: %+v", errDuplicate, k.labels)
					break
				}
			}
		}
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
			for _, m := range ent.metrics {
				send(m)
			}
		}
		c.logState(s.Name(), err)
		send(prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, up, s.Name()))
	}
	if !ok {
		st = nil
	}
	return st, ok
}

// metricsOf collects source i and returns its metrics, from the cache when
// a VersionedSource's version has not changed. The error is the source's
// own or a check of its samples; versioned tells whether s is a
// VersionedSource, and ent.version is then the version collected.
func (c *Collector) metricsOf(i int, s Source) (ent cached, st sourceState, versioned bool, err error) {
	ent, failed, err := c.metricsOfSource(i, s)
	_, versioned = s.(VersionedSource)
	if failed {
		return ent, sourceState{failed: true}, versioned, err
	}
	return ent, sourceState{version: ent.version}, versioned, err
}

// metricsOfSource is metricsOf; failed tells that the source itself failed
// (rather than a check of its samples).
func (c *Collector) metricsOfSource(i int, s Source) (_ cached, failed bool, _ error) {
	vs, versioned := s.(VersionedSource)
	var samples []Sample
	var version uint64
	var err error
	if versioned {
		err = recovered(s.Name(), func() (err error) {
			samples, version, err = vs.CollectVersioned()
			return err
		})
		if err != nil {
			return cached{}, true, err
		}
		c.mu.Lock()
		ent := c.cache[i]
		c.mu.Unlock()
		if ent.ok && ent.version == version {
			return ent, false, nil
		}
		samples = slices.Clone(samples)
		sortSamples(samples)
	} else if samples, err = c.collectSource(i, s); err != nil {
		return cached{}, true, err
	}
	keys, n, err := checkSamples(samples)
	if err != nil {
		return cached{version: version}, false, err
	}
	ent := cached{ok: true, version: version, keys: keys, series: n, metrics: make([]prometheus.Metric, 0, n)}
	for _, sm := range samples {
		emit(func(m prometheus.Metric) { ent.metrics = append(ent.metrics, m) }, sm)
	}
	if versioned {
		c.mu.Lock()
		c.cache[i] = ent
		c.mu.Unlock()
	}
	return ent, false, nil
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

// logState logs a source's first state when it is down, and every change.
func (c *Collector) logState(name string, err error) {
	if c.opts.Logger == nil {
		return
	}
	up := err == nil
	c.mu.Lock()
	was, known := c.state[name]
	c.state[name] = up
	c.mu.Unlock()
	switch {
	case known && was == up:
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

var errDuplicate = errors.New("exporter: label set exported twice")

// seenKey identifies a series group: memory and KV (engine figures share
// the KV families) per gpu/instance/model/pool, GPU devices per index,
// clusters per name.
type seenKey struct {
	kind   uint8
	labels Labels
}

const (
	kindMemory uint8 = iota
	kindKV
	kindGPU
	kindCluster
)

// checkSamples validates a source's samples against each other and returns
// the series groups they export (to check against other sources') and the
// number of series.
func checkSamples(samples []Sample) ([]seenKey, int, error) {
	mine := make(map[seenKey]bool, len(samples))
	var keys []seenKey
	series := 0
	add := func(k seenKey, l Labels) error {
		if mine[k] {
			return fmt.Errorf("%w: %+v", errDuplicate, l)
		}
		mine[k] = true
		keys = append(keys, k)
		return nil
	}
	for _, sm := range samples {
		if err := sm.Labels.valid(); err != nil {
			return nil, 0, err
		}
		base := sm.Labels
		base.Cluster = ""
		if m := sm.Memory; m != nil {
			if m.OOMs < 0 {
				return nil, 0, fmt.Errorf("exporter: negative OOM count %d", m.OOMs)
			}
			if err := add(seenKey{kindMemory, base}, sm.Labels); err != nil {
				return nil, 0, err
			}
			series += 13
		}
		if sm.KV != nil && sm.Engine != nil {
			return nil, 0, fmt.Errorf("%w: %+v carries both KV and Engine", errDuplicate, sm.Labels)
		}
		if sm.KV != nil {
			if err := add(seenKey{kindKV, base}, sm.Labels); err != nil {
				return nil, 0, err
			}
			series += 6
		}
		if e := sm.Engine; e != nil {
			if err := e.check(); err != nil {
				return nil, 0, err
			}
			if err := add(seenKey{kindKV, base}, sm.Labels); err != nil {
				return nil, 0, err
			}
			series += 6
		}
		if g := sm.GPU; g != nil {
			if err := g.check(); err != nil {
				return nil, 0, err
			}
			for _, v := range []string{g.UUID, g.Name} {
				if err := (Labels{GPU: v}).valid(); err != nil {
					return nil, 0, err
				}
			}
			if err := add(seenKey{kindGPU, Labels{GPU: strconv.Itoa(g.Index)}}, sm.Labels); err != nil {
				return nil, 0, err
			}
			series += 4 + len(g.Processes)
		}
		if cl := sm.Cluster; cl != nil {
			if err := cl.check(); err != nil {
				return nil, 0, err
			}
			if err := add(seenKey{kindCluster, Labels{Cluster: sm.Labels.Cluster}}, sm.Labels); err != nil {
				return nil, 0, err
			}
			series += 6
		}
	}
	return keys, series, nil
}

// emit sends sm's metrics to send.
func emit(send func(prometheus.Metric), sm Sample) {
	lv := sm.Labels.values()
	gauge := func(d *prometheus.Desc, v float64) {
		send(prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...))
	}
	counter := func(d *prometheus.Desc, v float64) {
		send(prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...))
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
		counter(oomsDesc, float64(m.OOMs))
	}
	if kv := sm.KV; kv != nil {
		gauge(kvUsageDesc, kv.Usage)
		gauge(kvBlocksDesc, float64(kv.Blocks))
		gauge(kvFreeDesc, float64(kv.Free))
		gauge(kvCachedDesc, float64(kv.Cached))
		gauge(kvEvictableDesc, float64(kv.Evictable))
		gauge(kvBlockSizeDesc, float64(kv.BlockSize))
	}
	if e := sm.Engine; e != nil {
		gauge(kvUsageDesc, e.Usage)
		if e.HasBlocks {
			gauge(kvBlocksDesc, float64(e.Blocks))
			gauge(kvBlockSizeDesc, float64(e.BlockSize))
		}
		if e.HasPreemptions {
			counter(kvPreemptionsDesc, e.Preemptions)
		}
		if e.HasPrefix {
			counter(kvPrefixQueriesDesc, e.PrefixQueries)
			counter(kvPrefixHitsDesc, e.PrefixHits)
		}
	}
	if g := sm.GPU; g != nil {
		idx := strconv.Itoa(g.Index)
		send(prometheus.MustNewConstMetric(gpuTotalDesc, prometheus.GaugeValue, float64(g.TotalBytes), idx))
		send(prometheus.MustNewConstMetric(gpuUsedDesc, prometheus.GaugeValue, float64(g.UsedBytes), idx))
		send(prometheus.MustNewConstMetric(gpuFreeDesc, prometheus.GaugeValue, float64(g.FreeBytes), idx))
		send(prometheus.MustNewConstMetric(gpuInfoDesc, prometheus.GaugeValue, 1, idx, g.UUID, g.Name))
		for _, p := range g.Processes {
			send(prometheus.MustNewConstMetric(gpuProcDesc, prometheus.GaugeValue, float64(p.UsedBytes),
				idx, strconv.FormatUint(uint64(p.PID), 10)))
		}
	}
	if cl := sm.Cluster; cl != nil {
		name := sm.Labels.Cluster
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{clusterNodesDesc, float64(cl.Nodes)},
			{clusterGPUsDesc, float64(cl.GPUs)},
			{clusterAllocDesc, cl.AllocatedGPUs},
			{clusterWholeFreeDesc, float64(cl.WholeFreeNodes)},
			{clusterStrandedDesc, float64(cl.StrandedNodes)},
			{clusterPendingDesc, float64(cl.PendingPods)},
		} {
			send(prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v, name))
		}
	}
}
