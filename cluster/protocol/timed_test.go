package protocol

import (
	"errors"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
)

// nodeT4 is a 2-GPU node (the core package's tests have the same).
var nodeT4 = cluster.Node{Name: "t4", MilliCPU: 104000, MemoryMiB: 524288, GPUs: 2, Model: "T4"}

func TestTimed(t *testing.T) {
	nodes := []cluster.Node{nodeT4}
	pods := []cluster.Pod{
		{Name: "a", MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000, Creation: 0, Deletion: 10, HasTimes: true},
		{Name: "b", MilliCPU: 1000, NumGPU: 2, MilliGPU: 1000, Creation: 5, Deletion: 20, HasTimes: true}, // only one GPU free at 5: fails
		{Name: "c", MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000, Creation: 10, HasTimes: true},              // a leaves at 10 first, then c runs for good
		{Name: "d", MilliCPU: 1000, NumGPU: 1, MilliGPU: 500, Creation: 10, Deletion: 30, HasTimes: true},
	}
	r, err := Timed(nodes, pods, "bestfit", 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Times 0, 5, 10, 20, 30 (b never ran: its departure at 20 changes nothing).
	// Allocated: 1 GPU at 0 and 5; at 10 a leaves, c and d come: 1.5 GPUs;
	// at 30 d leaves: 1 GPU.
	want := []TimedPoint{
		{Time: 0, Running: 1, AllocRatio: 0.5},
		{Time: 5, Running: 1, AllocRatio: 0.5, Failed: 1},
		{Time: 10, Running: 2, AllocRatio: 0.75, Failed: 1},
		{Time: 20, Running: 2, AllocRatio: 0.75, Failed: 1},
		{Time: 30, Running: 1, AllocRatio: 0.5, Failed: 1},
	}
	if len(r.Points) != len(want) {
		t.Fatalf("points %+v", r.Points)
	}
	for i, w := range want {
		g := r.Points[i]
		if g.Time != w.Time || g.Running != w.Running || g.AllocRatio != w.AllocRatio || g.Failed != w.Failed {
			t.Errorf("point %d: %+v, want %+v", i, g, w)
		}
	}
	// Time-weighted mean: (10*0.5 + 20*0.75) / 30 = 2/3.
	if !clustertest.Near(r.MeanAllocRatio, 2.0/3) || r.PeakAllocRatio != 0.75 || r.Failed != 1 {
		t.Errorf("mean %v peak %v failed %d", r.MeanAllocRatio, r.PeakAllocRatio, r.Failed)
	}
	if _, err := Timed(nodes, []cluster.Pod{{Name: "x", MilliCPU: 1}}, "fgd", 1, Options{}); !errors.Is(err, cluster.ErrBadInput) {
		t.Errorf("pods without times: %v", err)
	}
}

func TestTimedSharedTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds: skipped with -short")
	}
	nodes := clustertest.Nodes(t, clustertest.Shared(t, "openb_node_list_gpu_node.csv"))
	pods := clustertest.Pods(t, clustertest.Shared(t, "openb_pod_list_default.csv"))
	r, err := Timed(nodes, pods, "fgd", 42, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakAllocRatio <= 0 || r.PeakAllocRatio > 1 || r.MeanAllocRatio > r.PeakAllocRatio || len(r.Points) < 100 {
		t.Errorf("timed default: %d points, mean %v, peak %v, %d failed", len(r.Points), r.MeanAllocRatio, r.PeakAllocRatio, r.Failed)
	}
}
