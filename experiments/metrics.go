package experiments

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/sim"
)

// scalarMetrics are the scenario metrics read from a sim.Result.
var scalarMetrics = map[string]func(r *sim.Result) float64{
	"frag_rate.p50":        func(r *sim.Result) float64 { return r.FragRate.P50 },
	"frag_rate.p99":        func(r *sim.Result) float64 { return r.FragRate.P99 },
	"frag_rate.max":        func(r *sim.Result) float64 { return r.FragRate.Max },
	"health_min":           func(r *sim.Result) float64 { return r.HealthMin },
	"kv.token_states":      func(r *sim.Result) float64 { return r.KVBreakdown.TokenStates },
	"kv.reservation":       func(r *sim.Result) float64 { return r.KVBreakdown.Reservation },
	"kv.internal":          func(r *sim.Result) float64 { return r.KVBreakdown.Internal },
	"kv.external":          func(r *sim.Result) float64 { return r.KVBreakdown.External },
	"kv.frag":              func(r *sim.Result) float64 { return r.KVBreakdown.Internal + r.KVBreakdown.External },
	"requests_total":       func(r *sim.Result) float64 { return float64(r.RequestsTotal) },
	"completed":            func(r *sim.Result) float64 { return float64(r.RequestsCompleted) },
	"failed_oom":           func(r *sim.Result) float64 { return float64(r.RequestsFailedOOM) },
	"rejected":             func(r *sim.Result) float64 { return float64(r.RequestsRejected) },
	"unfinished":           func(r *sim.Result) float64 { return float64(r.RequestsUnfinished) },
	"preemptions":          func(r *sim.Result) float64 { return float64(r.Preemptions) },
	"activation_ooms":      func(r *sim.Result) float64 { return float64(r.ActivationOOMs) },
	"oom_per_day":          func(r *sim.Result) float64 { return perDay(float64(r.RequestsFailedOOM), r.SimulatedSeconds) },
	"output_tokens_per_s":  func(r *sim.Result) float64 { return r.OutputTokensPerS },
	"batch_size_mean":      func(r *sim.Result) float64 { return r.BatchSizeMean },
	"ttft.p50":             func(r *sim.Result) float64 { return r.TTFT.P50 },
	"ttft.p99":             func(r *sim.Result) float64 { return r.TTFT.P99 },
	"tpot.p50":             func(r *sim.Result) float64 { return r.TPOT.P50 },
	"tpot.p99":             func(r *sim.Result) float64 { return r.TPOT.P99 },
	"itl.p50":              func(r *sim.Result) float64 { return r.ITL.P50 },
	"itl.p99":              func(r *sim.Result) float64 { return r.ITL.P99 },
	"e2e.p99":              func(r *sim.Result) float64 { return r.E2E.P99 },
	"peak_reserved_bytes":  func(r *sim.Result) float64 { return float64(r.PeakReservedBytes) },
	"peak_allocated_bytes": func(r *sim.Result) float64 { return float64(r.PeakAllocatedBytes) },
	"kv_budget_bytes":      func(r *sim.Result) float64 { return float64(r.KVBudgetBytes) },
	"kv_pool_bytes":        func(r *sim.Result) float64 { return float64(r.KVPoolBytes) },
	"simulated_s":          func(r *sim.Result) float64 { return r.SimulatedSeconds },
	"defrag.runs": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return float64(d.Runs) })
	},
	"defrag.bytes_moved": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return float64(d.BytesMoved) })
	},
	"defrag.freed_bytes": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return float64(d.FreedBytes) })
	},
	"defrag.pause_total_s": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return d.PauseTotal })
	},
	"defrag.pause_max_s": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return d.Pause.Max })
	},
	"defrag.freed_per_run_share": freedPerRunShare,
	"defrag.lower_bound_bytes": func(r *sim.Result) float64 {
		return defragField(r, func(d *sim.DefragResult) float64 { return float64(d.LowerBound) })
	},
	"defrag.moved_over_bound": movedOverBound,
}

// seriesMetrics are means over a window of the memory time series.
var seriesMetrics = []string{"frag", "waste", "waste_bytes", "kv_held", "reserved", "running"}

var clusterMetrics = []string{"alloc_ratio", "unallocated", "unallocated_gpus", "frag_total", "frag_rate", "stranded_nodes", "whole_free_nodes", "partly_used_nodes"}

var arithmeticMetrics = []string{"kv_bytes_per_token", "kv_total_bytes", "kv_total_gb"}

func perDay(n, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return n / seconds * 86400
}

func defragField(r *sim.Result, f func(*sim.DefragResult) float64) float64 {
	if r.Defrag == nil {
		return 0
	}
	return f(r.Defrag)
}

func freedPerRunShare(r *sim.Result) float64 {
	if r.Defrag == nil || r.Defrag.Runs == 0 || r.KVBudgetBytes <= 0 {
		return 0
	}
	return float64(r.Defrag.FreedBytes) / float64(r.Defrag.Runs) / float64(r.KVBudgetBytes)
}

// metric is a parsed metric name.
type metric struct {
	name string
	// series window: from and to as shares of the run's duration (pct) or
	// absolute seconds.
	windowed bool
	pct      bool
	from, to float64
	// cluster: the arrived percent.
	at int
}

