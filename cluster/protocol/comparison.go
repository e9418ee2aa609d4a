package protocol

import "github.com/gpufrag/gpufrag/cluster"

// Comparison is the document `gpufrag cluster simulate --json` prints: the
// policies of a grid compared at fixed points of arrived GPU demand, in
// the shape issue 7 gives. Shares are fractions of 1.
type Comparison struct {
	Nodes   int                `json:"nodes"`
	GPUs    int                `json:"gpus"`
	Results []ComparisonResult `json:"results"`
}

// ComparisonResult is one policy of a Comparison, means and standard
// deviations over its seeds.
type ComparisonResult struct {
	Policy               string  `json:"policy"`
	Seeds                int     `json:"seeds"`
	AllocRatioAt100      MeanStd `json:"alloc_ratio_at_100"`
	UnallocatedGPUsAt100 MeanStd `json:"unallocated_gpus_at_100"`
	// UnallocatedShareAt100 is 1 - AllocRatioAt100 (the same deviation).
	UnallocatedShareAt100 MeanStd `json:"unallocated_gpu_share_at_100"`
	// FragTotalAt is the mean FGD fragmentation over capacity at 60, 80
	// and 90% arrived demand, keyed "60", "80", "90", and FragTotalStdAt
	// its standard deviation over the seeds (a field of its own: the
	// means' field keeps its type, docs/json.md).
	FragTotalAt    map[string]float64 `json:"frag_total_at"`
	FragTotalStdAt map[string]float64 `json:"frag_total_std_at"`
	// WholeFreeNodesAt100 is the mean number of nodes with every GPU free,
	// WholeFreeNodesStdAt100 its standard deviation.
	WholeFreeNodesAt100    float64 `json:"whole_free_nodes_at_100"`
	WholeFreeNodesStdAt100 float64 `json:"whole_free_nodes_std_at_100"`
	// FailedPods counts the pods that fit nowhere over the whole run (to
	// Options.Ratio of capacity), Summary.Failed.
	FailedPods MeanStd `json:"failed_pods"`
	// FirstFailure is when the first pod failed, over the seeds that had
	// a failure; nil when none had.
	FirstFailure *FirstFailureStat `json:"first_failure,omitempty"`
}

// FirstFailureStat is when the first pod of a run fit nowhere, over the runs
// of a policy that had one (Summary.FirstFailures of its seeds).
type FirstFailureStat struct {
	Seeds int `json:"seeds"`
	// ArrivedShare is the arrived GPU demand then, UnallocatedShare the
	// share of GPU capacity then idle.
	ArrivedShare     MeanStd `json:"arrived_share"`
	UnallocatedShare MeanStd `json:"unallocated_share"`
}

// NewComparison compares the summaries, in their order, on a cluster of
// nodes. Each figure is read at its percent of arrived demand or the
// nearest that has samples (Summary.Nearest).
func NewComparison(nodes []cluster.Node, sums []Summary) Comparison {
	out := Comparison{Nodes: len(nodes), GPUs: cluster.GPUCapacity(nodes), Results: []ComparisonResult{}}
	for i := range sums {
		s := &sums[i]
		p := s.Nearest(100)
		r := ComparisonResult{
			Policy: s.Policy, Seeds: s.Seeds,
			AllocRatioAt100:       p.AllocRatio,
			UnallocatedGPUsAt100:  p.UnallocatedGPUs,
			UnallocatedShareAt100: p.UnallocatedShare(),
			FragTotalAt: map[string]float64{
				"60": s.Nearest(60).FragTotal.Mean,
				"80": s.Nearest(80).FragTotal.Mean,
				"90": s.Nearest(90).FragTotal.Mean,
			},
			FragTotalStdAt: map[string]float64{
				"60": s.Nearest(60).FragTotal.Std,
				"80": s.Nearest(80).FragTotal.Std,
				"90": s.Nearest(90).FragTotal.Std,
			},
			WholeFreeNodesAt100:    p.WholeFreeNodes.Mean,
			WholeFreeNodesStdAt100: p.WholeFreeNodes.Std,
			FailedPods:             s.Failed,
		}
		if s.FirstFailures > 0 {
			r.FirstFailure = &FirstFailureStat{Seeds: s.FirstFailures, ArrivedShare: s.FirstFailureArrived, UnallocatedShare: s.FirstFailureUnallocated}
		}
		out.Results = append(out.Results, r)
	}
	return out
}

// UnallocatedShare is the share of GPU capacity left unallocated at p:
// 1 - the allocation ratio, with its deviation.
func (p StatPoint) UnallocatedShare() MeanStd {
	return MeanStd{Mean: 1 - p.AllocRatio.Mean, Std: p.AllocRatio.Std}
}

// Nearest returns the summary's point at pct percent of arrived demand
// or, when no run has a sample there (a small cluster, where one pod moves
// the demand by several percent), the nearest percent that has, below
// first; a point with only Arrived set when none has.
func (s *Summary) Nearest(pct int) StatPoint {
	for d := 0; d < len(s.Curve); d++ {
		for _, x := range []int{pct - d, pct + d} {
			if x >= 0 && x < len(s.Curve) && s.Curve[x].Seeds > 0 {
				return s.Curve[x]
			}
		}
	}
	return StatPoint{Arrived: pct}
}

// TimedComparison is the document `gpufrag cluster simulate --timed
// --json` prints: per policy, means over seeds of the time-based replay.
type TimedComparison struct {
	Nodes   int            `json:"nodes"`
	GPUs    int            `json:"gpus"`
	Results []TimedSummary `json:"results"`
}

// NewTimedComparison compares the timed summaries, in their order, on a
// cluster of nodes.
func NewTimedComparison(nodes []cluster.Node, sums []TimedSummary) TimedComparison {
	return TimedComparison{Nodes: len(nodes), GPUs: cluster.GPUCapacity(nodes), Results: sums}
}
