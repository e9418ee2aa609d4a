package exporter

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// Labels identify one series. Every field has bounded cardinality: a GPU
// index or UUID, an inference-server instance, a model name and a memory or
// block pool. Empty values are allowed.
type Labels struct {
	GPU      string
	Instance string
	Model    string
	Pool     string
	// Cluster labels gpufrag_cluster_* metrics only; the other families
	// ignore it.
	Cluster string
}

// values returns the label values in the order of labelNames.
func (l Labels) values() []string {
	return []string{l.GPU, l.Instance, l.Model, l.Pool}
}

// valid refuses labels with a value CheckLabelValue refuses, naming the
// label.
func (l Labels) valid() error {
	for i, v := range append(l.values(), l.Cluster) {
		name := "cluster"
		if i < len(labelNames) {
			name = labelNames[i]
		}
		if err := CheckLabel(name, v); err != nil {
			return err
		}
	}
	return nil
}

// MaxLabelBytes bounds an exported label value (instance, model, gpu,
// pool, cluster, a GPU's uuid and name): the longest real ones (model
// paths, an engine's label set in pool) are a few hundred bytes; 4 KiB
// leaves room and keeps a megabyte value out of Prometheus, as
// scrape.MaxLabelBytes and rules.MaxLabelBytes do for what they read.
const MaxLabelBytes = 4 << 10

// CheckLabelValue refuses what cannot be an exported label value: invalid
// UTF-8 or a control character (untrusted.CheckName: a terminal showing
// /metrics or a log acts on ESC, a NUL cuts a C string), or more than
// MaxLabelBytes. Sources refuse such values where they read them (a
// sidecar, a scraped page, a flag); the collector checks every sample again.
func CheckLabelValue(v string) error {
	if len(v) > MaxLabelBytes {
		return fmt.Errorf("%d bytes, over %d", len(v), MaxLabelBytes)
	}
	return untrusted.CheckName(v)
}

// CheckLabel is CheckLabelValue naming the label and quoting the value
// (untrusted.Quote) for a message.
func CheckLabel(name, v string) error {
	if err := CheckLabelValue(v); err != nil {
		return fmt.Errorf("label %s value %s: %w", name, untrusted.Quote(v), err)
	}
	return nil
}

func compareLabels(a, b Labels) int {
	return cmp.Or(
		cmp.Compare(a.GPU, b.GPU),
		cmp.Compare(a.Instance, b.Instance),
		cmp.Compare(a.Model, b.Model),
		cmp.Compare(a.Pool, b.Pool),
		cmp.Compare(a.Cluster, b.Cluster),
	)
}

// Memory is the byte-level picture of one allocator or one device's memory,
// as package frag defines it, plus the out-of-memory counter.
type Memory struct {
	// Metrics are the layout-derived figures (frag.Compute). MaxAllocatable
	// must be filled in by the source (alloc.Allocator.Layout does).
	Metrics frag.Metrics
	// OOMs is the cumulative number of failed requests since the source
	// started; it must never decrease (it is exported as a counter).
	OOMs int64
	// LastOOM is when the OOM counted last in OOMs happened, the zero time
	// while none was; exported as gpufrag_last_oom_timestamp_seconds (0 for
	// the zero time) where HasLastOOM, for sources that know when (snapshot
	// files). A restarted exporter can count OOMs again that it had counted
	// (a counter reset to Prometheus) but gives the same LastOOM for them,
	// which is how GPUOOMsIncreasing tells them from new ones.
	LastOOM    time.Time
	HasLastOOM bool
	// CapacityUnknown: the device's capacity is not known (a snapshot
	// does not record it), so Metrics.DeviceFree and
	// Metrics.MaxAllocatable, which count memory outside the allocator's
	// segments, are meaningless: gpufrag_device_free_bytes and
	// gpufrag_max_allocatable_bytes are not exported for the sample
	// (absent, not 0).
	CapacityUnknown bool
}

// KV is the picture of one paged KV-cache block pool, in blocks.
type KV struct {
	Blocks    int     // pool size including the null block (vLLM num_gpu_blocks)
	BlockSize int     // token slots per block
	Free      int     // free queue: free plus evictable cached blocks
	Cached    int     // prefix-cached blocks, held or evictable
	Evictable int     // cached blocks with no holder
	Usage     float64 // 1 − Free/(Blocks − 1), vllm:kv_cache_usage_perc
}

