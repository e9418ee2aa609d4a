package protocol

import (
	"encoding/json"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
)

// curveSummary is a summary whose curve has samples only at the given
// percents, point x with AllocRatio x/200 (std x/1000), FragTotal x/400
// (std x/2000) and x whole-free nodes (std x/10).
func curveSummary(policy string, length int, at ...int) Summary {
	s := Summary{Policy: policy, Seeds: 2, Curve: make([]StatPoint, length)}
	for x := range s.Curve {
		s.Curve[x].Arrived = x
	}
	for _, x := range at {
		f := float64(x)
		s.Curve[x] = StatPoint{Arrived: x, Seeds: 2, AllocRatio: MeanStd{Mean: f / 200, Std: f / 1000},
			UnallocatedGPUs: MeanStd{Mean: 200 - f, Std: 1}, FragTotal: MeanStd{Mean: f / 400, Std: f / 2000}, WholeFreeNodes: MeanStd{Mean: f, Std: f / 10}}
	}
	return s
}

func TestSummaryNearest(t *testing.T) {
	for _, tc := range []struct {
		at        []int
		pct, want int
	}{
		{[]int{99, 100, 101}, 100, 100}, // the point itself
		{[]int{97, 103}, 100, 97},       // equally far: below first
		{[]int{96, 102}, 100, 102},      // the nearer, above
		{[]int{130}, 100, 130},          // only above
		{[]int{3}, 100, 3},              // far below
	} {
		s := curveSummary("x", 131, tc.at...)
		if got := s.Nearest(tc.pct); got.Arrived != tc.want || got.Seeds != 2 {
			t.Errorf("samples at %v: Nearest(%d) is point %d (%d seeds), want %d", tc.at, tc.pct, got.Arrived, got.Seeds, tc.want)
		}
	}
	empty := curveSummary("x", 131)
	if got := empty.Nearest(100); got != (StatPoint{Arrived: 100}) {
		t.Errorf("no samples: %+v", got)
	}
	var none Summary
	if got := none.Nearest(60); got != (StatPoint{Arrived: 60}) {
		t.Errorf("no curve: %+v", got)
	}
}

// The document of cluster simulate --json, byte for byte: issue 7's shape,
// the unallocated share 1 - the allocation ratio with its deviation, the
// FGD fragmentation at 60/80/90% read at the nearest percent with samples,
// every figure with its deviation (the means' fields keep their type;
// the deviations of frag_total_at and whole_free_nodes_at_100 are fields
// of their own), the failed pods and the first failure
// as the text table has them (no first_failure where no seed had one).
func TestComparisonJSON(t *testing.T) {
	nodes := []cluster.Node{{Name: "a", MilliCPU: 32000, MemoryMiB: 65536, GPUs: 4, Model: "T4"}, {Name: "b", MilliCPU: 32000, MemoryMiB: 65536, GPUs: 0}, {Name: "c", MilliCPU: 64000, MemoryMiB: 65536, GPUs: 8, Model: "V100"}}
	sums := []Summary{curveSummary("fgd", 131, 60, 80, 90, 100), curveSummary("recommended", 131, 59, 81, 100)}
	sums[0].Failed = MeanStd{Mean: 3, Std: 1.5}
	sums[0].FirstFailures, sums[0].FirstFailureArrived, sums[0].FirstFailureUnallocated = 1, MeanStd{Mean: 0.875}, MeanStd{Mean: 0.125}
	b, err := json.MarshalIndent(NewComparison(nodes, sums), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
 "nodes": 3,
 "gpus": 12,
 "results": [
  {
   "policy": "fgd",
   "seeds": 2,
   "alloc_ratio_at_100": {
    "mean": 0.5,
    "std": 0.1
   },
   "unallocated_gpus_at_100": {
    "mean": 100,
    "std": 1
   },
   "unallocated_gpu_share_at_100": {
    "mean": 0.5,
    "std": 0.1
   },
   "frag_total_at": {
    "60": 0.15,
    "80": 0.2,
    "90": 0.225
   },
   "frag_total_std_at": {
    "60": 0.03,
    "80": 0.04,
    "90": 0.045
   },
   "whole_free_nodes_at_100": 100,
   "whole_free_nodes_std_at_100": 10,
   "failed_pods": {
    "mean": 3,
    "std": 1.5
   },
   "first_failure": {
    "seeds": 1,
    "arrived_share": {
     "mean": 0.875,
     "std": 0
    },
    "unallocated_share": {
     "mean": 0.125,
     "std": 0
    }
   }
  },
  {
   "policy": "recommended",
   "seeds": 2,
   "alloc_ratio_at_100": {
    "mean": 0.5,
    "std": 0.1
   },
   "unallocated_gpus_at_100": {
    "mean": 100,
    "std": 1
   },
   "unallocated_gpu_share_at_100": {
    "mean": 0.5,
    "std": 0.1
   },
   "frag_total_at": {
    "60": 0.1475,
    "80": 0.2025,
    "90": 0.2025
   },
   "frag_total_std_at": {
    "60": 0.0295,
    "80": 0.0405,
    "90": 0.0405
   },
   "whole_free_nodes_at_100": 100,
   "whole_free_nodes_std_at_100": 10,
   "failed_pods": {
    "mean": 0,
    "std": 0
   }
  }
 ]
}`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	// No policies: an empty list, not null.
	if b, _ := json.Marshal(NewComparison(nodes, nil)); string(b) != `{"nodes":3,"gpus":12,"results":[]}` {
		t.Errorf("no policies: %s", b)
	}
}

func TestTimedComparisonJSON(t *testing.T) {
	nodes := []cluster.Node{{Name: "a", MilliCPU: 32000, MemoryMiB: 65536, GPUs: 4, Model: "T4"}}
	c := NewTimedComparison(nodes, []TimedSummary{{Policy: "fgd", Seeds: 3, MeanAllocRatio: MeanStd{0.5, 0.25}, PeakAllocRatio: MeanStd{Mean: 1},
		MeanFragTotal: MeanStd{Mean: 0.125}, FailedPods: MeanStd{2, 1}}})
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nodes":1,"gpus":4,"results":[{"policy":"fgd","seeds":3,"mean_alloc_ratio":{"mean":0.5,"std":0.25},` +
		`"peak_alloc_ratio":{"mean":1,"std":0},"mean_frag_total":{"mean":0.125,"std":0},"failed_pods":{"mean":2,"std":1}}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
