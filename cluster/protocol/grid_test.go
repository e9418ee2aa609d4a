package protocol

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
)

// gridInputs are the small openb lists of testdata (40 nodes, 60 pods
// with times).
func gridInputs(t *testing.T) ([]cluster.Node, []cluster.Pod) {
	t.Helper()
	return clustertest.Nodes(t, clustertest.Testdata(t, "openb_nodes_head40.csv")), clustertest.Pods(t, clustertest.Testdata(t, "openb_pods_gpuspec33_head60.csv"))
}

// concurrent is a Runner that starts every job on its own goroutine at
// once, so that -race sees cells run side by side.
func concurrent(ctx context.Context, n int, job func(context.Context, int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = job(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reverse is a Runner that runs the jobs last first.
func reverse(ctx context.Context, n int, job func(context.Context, int) error) error {
	var errs []error
	for i := n - 1; i >= 0; i-- {
		errs = append(errs, job(ctx, i))
	}
	return errors.Join(errs...)
}

// The grid's summaries are Experiment's runs aggregated per policy, named
// by the specs as given, whatever runs the cells and in what order.
func TestGridSummaries(t *testing.T) {
	nodes, pods := gridInputs(t)
	cfg := GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"bestfit", "fgd", "recommended"}, Seeds: []uint64{3, 1, 2},
		Options: Options{Ratio: 1.2}}
	var want []Summary
	for _, spec := range cfg.Policies {
		var runs []*Run
		for _, seed := range cfg.Seeds {
			r, err := Experiment(nodes, pods, spec, seed, cfg.Options)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		s := Aggregate(runs)
		s.Policy = spec
		want = append(want, s)
	}
	if want[2].Policy != "recommended" {
		t.Fatalf("want[2] is %s", want[2].Policy)
	}
	for name, run := range map[string]Runner{"nil": nil, "reverse": reverse, "concurrent": concurrent} {
		g := NewGrid(cfg)
		if g.Len() != 9 {
			t.Fatalf("Len %d, want 9", g.Len())
		}
		if p, seed := g.Cell(4); p != 1 || seed != 1 {
			t.Errorf("Cell(4) = %d, %d; want policy 1, seed 1 (policy-major)", p, seed)
		}
		if err := g.Run(context.Background(), run); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := g.Summaries(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s runner: summaries differ from Experiment + Aggregate", name)
		}
		// Each seed's workload was prepared once for its policies and let
		// go after the last of them.
		for k := range g.prep {
			if gp := &g.prep[k]; gp.pr != nil || gp.left.Load() != 0 {
				t.Errorf("%s runner: seed %d: workload kept (%v) with %d cells left", name, cfg.Seeds[k], gp.pr != nil, gp.left.Load())
			}
		}
	}
}

// A timed grid aggregates Timed's runs with AggregateTimed.
func TestGridTimed(t *testing.T) {
	nodes, pods := gridInputs(t)
	cfg := GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"fgd", "packing"}, Seeds: []uint64{1, 2}, Timed: true}
	g := NewGrid(cfg)
	if err := g.Run(context.Background(), concurrent); err != nil {
		t.Fatal(err)
	}
	got := g.TimedSummaries()
	for p, spec := range cfg.Policies {
		var runs []*TimedRun
		for _, seed := range cfg.Seeds {
			r, err := Timed(nodes, pods, spec, seed, cfg.Options)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		want := AggregateTimed(runs)
		if !reflect.DeepEqual(got[p], want) {
			t.Errorf("%s: %+v, want %+v", spec, got[p], want)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "use TimedSummaries") {
			t.Errorf("Summaries of a timed grid: recovered %v", r)
		}
	}()
	g.Summaries()
}

// The error is the first failing cell's in cell order, once, not one per
// seed, even when a later policy's cells fail first.
func TestGridFirstError(t *testing.T) {
	nodes, pods := gridInputs(t)
	cfg := GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"bestfit", "spread:cpu=x", "rtcr:bogus=1"}, Seeds: []uint64{1, 2, 3}}
	for name, run := range map[string]Runner{"nil": nil, "reverse": reverse, "concurrent": concurrent} {
		err := NewGrid(cfg).Run(context.Background(), run)
		if !errors.Is(err, cluster.ErrUnknownPolicy) || !strings.Contains(err.Error(), `"spread:cpu=x"`) ||
			strings.Contains(err.Error(), "rtcr") || strings.Count(err.Error(), "spread") != 1 {
			t.Errorf("%s runner: %v", name, err)
		}
	}
	// Inputs without times fail every cell of a timed grid alike.
	cfg = GridConfig{Nodes: nodes, Pods: []cluster.Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: 1000}}, Policies: []string{"fgd"}, Seeds: []uint64{1, 2}, Timed: true}
	if err := NewGrid(cfg).Run(context.Background(), concurrent); !errors.Is(err, cluster.ErrBadInput) || strings.Count(err.Error(), "has no creation time") != 1 {
		t.Errorf("timed without times: %v", err)
	}
}

// A done context stops a sequential run before the next cell; the
// summaries then refuse to aggregate cells that did not run.
func TestGridContext(t *testing.T) {
	nodes, pods := gridInputs(t)
	g := NewGrid(GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"bestfit"}, Seeds: []uint64{1, 2}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "before cell 0 (policy bestfit, seed 1) ran") {
			t.Errorf("Summaries before the cells ran: recovered %v", r)
		}
	}()
	g.Summaries()
}

func TestAggregateTimed(t *testing.T) {
	runs := []*TimedRun{
		{Policy: "fgd", MeanAllocRatio: 0.5, PeakAllocRatio: 0.75, MeanFragTotal: 0.1, Failed: 2},
		{Policy: "fgd", MeanAllocRatio: 0.7, PeakAllocRatio: 0.75, MeanFragTotal: 0.3, Failed: 4},
	}
	s := AggregateTimed(runs)
	if s.Policy != "fgd" || s.Seeds != 2 || !clustertest.Near(s.MeanAllocRatio.Mean, 0.6) || !clustertest.Near(s.MeanAllocRatio.Std, 0.141421356) ||
		s.PeakAllocRatio != (MeanStd{Mean: 0.75}) || !clustertest.Near(s.MeanFragTotal.Mean, 0.2) || s.FailedPods.Mean != 3 || !clustertest.Near(s.FailedPods.Std, 1.414213562) {
		t.Errorf("AggregateTimed = %+v", s)
	}
	if (AggregateTimed(nil) != TimedSummary{}) {
		t.Errorf("no runs: %+v", AggregateTimed(nil))
	}
}
