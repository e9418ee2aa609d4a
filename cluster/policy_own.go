package cluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
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
	// OrderTies leaves equal scores to the scheduler's node order, as FGD
	// does, instead of breaking them by best fit (addition 2 off).
	OrderTies bool
	// Threshold, in (0, 1), makes the pressure absolute: a model is
	// reserved only when restricted pods would take more than this share of
	// its GPUs (see pressure); 0 keeps the pressure relative to the most
	// pressed model.
	Threshold float64

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

// pressure returns, per GPU model k, how much restricted pods need it,
// from 0 (no reservation) to 1 (the full penalty). The demand d_k of target
// task types restricted to some models is spread evenly over the models
// they allow. With threshold 0 (the first design) it is d_k per GPU of k,
// divided by the largest such value over the models. With a threshold in
// (0, 1) it is absolute: rho_k = (d_k / D) × (C / C_k), the share of k's
// GPUs the restricted pods would take when the whole target demand D fills
// the cluster's C GPUs, mapped to (rho_k - threshold) / (1 - threshold)
// and clamped to [0, 1], so a model restricted pods need little is not
// reserved at all.
func pressure(t *Target, nodes []Node, threshold float64) map[string]float64 {
	capacity := map[string]float64{}
	var total float64
	for _, n := range nodes {
		capacity[n.Model] += float64(n.GPUs)
		total += float64(n.GPUs)
	}
	demand := map[string]float64{}
	var all float64
	for i := range t.Types {
		m := &t.Types[i]
		all += m.Share * float64(int64(m.NumGPU)*m.MilliGPU)
		if len(m.models) == 0 || m.NumGPU == 0 {
			continue
		}
		d := m.Share * float64(int64(m.NumGPU)*m.MilliGPU) / float64(len(m.models))
		for _, k := range m.models {
			demand[k] += d
		}
	}
	out := map[string]float64{}
	if threshold > 0 {
		for k, c := range capacity {
			if c > 0 && all > 0 {
				rho := demand[k] / all * total / c
				out[k] = min(1, max(0, (rho-threshold)/(1-threshold)))
			}
		}
		return out
	}
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
		f.press, f.pressFor = pressure(f.Target, s.nodes, f.Threshold), s.nodes
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
	if f.OrderTies {
		fit = 0
	}
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

// newFGDReserve builds FGDReserve from its options: scarcity=N (0 to 100
// FGD score points, default DefaultScarcity) and tie=fit|order (default
// fit).
func newFGDReserve(spec string, kv map[string]string, target *Target) (Policy, error) {
	f := &FGDReserve{Target: target, Scarcity: DefaultScarcity}
	for k, v := range kv {
		switch k {
		case "scarcity":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0 && x <= 100) {
				return nil, fmt.Errorf("%w %q: option scarcity=%s: want a number of FGD score points from 0 to 100", ErrUnknownPolicy, spec, v)
			}
			f.Scarcity = x
		case "threshold":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0 && x < 1) {
				return nil, fmt.Errorf("%w %q: option threshold=%s: want a share of a model's GPUs from 0 to below 1", ErrUnknownPolicy, spec, v)
			}
			f.Threshold = x
		case "tie":
			switch v {
			case "fit":
			case "order":
				f.OrderTies = true
			default:
				return nil, fmt.Errorf("%w %q: option tie=%s: want fit (best fit) or order (the scheduler's node order, as FGD)", ErrUnknownPolicy, spec, v)
			}
		default:
			return nil, fmt.Errorf("%w %q: unknown option %q (known: scarcity, threshold, tie)", ErrUnknownPolicy, spec, k)
		}
	}
	return f, nil
}
