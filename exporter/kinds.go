package exporter

import (
	"context"
	"fmt"
	"strconv"
)

// GPUDevice is one GPU's device memory as the driver reports it (NVML's
// nvmlDeviceGetMemoryInfo and its running compute processes). It is exported
// under the label gpu = strconv.Itoa(Index), whatever the sample's Labels.
type GPUDevice struct {
	Index                            int
	UUID, Name                       string
	TotalBytes, UsedBytes, FreeBytes uint64
	Processes                        []GPUProcess
}

// GPUProcess is one process's device memory on a GPU.
type GPUProcess struct {
	PID       uint32
	UsedBytes uint64
}

// EngineKV holds the KV-cache figures an inference engine (vLLM, SGLang)
// publishes on its own /metrics. They are exported into the KV families
// (gpufrag_kv_cache_usage_ratio, and gpufrag_kv_blocks and
// gpufrag_kv_block_size_tokens when HasBlocks) and into the engine counters
// (gpufrag_kv_preemptions_total when HasPreemptions, the prefix-cache
// counters when HasPrefix). Figures an engine does not publish are simply
// not exported.
type EngineKV struct {
	Engine    string  // "vllm" or "sglang"; informative only (not a label)
	Usage     float64 // fraction of KV blocks in use, 0..1
	Blocks    int     // pool size in blocks (with HasBlocks)
	BlockSize int     // tokens per block (with HasBlocks)
	// Preemptions is the engine's cumulative preemption count.
	Preemptions float64
	// PrefixQueries and PrefixHits are cumulative prefix-cache lookups and
	// hits, in tokens (vLLM's prefix_cache_queries and prefix_cache_hits).
	PrefixQueries, PrefixHits float64

	HasBlocks, HasPreemptions, HasPrefix bool
}

// ClusterState is a GPU cluster's occupancy, exported per Labels.Cluster.
type ClusterState struct {
	Nodes, GPUs int
	// AllocatedGPUs is the GPUs requested by bound pods: milli-GPUs / 1000.
	AllocatedGPUs float64
	// WholeFreeNodes are GPU nodes with every GPU free.
	WholeFreeNodes int
	// StrandedNodes are nodes with idle GPUs that no pending pod can use.
	StrandedNodes int
	PendingPods   int
}

func (d *GPUDevice) check() error {
	if d.Index < 0 {
		return fmt.Errorf("exporter: gpu index %d is negative", d.Index)
	}
	seen := make(map[uint32]bool, len(d.Processes))
	for _, p := range d.Processes {
		if seen[p.PID] {
			return fmt.Errorf("exporter: gpu %d lists pid %d twice", d.Index, p.PID)
		}
		seen[p.PID] = true
	}
	return nil
}

func (c *ClusterState) check() error {
	for _, v := range []int{c.Nodes, c.GPUs, c.WholeFreeNodes, c.StrandedNodes, c.PendingPods} {
		if v < 0 {
			return fmt.Errorf("exporter: negative cluster count in %+v", *c)
		}
	}
	if c.AllocatedGPUs < 0 {
		return fmt.Errorf("exporter: negative allocated GPUs %v", c.AllocatedGPUs)
	}
	return nil
}

func (e *EngineKV) check() error {
	if e.Preemptions < 0 || e.PrefixQueries < 0 || e.PrefixHits < 0 {
		return fmt.Errorf("exporter: negative engine counter in %+v", *e)
	}
	return nil
}

// ContextSource is a Source whose collection honours a context. The
// Collector calls CollectContext with a deadline of Options.SourceTimeout
// on each scrape, in its own goroutine, so a hung source costs a scrape at
// most that long and is reported down; scrapes that arrive while a call is
// running share it instead of starting another, so a hung source holds at
// most one goroutine.
type ContextSource interface {
	Source
	CollectContext(ctx context.Context) ([]Sample, error)
}

// FuncContextSource adapts a context-taking function to ContextSource.
type FuncContextSource struct {
	SourceName string
	Fn         func(context.Context) ([]Sample, error)
}

// Name returns s.SourceName.
func (s FuncContextSource) Name() string { return s.SourceName }

// Collect calls s.Fn with a background context.
func (s FuncContextSource) Collect() ([]Sample, error) { return s.Fn(context.Background()) }

// CollectContext calls s.Fn.
func (s FuncContextSource) CollectContext(ctx context.Context) ([]Sample, error) { return s.Fn(ctx) }

// NewOffSource returns a source named name that is off for the life of the
// process: every collection fails with err, so the source is reported down
// (gpufrag_source_up 0) on every scrape. The caller has already logged why
// (for example at startup, when NVML could not be opened); the Collector
// does not log the first down state of this source again, only a change.
func NewOffSource(name string, err error) FuncContextSource {
	off := offError{err}
	return FuncContextSource{SourceName: name, Fn: func(context.Context) ([]Sample, error) { return nil, off }}
}

// offError is the error of a source from NewOffSource.
type offError struct{ err error }

func (e offError) Error() string { return e.err.Error() }
func (e offError) Unwrap() error { return e.err }

// NewGPUSource returns a source named name over a device-memory reader such
// as NVML's: one sample per device.
func NewGPUSource(name string, read func(context.Context) ([]GPUDevice, error)) FuncContextSource {
	return FuncContextSource{SourceName: name, Fn: func(ctx context.Context) ([]Sample, error) {
		devs, err := read(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]Sample, len(devs))
		for i := range devs {
			d := devs[i]
			out[i] = Sample{Labels: Labels{GPU: strconv.Itoa(d.Index)}, GPU: &d}
		}
		return out, nil
	}}
}

// NewClusterSource returns a source named name over a cluster reader,
// exported with the label cluster.
func NewClusterSource(name, cluster string, read func(context.Context) (ClusterState, error)) FuncContextSource {
	return FuncContextSource{SourceName: name, Fn: func(ctx context.Context) ([]Sample, error) {
		st, err := read(ctx)
		if err != nil {
			return nil, err
		}
		return []Sample{{Labels: Labels{Cluster: cluster}, Cluster: &st}}, nil
	}}
}

// NewEngineSource returns a source named name over an inference engine's
// KV figures (package exporter/scrape reads them), exported under labels
// with pool "engine" when labels.Pool is empty.
func NewEngineSource(name string, labels Labels, read func(context.Context) (EngineKV, error)) FuncContextSource {
	if labels.Pool == "" {
		labels.Pool = "engine"
	}
	return FuncContextSource{SourceName: name, Fn: func(ctx context.Context) ([]Sample, error) {
		kv, err := read(ctx)
		if err != nil {
			return nil, err
		}
		return []Sample{{Labels: labels, Engine: &kv}}, nil
	}}
}
