package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Hand-built nodes used by the state, frag and policy tests: an 8-GPU G2
// machine and a 2-GPU T4 machine, with the openb trace's shapes.
var (
	nodeG2 = Node{Name: "g2", MilliCPU: 96000, MemoryMiB: 393216, GPUs: 8, Model: "G2"}
	nodeT4 = Node{Name: "t4", MilliCPU: 104000, MemoryMiB: 524288, GPUs: 2, Model: "T4"}
)

func gpuPod(name string, cpu int64, n int, milli int64, spec ...string) *Pod {
	return &Pod{Name: name, MilliCPU: cpu, MemoryMiB: 1024, NumGPU: n, MilliGPU: milli, GPUSpec: spec}
}

func cpuPod(name string, cpu int64) *Pod {
	return &Pod{Name: name, MilliCPU: cpu, MemoryMiB: 1024}
}

// mustPlace places p on node i's given GPUs or fails the test.
func mustPlace(t testing.TB, s *State, p *Pod, i int, gpus ...int) {
	t.Helper()
	if err := s.Place(p, Placement{Node: i, GPUs: gpus}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestFits(t *testing.T) {
	s := NewState([]Node{nodeG2, nodeT4})
	mustPlace(t, s, gpuPod("a", 90000, 1, 600), 0, 0) // G2: 6000 CPU left; GPU0 has 400 free
	for _, tc := range []struct {
		p    *Pod
		node int
		want bool
	}{
		{cpuPod("cpu", 6000), 0, true},
		{cpuPod("cpu-too-big", 6001), 0, false},
		{&Pod{Name: "mem", MilliCPU: 1, MemoryMiB: 393216 - 1024 + 1}, 0, false}, // 1 MiB more than free
		{gpuPod("share-400", 1000, 1, 400), 0, true},                             // GPU0's 400 or a free GPU
		{gpuPod("eight", 1000, 8, 1000), 0, false},                               // only 7 GPUs fully free
		{gpuPod("seven", 1000, 7, 1000), 0, true},
		{gpuPod("t4-only", 1000, 1, 1000, "T4"), 0, false}, // model not allowed
		{gpuPod("t4-only", 1000, 1, 1000, "T4"), 1, true},
		{gpuPod("t4-or-g2", 1000, 1, 1000, "T4", "G2"), 0, true},
		{gpuPod("three", 1000, 3, 1000), 1, false}, // T4 node has 2 GPUs
	} {
		if got := s.Fits(tc.p, tc.node); got != tc.want {
			t.Errorf("Fits(%s, node %d) = %v, want %v", tc.p.Name, tc.node, got, tc.want)
		}
	}
}

// TestGPUFits checks the filter's GPU check from the nodes' summaries
// against counting the GPUs, on random clusters after random placements
// and removals, for pods of every shape the readers accept and some they
// do not (several shared GPUs, no milli).
func TestGPUFits(t *testing.T) {
	var shapes [][2]int64 // NumGPU, MilliGPU
	for _, n := range []int64{0, 1, 2, 3, 8, 9} {
		for _, m := range []int64{0, 1, 100, 250, 500, 999, MilliGPU} {
			shapes = append(shapes, [2]int64{n, m})
		}
	}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 11))
		nodes, pods := randomCluster(rng, 30, 200)
		s := NewState(nodes)
		sc := NewScheduler(s, BestFit{}, rng)
		var placed []*Pod
		var pls []Placement
		for k := range pods {
			if pl, ok := sc.Schedule(&pods[k]); ok {
				placed, pls = append(placed, &pods[k]), append(pls, pl)
			}
			if k%4 == 3 && len(placed) > 0 { // remove a random placed pod
				j := rng.IntN(len(placed))
				s.Remove(placed[j], pls[j])
				placed, pls = slices.Delete(placed, j, j+1), slices.Delete(pls, j, j+1)
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			i := rng.IntN(len(nodes))
			for _, sh := range shapes {
				p := &Pod{NumGPU: int(sh[0]), MilliGPU: sh[1]}
				if got, want := s.gpuFits(p, i), countAtLeast(s.FreeGPUs(i), p.MilliGPU) >= p.NumGPU; p.NumGPU > 0 && got != want {
					t.Fatalf("seed %d node %d free %v: gpuFits(%d x %d) = %v, counting %v", seed, i, s.FreeGPUs(i), p.NumGPU, p.MilliGPU, got, want)
				}
			}
		}
	}
}

