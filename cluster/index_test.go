package cluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/internal/longtest"
)

// randomCluster draws a small cluster of mixed node shapes and GPU models,
// and pods of every kind (CPU-only, sharing, whole-GPU, model-restricted),
// some grouped into jobs.
func randomCluster(rng *rand.Rand, nodes, pods int) ([]Node, []Pod) {
	models := []string{"A", "B", "C"}
	ns := make([]Node, nodes)
	for i := range ns {
		g := []int{0, 1, 2, 4, 8}[rng.IntN(5)]
		ns[i] = Node{Name: fmt.Sprintf("n%03d", i), MilliCPU: int64(8+rng.IntN(8)) * 8000, MemoryMiB: int64(1+rng.IntN(4)) << 16, GPUs: g}
		if g > 0 {
			ns[i].Model = models[rng.IntN(len(models))]
		}
	}
	ps := make([]Pod, pods)
	for i := range ps {
		p := Pod{Name: fmt.Sprintf("p%04d", i), MilliCPU: int64(1+rng.IntN(8)) * 2000, MemoryMiB: int64(rng.IntN(4)) << 13}
		switch rng.IntN(4) {
		case 1:
			p.NumGPU, p.MilliGPU = 1, []int64{100, 250, 500, 700}[rng.IntN(4)]
		case 2, 3:
			p.NumGPU, p.MilliGPU = []int{1, 2, 4, 8}[rng.IntN(4)], MilliGPU
		}
		if p.NumGPU > 0 && rng.IntN(3) == 0 {
			p.GPUSpec = []string{models[rng.IntN(len(models))]}
		}
		if rng.IntN(5) == 0 {
			p.Job = fmt.Sprintf("job%d", rng.IntN(pods/4+1))
		}
		ps[i] = p
	}
	return ns, ps
}

// trace schedules pods (as gang units when gang), removing a random placed
// pod every third step, and returns every decision as text.
func trace(nodes []Node, pods []Pod, policy Policy, seed uint64, gang, randomTies, forceScan bool) []string {
	s := NewState(nodes)
	sc := NewScheduler(s, policy, rand.New(rand.NewPCG(seed, 2)))
	sc.RandomTies, sc.forceScan = randomTies, forceScan
	sc.SetOrder(rand.New(rand.NewPCG(seed, 3)).Perm(len(nodes)))
	del := rand.New(rand.NewPCG(seed, 4))
	type placed struct {
		p  *Pod
		pl Placement
	}
	var running []placed
	var out []string
	for k, u := range Units(pods, gang) {
		ptrs := make([]*Pod, len(u))
		for j := range u {
			ptrs[j] = &u[j]
		}
		pls, ok := sc.ScheduleGang(ptrs)
		out = append(out, fmt.Sprint(k, ok, pls))
		for j := range pls {
			running = append(running, placed{ptrs[j], pls[j]})
		}
		if k%3 == 2 && len(running) > 0 {
			j := del.IntN(len(running))
			s.Remove(running[j].p, running[j].pl)
			running = append(running[:j], running[j+1:]...)
		}
	}
	return out
}

// TestIndexMatchesScan checks that the scheduler's per-class index chooses
// exactly what filtering and scoring every node chooses, for every policy,
// with gangs (whose failures remove placed pods), departures and a random
// tie-break order, on clusters small enough for the change log to wrap and
// large enough for the index to skip most nodes.
func TestIndexMatchesScan(t *testing.T) {
	longtest.Skip(t)
	specs := append(PolicyNames(), "spread:gpu=1", "volcano-binpack:gpu=2")
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		nodes, pods := randomCluster(rng, []int{1, 3, 40, 300}[seed%4], 600)
		target := NewTarget(pods, 0.95)
		for _, spec := range specs {
			for _, gang := range []bool{false, true} {
				policy, err := NewPolicy(spec, target)
				if err != nil {
					t.Fatal(err)
				}
				want := trace(nodes, pods, policy, seed, gang, false, true)
				policy, _ = NewPolicy(spec, target) // fresh: no state shared with the first run
				got := trace(nodes, pods, policy, seed, gang, false, false)
				if !reflect.DeepEqual(got, want) {
					for k := range want {
						if k >= len(got) || got[k] != want[k] {
							t.Fatalf("seed %d %s gang=%v: step %d: index %q, scan %q", seed, spec, gang, k, got[min(k, len(got)-1)], want[k])
						}
					}
				}
			}
		}
	}
}

// TestSchedulerMode checks which policies take the index: every one the
// CLI knows, and the full scan only where it is needed.
func TestSchedulerMode(t *testing.T) {
	target := testTarget()
	s := NewState([]Node{{Name: "n", MilliCPU: 1000, MemoryMiB: 1000, GPUs: 1, Model: "A"}})
	for _, name := range PolicyNames() {
		p, err := NewPolicy(name, target)
		if err != nil {
			t.Fatal(err)
		}
		sc := NewScheduler(s, p, rand.New(rand.NewPCG(1, 1)))
		if sc.mode() == modeScan {
			t.Errorf("%s: full scan, want the index", name)
		}
		sc.RandomTies = true
		if m := sc.mode(); (m == modeScan) != (name != "random") {
			t.Errorf("%s with RandomTies: mode %d", name, m)
		}
	}
	sc := NewScheduler(s, scaledNormalizer{}, rand.New(rand.NewPCG(1, 1)))
	if sc.mode() != modeScan {
		t.Error("a Normalizer that does not keep the best must take the full scan")
	}
}

