package exporter

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

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
// the series groups they export (to check against other sources').
func checkSamples(samples []Sample) ([]seenKey, error) {
	mine := make(map[seenKey]bool, len(samples))
	var keys []seenKey
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
			return nil, err
		}
		base := sm.Labels
		base.Cluster = ""
		if m := sm.Memory; m != nil {
			if m.OOMs < 0 {
				return nil, fmt.Errorf("exporter: negative OOM count %d", m.OOMs)
			}
			if err := add(seenKey{kindMemory, base}, sm.Labels); err != nil {
				return nil, err
			}
		}
		if sm.KV != nil && sm.Engine != nil {
			return nil, fmt.Errorf("%w: %+v carries both KV and Engine", errDuplicate, sm.Labels)
		}
		if sm.KV != nil {
			if err := add(seenKey{kindKV, base}, sm.Labels); err != nil {
				return nil, err
			}
		}
		if e := sm.Engine; e != nil {
			if err := e.check(); err != nil {
				return nil, err
			}
			if err := add(seenKey{kindKV, base}, sm.Labels); err != nil {
				return nil, err
			}
		}
		if g := sm.GPU; g != nil {
			if err := g.check(); err != nil {
				return nil, err
			}
			if err := CheckLabel("uuid", g.UUID); err != nil {
				return nil, err
			}
			if err := CheckLabel("name", g.Name); err != nil {
				return nil, err
			}
			if err := add(seenKey{kindGPU, Labels{GPU: strconv.Itoa(g.Index)}}, sm.Labels); err != nil {
				return nil, err
			}
		}
		if cl := sm.Cluster; cl != nil {
			if err := cl.check(); err != nil {
				return nil, err
			}
			if err := add(seenKey{kindCluster, Labels{Cluster: sm.Labels.Cluster}}, sm.Labels); err != nil {
				return nil, err
			}
		}
	}
	return keys, nil
}

// seriesSink receives the series emit produces, one call per series: its
// family, value type, value and label values.
type seriesSink func(d *prometheus.Desc, t prometheus.ValueType, v float64, labelValues ...string)

// countSeries returns the number of series samples export: emit into a
// sink that only counts, so the count is exact by construction (an engine
// sample exports only the figures its engine publishes) and costs no
// metric. --max-series is checked against it before any metric is built.
func countSeries(samples []Sample) int {
	n := 0
	count := func(*prometheus.Desc, prometheus.ValueType, float64, ...string) { n++ }
	for _, sm := range samples {
		emit(count, sm)
	}
	return n
}

// buildMetrics returns the metrics of samples, of which there are n
// (countSeries).
func buildMetrics(samples []Sample, n int) []prometheus.Metric {
	out := make([]prometheus.Metric, 0, n)
	build := func(d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, t, v, lv...))
	}
	for _, sm := range samples {
		emit(build, sm)
	}
	return out
}

// emit sends sm's series to send: the one place that decides which series
// a sample exports.
func emit(send seriesSink, sm Sample) {
	lv := sm.Labels.values()
	gauge := func(d *prometheus.Desc, v float64) { send(d, prometheus.GaugeValue, v, lv...) }
	counter := func(d *prometheus.Desc, v float64) { send(d, prometheus.CounterValue, v, lv...) }
	if m := sm.Memory; m != nil {
		f := m.Metrics
		gauge(fragmentationDesc, f.FragRate)
		gauge(healthDesc, f.Health)
		gauge(internalFragDesc, f.InternalFrag)
		gauge(largestFreeDesc, float64(f.LargestFreeBlock))
		if !m.CapacityUnknown {
			gauge(maxAllocatableDesc, float64(f.MaxAllocatable))
		}
		gauge(reservedDesc, float64(f.Reserved))
		gauge(allocatedDesc, float64(f.Allocated))
		gauge(requestedDesc, float64(f.Requested))
		gauge(cachedFreeDesc, float64(f.CachedFree))
		if !m.CapacityUnknown {
			gauge(deviceFreeDesc, float64(f.DeviceFree))
		}
		gauge(entropyDesc, f.SizeEntropy)
		gauge(distinctSizesDesc, float64(f.DistinctSizes))
		counter(oomsDesc, float64(m.OOMs))
		if m.HasLastOOM {
			var at float64
			if !m.LastOOM.IsZero() {
				at = float64(m.LastOOM.UnixMicro()) / 1e6
			}
			gauge(lastOOMDesc, at)
		}
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
		send(gpuTotalDesc, prometheus.GaugeValue, float64(g.TotalBytes), idx)
		send(gpuUsedDesc, prometheus.GaugeValue, float64(g.UsedBytes), idx)
		send(gpuFreeDesc, prometheus.GaugeValue, float64(g.FreeBytes), idx)
		send(gpuInfoDesc, prometheus.GaugeValue, 1, idx, g.UUID, g.Name)
		for _, p := range g.Processes {
			send(gpuProcDesc, prometheus.GaugeValue, float64(p.UsedBytes), idx, strconv.FormatUint(uint64(p.PID), 10))
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
			send(m.d, prometheus.GaugeValue, m.v, name)
		}
	}
}