// parseMetric parses a metric name of an experiment of the given kind:
//
//	scenario:   a scalar (frag_rate.p50, kv.token_states, ...), or
//	            SERIES.mean or SERIES.mean[FROM:TO] with FROM and TO both
//	            percentages of the run ("90%") or both durations ("25m")
//	cluster:    NAME@PCT (alloc_ratio@100: at 100% arrived GPU demand), failed
//	arithmetic: kv_bytes_per_token, kv_total_bytes, kv_total_gb
func parseMetric(s, kind string) (metric, error) {
	switch kind {
	case "arithmetic":
		if slices.Contains(arithmeticMetrics, s) {
			return metric{name: s}, nil
		}
		return metric{}, fmt.Errorf("metric %q: want one of %s", s, strings.Join(arithmeticMetrics, ", "))
	case "cluster":
		if s == "failed" {
			return metric{name: s}, nil
		}
		name, pct, ok := strings.Cut(s, "@")
		n, err := strconv.Atoi(pct)
		if !ok || err != nil || n < 0 || n > 130 || !slices.Contains(clusterMetrics, name) {
			return metric{}, fmt.Errorf("metric %q: want failed or NAME@PCT with NAME one of %s and PCT in 0..130", s, strings.Join(clusterMetrics, ", "))
		}
		return metric{name: name, at: n}, nil
	}
	if _, ok := scalarMetrics[s]; ok {
		return metric{name: s}, nil
	}
	base, rest, ok := strings.Cut(s, ".mean")
	if !ok || !slices.Contains(seriesMetrics, base) {
		return metric{}, fmt.Errorf("metric %q: want a scalar (%s) or SERIES.mean[FROM:TO] with SERIES one of %s", s, strings.Join(scalarNames(), ", "), strings.Join(seriesMetrics, ", "))
	}
	m := metric{name: base, windowed: true, pct: true, from: 0, to: 1}
	if rest == "" {
		return m, nil
	}
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return metric{}, fmt.Errorf("metric %q: want SERIES.mean[FROM:TO]", s)
	}
	a, b, ok := strings.Cut(rest[1:len(rest)-1], ":")
	if !ok {
		return metric{}, fmt.Errorf("metric %q: want a window FROM:TO", s)
	}
	if strings.HasSuffix(a, "%") && strings.HasSuffix(b, "%") {
		x, err1 := strconv.ParseFloat(strings.TrimSuffix(a, "%"), 64)
		y, err2 := strconv.ParseFloat(strings.TrimSuffix(b, "%"), 64)
		if err1 != nil || err2 != nil || !(x >= 0 && x < y && y <= 100) {
			return metric{}, fmt.Errorf("metric %q: want percentages 0 <= FROM < TO <= 100", s)
		}
		m.from, m.to = x/100, y/100
		return m, nil
	}
	x, err1 := time.ParseDuration(a)
	y, err2 := time.ParseDuration(b)
	if err1 != nil || err2 != nil || !(x >= 0 && x < y) {
		return metric{}, fmt.Errorf("metric %q: want a window of two percentages or two durations, FROM < TO", s)
	}
	m.pct, m.from, m.to = false, x.Seconds(), y.Seconds()
	return m, nil
}

func scalarNames() []string {
	var out []string
	for k := range scalarMetrics {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// seriesValue is the mean of one series over a window of the run; NaN when
// the window holds no sample.
func seriesValue(m metric, r *sim.Result, duration float64) float64 {
	s := &r.Series
	if duration <= 0 {
		duration = r.SimulatedSeconds
	}
	from, to := m.from, m.to
	if m.pct {
		from, to = from*duration, to*duration
	}
	sum, n := 0.0, 0
	for i, t := range s.Time {
		if t < from || t >= to && !(m.pct && m.to == 1 && t == to) {
			continue
		}
		sum += seriesPoint(m.name, s, i)
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// seriesPoint is one sample of a named series.
func seriesPoint(name string, s *sim.Series, i int) float64 {
	switch name {
	case "frag":
		return 1 - s.Health[i]
	case "waste":
		if s.Reserved[i] <= 0 {
			return 0
		}
		return float64(s.Reserved[i]-s.Allocated[i]) / float64(s.Reserved[i])
	case "waste_bytes":
		return float64(s.Reserved[i] - s.Allocated[i])
	case "kv_held":
		return float64(s.KVHeld[i])
	case "reserved":
		return float64(s.Reserved[i])
	case "running":
		return float64(s.Running[i])
	}
	panic(fmt.Sprintf("experiments: unknown series %q", name))
}

// clusterValue reads a metric from the summary of one policy's seeds.
func clusterValue(m metric, s *protocol.Summary) float64 {
	if m.name == "failed" {
		return s.Failed.Mean
	}
	if m.at >= len(s.Curve) {
		return math.NaN()
	}
	p := s.Curve[m.at]
	switch m.name {
	case "alloc_ratio":
		return p.AllocRatio.Mean
	case "unallocated":
		return 1 - p.AllocRatio.Mean
	case "unallocated_gpus":
		return p.UnallocatedGPUs.Mean
	case "frag_total":
		return p.FragTotal.Mean
	case "frag_rate":
		return p.FragRate.Mean
	case "stranded_nodes":
		return p.StrandedNodes.Mean
	case "whole_free_nodes":
		return p.WholeFreeNodes.Mean
	case "partly_used_nodes":
		return p.PartlyUsedNodes.Mean
	}
	panic(fmt.Sprintf("experiments: unknown cluster metric %q", m.name))
}

// movedOverBound is the bytes the run's compactions moved over the
// planner's lower bound for them (1: optimal moves); 0 when nothing moved.
func movedOverBound(r *sim.Result) float64 {
	return defragField(r, func(d *sim.DefragResult) float64 {
		if d.LowerBound <= 0 {
			return 0
		}
		return float64(d.BytesMoved) / float64(d.LowerBound)
	})
}