// scaledNormalizer is a Normalizer the index cannot trust.
type scaledNormalizer struct{}

func (scaledNormalizer) Name() string                          { return "scaled" }
func (scaledNormalizer) Score(s *State, p *Pod, i int) float64 { return BestFit{}.Score(s, p, i) }
func (scaledNormalizer) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	return bestFitGPUs(s.gpuFree[i], p)
}
func (scaledNormalizer) Normalize([]float64) {}

// TestChangeLogWraps checks that a scheduler far behind the change log
// (more changes than the log keeps) catches up from the nodes' latest
// changes (State.last) and still chooses right.
func TestChangeLogWraps(t *testing.T) {
	nodes := []Node{{Name: "a", MilliCPU: 8000, MemoryMiB: 1 << 20, GPUs: 2, Model: "A"}, {Name: "b", MilliCPU: 8000, MemoryMiB: 1 << 20, GPUs: 1, Model: "A"}}
	s := NewState(nodes)
	sc := NewScheduler(s, BestFit{}, rand.New(rand.NewPCG(1, 1)))
	whole := gpuPod("w", 1000, 1, MilliGPU)
	if pl, ok := sc.Choose(whole); !ok || pl.Node != 1 {
		t.Fatalf("Choose = %v, %v; want node b, the tighter fit", pl, ok)
	}
	// Churn node b past the log's length with a pod of another class.
	other := cpuPod("c", 1000)
	for range 3 * minChangeLog {
		mustPlace(t, s, other, 1)
		s.Remove(other, Placement{Node: 1})
	}
	if _, ok := s.changesSince(0); ok {
		t.Fatal("the change log still reaches back to 0 after 6,144 changes: the test does not exercise the catch-up")
	}
	mustPlace(t, s, gpuPod("x", 1000, 1, MilliGPU), 1, 0)
	pl, ok := sc.Choose(whole)
	if !ok || pl.Node != 0 {
		t.Fatalf("after the log wrapped: Choose = %v, %v; want node a, the only one with a free GPU", pl, ok)
	}
}

// TestScoreKeys checks the promise of the policies that are scoreKeyers,
// whose pods share a tree by scoreKey: pods of equal scoreKey (here
// differing in memory, name and allowed models) score alike on every
// node. KubeFit and VolcanoBinpack weigh memory: their scoreKey holds it.
func TestScoreKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	nodes, pods := randomCluster(rng, 30, 300)
	target := NewTarget(pods, 1)
	s := NewState(nodes)
	sc := NewScheduler(s, &FGD{Target: target}, rng)
	for k := range pods[:100] {
		sc.Schedule(&pods[k])
	}
	keyed, pairs := 0, 0
	for _, name := range PolicyNames() {
		pol, err := NewPolicy(name, target)
		if err != nil {
			t.Fatal(err)
		}
		kp, ok := pol.(scoreKeyer)
		if !ok {
			continue
		}
		keyed++
		for a := 100; a < len(pods); a++ {
			p := pods[a]
			q := p
			q.MemoryMiB = p.MemoryMiB*3 + 12345
			var others []*Pod
			if kp.scoreKey(&q) == kp.scoreKey(&p) {
				others = append(others, &q)
			}
			for b := a + 1; b < len(pods); b++ {
				if kp.scoreKey(&pods[b]) == kp.scoreKey(&p) && (pods[b].MemoryMiB != p.MemoryMiB || !slices.Equal(pods[b].GPUSpec, p.GPUSpec)) {
					others = append(others, &pods[b])
				}
			}
			for _, o := range others {
				pairs++
				for i := range nodes {
					if x, y := pol.Score(s, &p, i), pol.Score(s, o, i); x != y {
						t.Fatalf("%s: node %d scores %v for %+v, %v for %+v (same scoreKey)", name, i, x, p, y, *o)
					}
				}
			}
		}
	}
	if keyed == 0 || pairs < 1000 {
		t.Fatalf("%d scoreKeyers, %d pairs compared: the test checks too little", keyed, pairs)
	}
	p, q := pods[0], pods[0]
	q.MemoryMiB++
	for _, k := range []scoreKeyer{&KubeFit{Strategy: "spread", Memory: 1}, &VolcanoBinpack{Memory: 1}} {
		if k.scoreKey(&p) == k.scoreKey(&q) {
			t.Errorf("%s scores memory, but its scoreKey does not hold it", k.Name())
		}
	}
}

// TestTreesRecycled checks that a run on trees recycled from earlier runs
// (Release gives them back) is the run on fresh trees.
func TestTreesRecycled(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	nodes, pods := randomCluster(rng, 60, 400)
	target := NewTarget(pods, DefaultCoverage)
	run := func(spec string, seed uint64) []string {
		policy, err := NewPolicy(spec, target)
		if err != nil {
			t.Fatal(err)
		}
		sc := NewScheduler(NewState(nodes), policy, rand.New(rand.NewPCG(seed, 2)))
		sc.SetOrder(rand.New(rand.NewPCG(seed, 3)).Perm(len(nodes)))
		out := make([]string, len(pods))
		for i := range pods {
			pl, ok := sc.Schedule(&pods[i])
			out[i] = fmt.Sprint(ok, pl)
		}
		sc.Release()
		return out
	}
	want := run("fgd", 1)
	for _, spec := range []string{"bestfit", "fgd-reserve", "fgd"} {
		for seed := range uint64(3) {
			run(spec, seed+2)
		}
		if got := run("fgd", 1); !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s runs: the run differs from the first", spec)
		}
	}
}
