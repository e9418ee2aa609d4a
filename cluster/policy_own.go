package cluster

import (
	"math/rand/v2"
)

// FGDReserve is our policy (CLI name fgd-reserve, alias recommended): FGD's
// fragmentation gradient, with two additions that FGD's own measure cannot
// see.
//
//  1. Scarce GPU models are kept for the pods that can use nothing else.
//     From the target workload it computes, for each GPU model k, the
//     pressure on it: the GPU demand of task types restricted to a set of
//     models (spread evenly over that set) per GPU of model k in the cluster.
//     A GPU pod that may use other models loses Scarcity points of FGD's
//     0-100 score times k's pressure relative to the most pressed model.
//     FGD counts a constrained task's blocked GPUs as fragments, but a
//     flexible pod that takes the last T4 GPUs looks no worse to it than
//     one that takes G2 GPUs, so T4-only pods arriving later fail.
//  2. Ties (FGD's integer scores tie often) go to the tightest node, best
//     fit on CPU and GPU, before the fixed node order: consolidation keeps
//     whole nodes free for 8-GPU pods.
//
// Why it wins, on the FGD protocol (10 seeds, 42-51; unallocated GPU share at
// 100% arrived demand; FGD in parentheses; docs/findings.md, experiments 18,
// 21 and 22): gpuspec33 5.74% (12.13%; FGD published 12.16%), default 4.74%
// (4.85%), multigpu50 2.84% (2.90%). Without GPU-type constraints (default,
// multigpu50) the pressure is zero everywhere and only the tie-break acts,
// so the gain is small there; with the production share of constraints the
// reservation halves the unallocated GPUs. With upstream kube-scheduler's
// random tie-breaking (Options.RandomTies, cluster simulate --random-ties)
// FGD falls to 10.26% on default, fgd-reserve keeps 4.79%: the best-fit
// tie-break does the consolidating that the artifact's fixed node order did
// for FGD. Scarcity = 20 is a round value; in an earlier variant 10, 20 and
// 40 gave 8.5%, 5.9% and 6.3% on gpuspec33 (2 seeds), all far below FGD, so
// the gain does not hinge on the constant.
type FGDReserve struct {
	Target *Target
	// Scarcity is the penalty, in FGD score points, for a flexible GPU pod
	// on the most pressed model.
	Scarcity float64

	press    map[string]float64 // per model, relative to the most pressed: 0..1
	pressFor []Node             // the nodes press was computed for
}

// DefaultScarcity is FGDReserve's penalty: 20 of FGD's 100 points, enough
// to outweigh the few points by which FGD's scores of a sharing pod differ
// between nodes, not so much that a flexible pod leaves a scarce model's
// node when every other choice fragments badly (at 40 the gain shrinks).
const DefaultScarcity = 20

// Name implements Policy.
func (*FGDReserve) Name() string { return "fgd-reserve" }

// pressure returns, per GPU model, the GPU demand of target task types
// restricted to some models (spread evenly over the models they allow) per
// GPU of that model, divided by the largest such value (all zero when no
// type is restricted).
func pressure(t *Target, nodes []Node) map[string]float64 {
	capacity := map[string]float64{}
	for _, n := range nodes {
		capacity[n.Model] += float64(n.GPUs)
	}
	demand := map[string]float64{}
	for i := range t.Types {
		m := &t.Types[i]
		if len(m.models) == 0 || m.NumGPU == 0 {
			continue
		}
		d := m.Share * float64(int64(m.NumGPU)*m.MilliGPU) / float64(len(m.models))
		for _, k := range m.models {
			demand[k] += d
		}
	}
	out := map[string]float64{}
	top := 0.0
	for k, c := range capacity {
		if c > 0 {
			out[k] = demand[k] / c
			top = max(top, out[k])
		}
	}
	for k := range out {
		if top > 0 {
			out[k] /= top
		}
	}
	return out
}

// Score implements Policy.
func (f *FGDReserve) Score(s *State, p *Pod, i int) float64 {
	sc, _ := f.best(s, p, i)
	return sc
}

func (f *FGDReserve) penalty(s *State, p *Pod, i int) float64 {
	if p.NumGPU == 0 || len(p.GPUSpec) == 1 || f.Scarcity == 0 {
		return 0
	}
	if f.press == nil || len(f.pressFor) != len(s.nodes) || (len(s.nodes) > 0 && &f.pressFor[0] != &s.nodes[0]) {
		f.press, f.pressFor = pressure(f.Target, s.nodes), s.nodes
	}
	return f.Scarcity * f.press[s.nodes[i].Model]
}

// best returns the score and, for a sharing pod, the GPU giving it.
func (f *FGDReserve) best(s *State, p *Pod, i int) (float64, int) {
	model, free := s.nodes[i].Model, s.gpuFree[i]
	before := f.Target.nodeFrag(s, i)
	cpu := s.cpuFree[i] - p.MilliCPU
	// Best fit, as BestFit measures it (0..1, lower is tighter), scaled
	// below one score point so it only breaks ties.
	fit := 1e-3 * (0.5*float64(s.FreeGPUMilli(i)-p.GPUMilli())/maxSpecGPU + 0.5*float64(cpu)/maxSpecCPU)
	base := -f.penalty(s, p, i) - fit
	var scratch [MaxGPUsPerNode]int64 // on the stack: scoring runs once per node and class
	buf := scratchFor(&scratch, len(free))
	copy(buf, free)
	if !p.Sharing() {
		takeLeastSufficient(buf, p)
		return fgdScore(before-f.Target.NodeFrag(model, cpu, buf)) + base, -1
	}
	best, bestGPU := 0.0, -1
	for g, fr := range free {
		if fr < p.MilliGPU || seenBefore(free, g) {
			continue
		}
		buf[g] -= p.MilliGPU
		sc := fgdScore(before-f.Target.NodeFrag(model, cpu, buf)) + base
		buf[g] += p.MilliGPU
		if bestGPU < 0 || sc > best {
			best, bestGPU = sc, g
		}
	}
	return best, bestGPU
}

// GPUs implements Policy.
func (f *FGDReserve) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	if !p.Sharing() {
		return firstFreeGPUs(s.gpuFree[i], p)
	}
	_, g := f.best(s, p, i)
	return []int{g}
}
