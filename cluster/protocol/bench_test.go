package protocol

import (
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
	"github.com/gpufrag/gpufrag/internal/longtest"
)

// BenchmarkExperiment runs one policy for one seed through the whole FGD
// protocol on the full default trace (1213 nodes, about 10,600 pods after
// inflation to 130%), reading excluded. It skips without the shared trace.
//
//	go test ./cluster/protocol -run '^$' -bench Experiment -benchmem -benchtime 3x
func BenchmarkExperiment(b *testing.B) {
	nodes := clustertest.Nodes(b, clustertest.Shared(b, "openb_node_list_gpu_node.csv"))
	pods := clustertest.Pods(b, clustertest.Shared(b, "openb_pod_list_default.csv"))
	for _, policy := range []string{"fgd", "fgd-reserve", "bestfit", "random"} {
		b.Run("policy="+policy+"/seed=42", func(b *testing.B) {
			b.ReportAllocs()
			var r *Run
			cpu0 := cpuSeconds()
			for b.Loop() {
				var err error
				if r, err = Experiment(nodes, pods, policy, 42, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
			p, _ := r.At(100)
			b.ReportMetric(100*(1-p.AllocRatio), "unalloc-%@100")
		})
	}
}

// Published figures of the FGD artifact (research/cluster.md §1.4): mean
// unallocated GPU share at 100% arrived demand over seeds 42-51.
var published = map[string]map[string]float64{
	"default":    {"random": 13.70, "dotprod": 9.38, "clustering": 8.35, "packing": 8.22, "bestfit": 7.14, "fgd": 4.77},
	"gpuspec33":  {"random": 16.13, "fgd": 12.16},
	"multigpu50": {"packing": 3.94, "fgd": 2.91},
}

// TestPublishedFigures checks, with two seeds (42, 43), that the simulator
// lands within 1.5 percentage points of the published 10-seed means, the
// tolerance the project's contract check uses; docs/findings.md has
// the 10-seed comparison (within 1 point). It takes about 5 s on two cores.
func TestPublishedFigures(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("about 5 s: skipped with -short")
	}
	nodes := clustertest.Nodes(t, clustertest.Shared(t, "openb_node_list_gpu_node.csv"))
	for file, want := range published {
		pods := clustertest.Pods(t, clustertest.Shared(t, "openb_pod_list_"+file+".csv"))
		var fgd float64
		for policy, pub := range want {
			var sum float64
			for seed := uint64(42); seed < 44; seed++ {
				r, err := Experiment(nodes, pods, policy, seed, Options{})
				if err != nil {
					t.Fatal(err)
				}
				p, _ := r.At(100)
				sum += 100 * (1 - p.AllocRatio)
			}
			got := sum / 2
			if policy == "fgd" {
				fgd = got
			}
			if d := got - pub; d > 1.5 || d < -1.5 {
				t.Errorf("%s %s: %.2f%% unallocated at 100%%, published %.2f%%", file, policy, got, pub)
			}
		}
		// Our policy: fewer unallocated GPUs than FGD with the production
		// share of GPU-type constraints (gpuspec33: about 10% against 12%,
		// 2.2 points over 10 seeds, see FGDReserve); without constraints it
		// is FGD exactly, so it must not be worse at all.
		var sum float64
		for seed := uint64(42); seed < 44; seed++ {
			r, _ := Experiment(nodes, pods, "recommended", seed, Options{})
			p, _ := r.At(100)
			sum += 100 * (1 - p.AllocRatio)
		}
		margin := 0.0
		if file == "gpuspec33" {
			margin = -1.5
		}
		if sum/2 > fgd+margin {
			t.Errorf("%s: recommended %.2f%% unallocated, FGD %.2f%% (allowed margin %+.1f)", file, sum/2, fgd, margin)
		}
	}
}

// scaleNodes returns n nodes cycling through base, renamed scaled-00000,
// ...: the openb GPU node list (1213 nodes) scaled to a larger cluster
// with the same mix of node shapes and GPU models. The pod list is then
// inflated by the protocol itself to 130% of the larger capacity, so the
// pods grow with the nodes (10,000 nodes: about 87,000 pods).
func scaleNodes(base []cluster.Node, n int) []cluster.Node {
	out := make([]cluster.Node, n)
	for k := range out {
		out[k] = base[k%len(base)]
		out[k].Name = fmt.Sprintf("scaled-%05d", k)
	}
	return out
}

// BenchmarkScale runs one seed of the FGD protocol on the openb node list
// scaled to 1,000 and 10,000 nodes with the default pod list, for the
// policy the project recommends and the two the FGD paper compares most
// (reading excluded). It skips without the shared trace.
//
//	go test ./cluster/protocol -run '^$' -bench Scale -benchmem -benchtime 1x
func BenchmarkScale(b *testing.B) {
	base := clustertest.Nodes(b, clustertest.Shared(b, "openb_node_list_gpu_node.csv"))
	pods := clustertest.Pods(b, clustertest.Shared(b, "openb_pod_list_default.csv"))
	for _, n := range []int{1000, 10000} {
		nodes := scaleNodes(base, n)
		for _, policy := range []string{"fgd", "bestfit", "recommended"} {
			b.Run(fmt.Sprintf("nodes=%d/policy=%s", n, policy), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Experiment(nodes, pods, policy, 42, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// gridLists are the pod lists of BenchmarkGrid: the three shared openb
// lists and one generated list of each family (judge.JudgeLists' middle
// shares), a sample of the 24-list grid of the judge protocol with the
// same kinds of lists.
func gridLists(b *testing.B) []gen.List {
	base := clustertest.Pods(b, clustertest.Shared(b, "openb_pod_list_default.csv"))
	specs := clustertest.Pods(b, clustertest.Shared(b, "openb_pod_list_gpuspec33.csv"))
	var out []gen.List
	for _, name := range []string{"default", "gpuspec33", "multigpu50"} {
		out = append(out, gen.List{Name: name, Pods: clustertest.Pods(b, clustertest.Shared(b, "openb_pod_list_"+name+".csv"))})
	}
	// judge.JudgeLists' middle shares (the judge package imports this one).
	cfgs := []gen.GenConfig{{Family: gen.FamilyCPU, Share: 0.15, Seed: 202}, {Family: gen.FamilyGPUShare, Share: 0.50, Seed: 205},
		{Family: gen.FamilyGPUSpec, Share: 0.20, Seed: 208}, {Family: gen.FamilyMultiGPU, Share: 0.30, Seed: 211}}
	gen, err := gen.GenerateLists(base, specs, cfgs)
	if err != nil {
		b.Fatal(err)
	}
	return append(out, gen...)
}

// BenchmarkGrid is one seed (42) of every policy (PolicyNames, 11) on one
// pod list, as a Grid runs them one after another: the cell of the
// comparison grid behind cluster simulate, judge and the experiment suite
// (lists × policies × seeds). An op is the 11 runs (B/op and allocs/op
// are theirs); ns/run and cpu-ms/run (the process's CPU time, GC
// included: on a loaded machine wall time counts other processes) are per
// (policy, seed) run. It skips without the shared trace.
//
//	go test ./cluster/protocol -run '^$' -bench Grid -benchmem -count 6
func BenchmarkGrid(b *testing.B) {
	nodes := clustertest.Nodes(b, clustertest.Shared(b, "openb_node_list_gpu_node.csv"))
	for _, l := range gridLists(b) {
		b.Run("list="+l.Name, func(b *testing.B) {
			b.ReportAllocs()
			cfg := GridConfig{Nodes: nodes, Pods: l.Pods, Policies: cluster.PolicyNames(), Seeds: []uint64{42}}
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := NewGrid(cfg).Run(b.Context(), nil); err != nil {
					b.Fatal(err)
				}
			}
			runs := float64(b.N * len(cfg.Policies))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/runs, "ns/run")
			b.ReportMetric((cpuSeconds()-cpu0)*1e3/runs, "cpu-ms/run")
		})
	}
}

// BenchmarkCell is one policy with seeds 42 and 43 on one of the first two
// lists of BenchmarkGrid (default, gpuspec33): a cell of the grid by
// itself, for comparing policies and for counting one policy's
// instructions and cache misses under cachegrind, where the load of a
// shared machine does not count (docs/benchmarks.md, issue 27's third
// round; subtract a run of 'Cell/list=none', the setup alone). It skips
// without the shared trace.
//
//	go test ./cluster/protocol -run '^$' -bench 'Cell/list=default/policy=fgd$' -benchtime 1x
func BenchmarkCell(b *testing.B) {
	nodes := clustertest.Nodes(b, clustertest.Shared(b, "openb_node_list_gpu_node.csv"))
	for _, l := range gridLists(b)[:2] {
		for _, p := range cluster.PolicyNames() {
			b.Run("list="+l.Name+"/policy="+p, func(b *testing.B) {
				cfg := GridConfig{Nodes: nodes, Pods: l.Pods, Policies: []string{p}, Seeds: []uint64{42, 43}}
				cpu0 := cpuSeconds()
				for b.Loop() {
					if err := NewGrid(cfg).Run(b.Context(), nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N*len(cfg.Seeds)), "cpu-ms/run")
			})
		}
	}
}
