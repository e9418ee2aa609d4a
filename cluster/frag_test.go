package cluster

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewTarget(t *testing.T) {
	var pods []Pod
	add := func(n int, p Pod) {
		for range n {
			p.Name = "p" + string(rune('a'+len(pods)%26)) + string(rune('a'+len(pods)/26))
			pods = append(pods, p)
		}
	}
	add(10, Pod{MilliCPU: 8000, NumGPU: 1, MilliGPU: 1000})
	add(6, Pod{MilliCPU: 4000, NumGPU: 1, MilliGPU: 500})
	add(3, Pod{MilliCPU: 2000})
	add(1, Pod{MilliCPU: 64000, NumGPU: 8, MilliGPU: 1000})
	// 20 pods; 95% coverage needs 19: the first three types (10+6+3 = 19
	// pods) reach it, the 8-GPU type is left out; shares 10/19, 6/19, 3/19.
	tg := NewTarget(pods, 0.95)
	if len(tg.Types) != 3 {
		t.Fatalf("got %d types, want 3: %+v", len(tg.Types), tg.Types)
	}
	for i, want := range []float64{10.0 / 19, 6.0 / 19, 3.0 / 19} {
		if math.Abs(tg.Types[i].Share-want) > 1e-12 {
			t.Errorf("type %d share %v, want %v", i, tg.Types[i].Share, want)
		}
	}
	if tg.Types[2].NumGPU != 0 || tg.Types[2].MilliCPU != 2000 {
		t.Errorf("third type %+v, want the CPU-only one", tg.Types[2])
	}
	// Coverage 1 keeps all four.
	if n := len(NewTarget(pods, 1).Types); n != 4 {
		t.Errorf("coverage 1: %d types, want 4", n)
	}
}

// testTarget is half whole-GPU tasks (1 GPU, 8 cores), half sharing tasks
// (500 milli, 4 cores).
func testTarget() *Target {
	return &Target{Types: []TaskType{
		{MilliCPU: 8000, NumGPU: 1, MilliGPU: 1000, Share: 0.5},
		{MilliCPU: 4000, NumGPU: 1, MilliGPU: 500, Share: 0.5},
	}}
}

func TestNodeFrag(t *testing.T) {
	tg := testTarget()
	withCPU := &Target{Types: append(testTarget().Types, TaskType{MilliCPU: 1000})}
	for i := range withCPU.Types {
		withCPU.Types[i].Share = 1.0 / 3
	}
	t4only := &Target{Types: []TaskType{{MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000, Share: 1, models: []string{"T4"}}}}
	for _, tc := range []struct {
		name  string
		tg    *Target
		model string
		cpu   int64
		free  []int64
		want  float64
	}{
		// Both types fit two free GPUs and no GPU is a sliver: nothing is fragment.
		{"idle", tg, "T4", 104000, []int64{1000, 1000}, 0},
		// [500 1000]: the whole type fits GPU1 but not GPU0's 500 (0.5*500);
		// the sharing type uses both: 250.
		{"half-used", tg, "T4", 104000, []int64{500, 1000}, 250},
		// [500 500]: whole type fits nowhere, all 1000 idle count (0.5*1000);
		// the sharing type fits: 500.
		{"two-halves", tg, "T4", 104000, []int64{500, 500}, 500},
		// [300 1000]: whole type: 300 is a sliver (0.5*300); sharing type:
		// 300 < 500 is a sliver too (0.5*300): 300.
		{"sliver", tg, "T4", 104000, []int64{300, 1000}, 300},
		// 6000 CPU: the whole type (8000 cores) lacks CPU, all 2000 idle
		// count (0.5*2000); the sharing type (4000) fits: 1000.
		{"cpu-short", tg, "T4", 6000, []int64{1000, 1000}, 1000},
		// A CPU-only type counts all idle GPU milli: 1/3 * 2000.
		{"cpu-type", withCPU, "T4", 104000, []int64{1000, 1000}, 2000.0 / 3},
		// A type restricted to T4 sees a G2 node's idle GPUs as fragment.
		{"no-access", t4only, "G2", 96000, []int64{1000, 0}, 1000},
		{"access", t4only, "T4", 96000, []int64{1000, 0}, 0},
		{"full", tg, "T4", 0, []int64{0, 0}, 0},
	} {
		if got := tc.tg.NodeFrag(tc.model, tc.cpu, tc.free); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: NodeFrag = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFragTableMatchesNodeFrag checks that the table the state and the FGD
// policies evaluate fragmentation with gives Target.NodeFrag's result bit
// for bit, on random clusters (models, restricted types, CPU-only types)
// after random placements and for hypothetical free vectors.
func TestFragTableMatchesNodeFrag(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 9))
		nodes, pods := randomCluster(rng, 40, 300)
		tg := NewTarget(pods, 1)
		s := NewState(nodes)
		sc := NewScheduler(s, &FGD{Target: tg}, rng)
		for k := range pods {
			if k%3 == 0 {
				sc.Schedule(&pods[k])
			}
		}
		for i, n := range nodes {
			if got, want := s.nodeFrag(tg, i), tg.NodeFrag(n.Model, s.FreeCPU(i), s.FreeGPUs(i)); got != want {
				t.Fatalf("seed %d node %d: table %v, NodeFrag %v", seed, i, got, want)
			}
			free := slices.Clone(s.FreeGPUs(i))
			for g := range free {
				free[g] = rng.Int64N(MilliGPU + 1)
			}
			cpu := rng.Int64N(n.MilliCPU + 1)
			if got, want := s.fragWith(tg, i, cpu, free), tg.NodeFrag(n.Model, cpu, free); got != want {
				t.Fatalf("seed %d node %d free %v cpu %d: table %v, NodeFrag %v", seed, i, free, cpu, got, want)
			}
		}
	}
}