// TestTags checks the per-node counts of GPU pods by shape against a
// recount of the pods running, after random placements and removals of
// sharing pods and pods of 1 to 16 whole GPUs (beyond the counts' fixed
// slots) on 16-GPU nodes.
func TestTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nodes := make([]Node, 4)
	for i := range nodes {
		nodes[i] = Node{Name: string(rune('a' + i)), MilliCPU: 1 << 20, MemoryMiB: 1 << 20, GPUs: 16, Model: "A"}
	}
	s := NewState(nodes)
	type placed struct {
		p  *Pod
		pl Placement
	}
	var running []placed
	for step := range 2000 {
		if len(running) > 0 && rng.IntN(2) == 0 {
			j := rng.IntN(len(running))
			s.Remove(running[j].p, running[j].pl)
			running = slices.Delete(running, j, j+1)
		} else {
			p := gpuPod("p", 1, 1+rng.IntN(16), MilliGPU)
			if rng.IntN(3) == 0 {
				p = gpuPod("s", 1, 1, 100*int64(1+rng.IntN(9)))
			}
			if i := rng.IntN(len(nodes)); s.Fits(p, i) {
				pl := Placement{Node: i, GPUs: bestFitGPUs(s.FreeGPUs(i), p)}
				mustPlace(t, s, p, i, pl.GPUs...)
				running = append(running, placed{p, pl})
			}
		}
		for i := range nodes {
			want := map[int]int32{}
			for _, r := range running {
				if r.pl.Node == i {
					want[tagOf(r.p)]++
				}
			}
			got := s.Tags(i)
			if len(got) != len(want) || int(s.tagKinds[i]) != len(want) {
				t.Fatalf("step %d node %d: tags %v (%d shapes), want %v", step, i, got, s.tagKinds[i], want)
			}
			for tag, n := range want {
				if got[tag] != n || s.tagPods(i, tag) != n {
					t.Fatalf("step %d node %d: tags %v, want %v", step, i, got, want)
				}
			}
		}
	}
}

func TestPlaceRemove(t *testing.T) {
	s := NewState([]Node{nodeG2, nodeT4})
	p := gpuPod("p", 8000, 1, 500)
	v := s.Version(0)
	mustPlace(t, s, p, 0, 3)
	if s.FreeGPUs(0)[3] != 500 || s.FreeCPU(0) != 88000 || s.UsedGPUMilli() != 500 || s.Version(0) == v {
		t.Fatalf("after place: free %v cpu %d used %d", s.FreeGPUs(0), s.FreeCPU(0), s.UsedGPUMilli())
	}
	if s.Tags(0)[-1] != 1 {
		t.Errorf("tags %v, want one sharing pod", s.Tags(0))
	}
	// Misuse is an error that changes nothing.
	for _, pl := range []Placement{{Node: 0, GPUs: []int{3, 3}}, {Node: 5}, {Node: 1, GPUs: []int{9}}, {Node: 0, GPUs: []int{3}}} {
		q := gpuPod("q", 1, len(pl.GPUs), 600)
		if len(pl.GPUs) > 1 {
			q.MilliGPU = MilliGPU
		}
		if err := s.Place(q, pl); err == nil {
			t.Errorf("Place(%+v) succeeded", pl)
		}
	}
	s.Remove(p, Placement{Node: 0, GPUs: []int{3}})
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if s.UsedGPUMilli() != 0 || s.FreeCPU(0) != 96000 || len(s.Tags(0)) != 0 {
		t.Errorf("after remove: used %d cpu %d tags %v", s.UsedGPUMilli(), s.FreeCPU(0), s.Tags(0))
	}
	c := s.Clone()
	mustPlace(t, c, p, 1, 0)
	if s.UsedGPUMilli() != 0 {
		t.Error("Clone shares state with the original")
	}
}

func TestBestFitGPUs(t *testing.T) {
	free := []int64{1000, 300, 600, 1000, 600}
	for _, tc := range []struct {
		p    *Pod
		want []int
	}{
		{gpuPod("s250", 1, 1, 250), []int{1}}, // 300 is the tightest fit
		{gpuPod("s500", 1, 1, 500), []int{2}}, // 600 at index 2 before index 4
		{gpuPod("s700", 1, 1, 700), []int{0}}, // only whole GPUs hold it
		{gpuPod("w2", 1, 2, 1000), []int{0, 3}},
		{cpuPod("c", 1), nil},
	} {
		got := bestFitGPUs(free, tc.p)
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || (len(got) > 1 && got[1] != tc.want[1]) {
			t.Errorf("%s: got %v, want %v", tc.p.Name, got, tc.want)
		}
	}
}

