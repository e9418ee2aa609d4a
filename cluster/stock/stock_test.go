package stock

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
	"github.com/gpufrag/gpufrag/cluster/protocol"
)

func TestStockGrid(t *testing.T) {
	g := StockGrid()
	if len(g) != 18 || g[0] != "volcano-binpack:cpu=1,memory=1,gpu=0" || g[11] != "volcano-binpack:cpu=5,memory=1,gpu=16" ||
		g[12] != "mostallocated:cpu=1,memory=1,gpu=0" || g[17] != "rtcr:cpu=1,memory=1,gpu=3" {
		t.Errorf("StockGrid = %q", g)
	}
	for _, s := range g {
		if _, err := cluster.NewPolicy(s, nil); err != nil || !IsStock(s) {
			t.Errorf("%s: stock %v, %v", s, IsStock(s), err)
		}
	}
	for spec, want := range map[string]bool{"volcano-binpack": true, "rtcr:gpu=2": true, "mostallocated:cpu=1": true,
		"spread": false, "fgd": false, "volcano-binpackx:gpu=1": false, "": false} {
		if IsStock(spec) != want {
			t.Errorf("IsStock(%q) = %v", spec, !want)
		}
	}
}

// stockSummary is a summary of spec whose curve has one point, at pct,
// with allocation ratio alloc (std 0.01) and gpus GPUs unallocated.
func stockSummary(spec string, pct int, alloc, gpus float64) protocol.Summary {
	s := protocol.Summary{Policy: spec, Seeds: 2, Curve: make([]protocol.StatPoint, 131)}
	s.Curve[pct] = protocol.StatPoint{Arrived: pct, Seeds: 2, AllocRatio: protocol.MeanStd{Mean: alloc, Std: 0.01}, UnallocatedGPUs: protocol.MeanStd{Mean: gpus}}
	return s
}

func TestRankStock(t *testing.T) {
	sums := []protocol.Summary{
		stockSummary("volcano-binpack:gpu=0", 100, 0.80, 40),
		stockSummary("mostallocated:gpu=1", 100, 0.90, 20),
		stockSummary("rtcr:gpu=3", 100, 0.85, 30),
		stockSummary("volcano-binpack:gpu=8", 100, 0.90, 20), // ties mostallocated: keeps its place after it
		stockSummary("volcano-binpack:cpu=5", 98, 0.95, 10),  // no sample at 100: read at 98
	}
	got, err := RankStock(sums)
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, r := range got {
		specs = append(specs, r.Spec)
	}
	want := []string{"volcano-binpack:cpu=5", "mostallocated:gpu=1", "volcano-binpack:gpu=8", "rtcr:gpu=3", "volcano-binpack:gpu=0"}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("order %q, want %q", specs, want)
	}
	first := got[0]
	if !clustertest.Near(first.Unallocated.Mean, 0.05) || first.Unallocated.Std != 0.01 || first.UnallocatedGPUs != 10 {
		t.Errorf("best: %+v", first)
	}
	if v, ok := first.Policy.(*cluster.VolcanoBinpack); !ok || *v != (cluster.VolcanoBinpack{Weight: 1, CPU: 5, Memory: 1}) {
		t.Errorf("best policy %#v", first.Policy)
	}
	volcano, kube := BestStock(got)
	if volcano == nil || volcano.Spec != "volcano-binpack:cpu=5" || kube == nil || kube.Spec != "mostallocated:gpu=1" {
		t.Errorf("BestStock = %v, %v", volcano, kube)
	}
	// Only one kind: the other is nil.
	volcano, kube = BestStock(got[3:4])
	if volcano != nil || kube == nil || kube.Spec != "rtcr:gpu=3" {
		t.Errorf("BestStock(rtcr only) = %v, %v", volcano, kube)
	}
	if volcano, kube = BestStock(nil); volcano != nil || kube != nil {
		t.Errorf("BestStock(nil) = %v, %v", volcano, kube)
	}
	// A setting without a stock configuration, or a bad one, is an error.
	for _, spec := range []string{"fgd", "rtcr:gpu=x"} {
		if _, err := RankStock([]protocol.Summary{stockSummary(spec, 100, 0.9, 1)}); !errors.Is(err, cluster.ErrUnknownPolicy) {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// The search of cluster volcano-config on the testdata lists: the grid's
// results ranked, and the best of each scheduler as its output names them
// (GPU weight 2 for Volcano, MostAllocated with GPU weight 3).
func TestRankStockGrid(t *testing.T) {
	nodes := clustertest.Nodes(t, clustertest.Testdata(t, "openb_nodes_head40.csv"))
	pods := clustertest.Pods(t, clustertest.Testdata(t, "openb_pods_gpuspec33_head60.csv"))
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: StockGrid(), Seeds: []uint64{1, 2}})
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ranked, err := RankStock(g.Summaries())
	if err != nil {
		t.Fatal(err)
	}
	if len(ranked) != 18 {
		t.Fatalf("%d ranked", len(ranked))
	}
	for i := 1; i < len(ranked); i++ {
		if ranked[i].Unallocated.Mean < ranked[i-1].Unallocated.Mean {
			t.Errorf("rank %d (%s, %v) before %d (%s, %v)", i-1, ranked[i-1].Spec, ranked[i-1].Unallocated.Mean, i, ranked[i].Spec, ranked[i].Unallocated.Mean)
		}
	}
	volcano, kube := BestStock(ranked)
	if volcano == nil || volcano.Spec != "volcano-binpack:cpu=1,memory=1,gpu=2" || kube == nil || kube.Spec != "mostallocated:cpu=1,memory=1,gpu=3" {
		t.Errorf("best: %+v, %+v", volcano, kube)
	}
}