// Sample is one label set's state at collection time. Every kind is
// optional: a source fills in what it knows, and only those metrics are
// exported for the sample. Memory, KV and Engine are exported under Labels
// (gpu, instance, model, pool); KV and Engine share the KV families, so one
// label set carries at most one of them. GPU is exported under its own
// index, Cluster under Labels.Cluster.
type Sample struct {
	Labels  Labels
	Memory  *Memory
	KV      *KV
	Engine  *EngineKV
	GPU     *GPUDevice
	Cluster *ClusterState
}

// Source produces samples of domain state on demand. Collect is called once
// per scrape, possibly from another goroutine than the one that owns the
// underlying state, and possibly concurrently with itself if several
// registries share a source: implementations must synchronise. An error marks
// the source down (gpufrag_source_up 0) for that scrape; no partial samples
// are exported.
type Source interface {
	// Name is the value of the source label of gpufrag_source_up. It must be
	// non-empty, unique within a Collector, constant over the source's life,
	// and bounded (a fixed name per configured source, not per object).
	Name() string
	// Collect returns the current samples; each label set at most once.
	Collect() ([]Sample, error)
}

// FuncSource adapts a function to the Source interface.
type FuncSource struct {
	SourceName string
	Fn         func() ([]Sample, error)
}

// Name returns s.SourceName.
func (s FuncSource) Name() string { return s.SourceName }

// Collect calls s.Fn.
func (s FuncSource) Collect() ([]Sample, error) { return s.Fn() }

// AllocatorSource exports one alloc.Allocator: frag.Compute over its Layout
// (O(blocks) per scrape) and the OOMs of its Stats.
type AllocatorSource struct {
	name   string
	labels Labels
	a      alloc.Allocator
	mu     sync.Locker
}

// NewAllocatorSource returns a source named name that exports a under
// labels. mu is the lock the engine holds while it uses a (allocators are not
// safe for concurrent use); Collect holds it while it reads a. Pass nil only
// when nothing else touches a while a scrape runs.
func NewAllocatorSource(name string, labels Labels, a alloc.Allocator, mu sync.Locker) *AllocatorSource {
	return &AllocatorSource{name: name, labels: labels, a: a, mu: mu}
}

// Name returns the source's name.
func (s *AllocatorSource) Name() string { return s.name }

// Collect snapshots the allocator.
func (s *AllocatorSource) Collect() ([]Sample, error) {
	if s.a == nil {
		return nil, fmt.Errorf("exporter: source %q has no allocator", s.name)
	}
	if s.mu != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	layout := s.a.Layout()
	st := s.a.Stats()
	return []Sample{{
		Labels: s.labels,
		Memory: &Memory{Metrics: frag.Compute(layout), OOMs: st.OOMs},
	}}, nil
}

// BlockPoolSource exports one *blockpool.Pool through its Stats (O(1)).
type BlockPoolSource struct {
	name   string
	labels Labels
	p      *blockpool.Pool
	mu     sync.Locker
}

// NewBlockPoolSource returns a source named name that exports p under
// labels. mu is the lock the engine's scheduler holds while it uses p; nil
// only when nothing else touches p while a scrape runs.
func NewBlockPoolSource(name string, labels Labels, p *blockpool.Pool, mu sync.Locker) *BlockPoolSource {
	return &BlockPoolSource{name: name, labels: labels, p: p, mu: mu}
}

// Name returns the source's name.
func (s *BlockPoolSource) Name() string { return s.name }

// Collect snapshots the pool.
func (s *BlockPoolSource) Collect() ([]Sample, error) {
	if s.p == nil {
		return nil, fmt.Errorf("exporter: source %q has no block pool", s.name)
	}
	if s.mu != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	st := s.p.Stats()
	return []Sample{{
		Labels: s.labels,
		KV: &KV{
			Blocks:    st.NumBlocks,
			BlockSize: st.BlockSize,
			Free:      st.Free,
			Cached:    st.Cached,
			Evictable: st.Evictable,
			Usage:     st.Usage,
		},
	}}, nil
}

// sortSamples orders samples by label values, so that collection order does
// not depend on a source's internal order.
func sortSamples(s []Sample) {
	slices.SortStableFunc(s, func(a, b Sample) int { return compareLabels(a.Labels, b.Labels) })
}