func TestSchedulerTies(t *testing.T) {
	// Three identical idle T4 nodes: every policy scores them the same, so
	// the tie-break order decides.
	nodes := []Node{nodeT4, nodeT4, nodeT4}
	nodes[0].Name, nodes[1].Name, nodes[2].Name = "a", "b", "c"
	s := NewState(nodes)
	sc := NewScheduler(s, BestFit{}, rand.New(rand.NewPCG(1, 2)))
	sc.SetOrder([]int{2, 0, 1})
	pl, ok := sc.Choose(gpuPod("p", 1000, 1, 1000))
	if !ok || pl.Node != 2 {
		t.Errorf("order [2 0 1]: chose %+v, want node 2", pl)
	}
	// Random ties spread over all three.
	sc.RandomTies = true
	seen := map[int]bool{}
	for range 60 {
		pl, _ := sc.Choose(gpuPod("p", 1000, 1, 1000))
		seen[pl.Node] = true
	}
	if len(seen) != 3 {
		t.Errorf("random ties chose only %v", seen)
	}
	defer func() {
		if recover() == nil {
			t.Error("SetOrder accepted a non-permutation")
		}
	}()
	sc.SetOrder([]int{0, 0, 1})
}

func TestScheduleGang(t *testing.T) {
	s := NewState([]Node{nodeT4})
	sc := NewScheduler(s, BestFit{}, rand.New(rand.NewPCG(1, 2)))
	// Two 1-GPU pods fit the 2-GPU node; a third member does not: nothing stays.
	job := []*Pod{gpuPod("j0", 1000, 1, 1000), gpuPod("j1", 1000, 1, 1000), gpuPod("j2", 1000, 1, 1000)}
	if _, ok := sc.ScheduleGang(job); ok {
		t.Fatal("a 3-GPU gang fit a 2-GPU node")
	}
	if s.UsedGPUMilli() != 0 || s.FreeCPU(0) != nodeT4.MilliCPU {
		t.Errorf("failed gang left used %d milli, cpu %d", s.UsedGPUMilli(), s.FreeCPU(0))
	}
	if pls, ok := sc.ScheduleGang(job[:2]); !ok || len(pls) != 2 || s.UsedGPUMilli() != 2000 {
		t.Errorf("2-pod gang: %v %v, used %d", pls, ok, s.UsedGPUMilli())
	}
}

// FindOversized names the pods no node holds even when empty, with what
// they ask that no node has; pods that fit some empty node are not named.
func TestFindOversized(t *testing.T) {
	nodes := []Node{nodeG2, nodeT4, {Name: "t4b", MilliCPU: 104000, MemoryMiB: 524288, GPUs: 2, Model: "T4"}}
	pods := []Pod{
		*gpuPod("fits", 90000, 8, 1000),                // the G2 node
		*gpuPod("gpus", 1000, 64, 1000),                // more GPUs than any node
		*gpuPod("model", 1000, 1, 500, "V100"),         // a model no node has
		*gpuPod("t4s", 1000, 4, 1000, "T4"),            // T4 nodes have 2
		*cpuPod("cpu", 200000),                         // more CPU than any node
		{Name: "mem", MilliCPU: 1, MemoryMiB: 1 << 30}, // more memory
		*gpuPod("together", 100000, 8, 1000),           // 8 GPUs on G2, 100000 CPU on T4 only
	}
	want := []Oversized{
		{1, "asks 64 GPUs; no node has more than 8"},
		{2, "asks GPUs of model V100; no node has that model"},
		{3, "asks 4 GPUs of model T4; no node has more than 2"},
		{4, "asks 200000 milli-CPUs; no node has more than 104000"},
		{5, "asks 1073741824 MiB of memory; no node has more than 524288"},
		{6, "asks 100000 milli-CPUs, 1024 MiB of memory and 8 GPUs; no node has them all"},
	}
	if got := FindOversized(nodes, pods); !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if got := FindOversized(nodes, pods[:1]); got != nil {
		t.Errorf("a pod that fits: %v", got)
	}
}
