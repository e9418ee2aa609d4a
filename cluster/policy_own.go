package cluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// FGDReserve is our policy (CLI name fgd-reserve, alias recommended): FGD's
// fragmentation gradient, plus a reservation of scarce GPU models that
// FGD's own measure cannot see.
//
// Scarce GPU models are kept for the pods that can use nothing else. From
// the target workload it computes, for each GPU model k, the pressure on
// it (see pressure): the share of k's GPUs that task types restricted to
// some models (their demand spread evenly over the models they allow)
// would take when the target demand fills the cluster, above Threshold,
// scaled to 0..1. A GPU pod that may use other models loses Scarcity
// points of FGD's 0-100 score times k's pressure. FGD counts a constrained
// task's blocked GPUs as fragments, but a flexible pod that takes the last
// T4 GPUs looks no worse to it than one that takes G2 GPUs, so T4-only pods
// arriving later fail. Where no model is pressed beyond Threshold (every
// list without GPU-type constraints, and light ones) the policy is FGD
// exactly: same scores, same tie order, same GPUs.
//
// A best-fit tie-break (FitTies, tie=fit) was the first design's second
// addition; it is off by default because it loses out of sample (below).
//
// How the defaults were chosen (gpufrag cluster judge; unallocated GPU
// share at 100% arrived demand, paired against FGD, 95% Student-t
// intervals; judge.TuneLists/JudgeLists generated from openb's default
// list, restrictions drawn from gpuspec33):
//
//   - Tuned on judge.TuneLists (8 generated lists, 2 per family) with
//     seeds 1042-1051: the first design (relative pressure, best-fit ties,
//     Scarcity 20) and its 9 variants of Scarcity 0-40 and tie order; then
//     absolute pressure with Threshold 0.5 or 0.75 and Scarcity 10-40. Round
//     1 chose Scarcity 10, Threshold 0.5, best-fit ties (tuning mean -0.135
//     points); on judge.JudgeLists (seeds 42-51) it was worse than FGD
//     beyond noise on the cpu family (+0.13 points: the tie-break), so it
//     was not recommended. Round 2, on the tuning lists only, took the
//     tie-break out: Scarcity 10/20/40 at Threshold 0.5 gave -0.13/-0.22/
//     -0.07 points on the gpuspec family; 20 was kept.
//   - Validated on fresh lists (judge.JudgeLists, generator seeds +100,
//     seeds 52-61, never used before) and the three shared lists: equal to
//     FGD on every cpu, gpushare, multigpu and default list (identical
//     runs), better on gpuspec-0.33 (-2.26 points) and gpuspec33 (-2.23:
//     12.25% -> 10.02%), equal on gpuspec-0.05 and -0.20; mean over
//     families -0.23 points. Out of sample on the 21 other public openb
//     lists (seeds 42-51; read-only, never tuned on): identical to FGD on
//     the 17 without constraints, equal on gpuspec05 and gpuspec20, better
//     on gpuspec25 (-0.28); worse on none; mean over families -0.02.
//
// So it beats FGD only where GPU-type constraints press a model (about a
// quarter or more of GPU tasks restricted, as in production), and is FGD
// elsewhere. The first design's larger gain on gpuspec33 (5.7% against
// FGD's 12.1%) came with losses of up to 0.8 points elsewhere (gpuspec10,
// cpu100, gpushare lists), the issue-17 finding.
type FGDReserve struct {
	Target *Target
	// Scarcity is the penalty, in FGD score points, for a flexible GPU pod
	// on a model at full pressure. Default DefaultScarcity.
	Scarcity float64
	// Threshold, in (0, 1), is the share of a model's GPUs restricted pods
	// may take before it is reserved (see pressure); 0 is the first
	// design's pressure relative to the most pressed model.
	Threshold float64
	// FitTies breaks FGD's equal scores by best fit on CPU and GPU
	// before the scheduler's node order (the first design).
	FitTies bool

	press    map[string]float64 // per model: 0..1
	pressFor []Node             // the nodes press was computed for
}

// DefaultScarcity is FGDReserve's penalty at full pressure, 20 of FGD's
// 100 points: enough to outweigh the few points by which FGD's scores of
// a sharing pod differ between nodes. Tuned on judge.TuneLists (seeds
// 1042-1051; 10, 20, 40 gave -0.13, -0.22, -0.07 points on the gpuspec
// family with DefaultThreshold); validated on fresh JudgeLists (seeds
// 52-61), the shared lists and the 21 public openb lists (FGDReserve).
const DefaultScarcity = 20

// DefaultThreshold is FGDReserve's pressure threshold: a model is reserved
// once restricted pods would take more than half of its GPUs. Tuned on
// judge.TuneLists against 0.75 (-0.22 against +0.05 points on the
// gpuspec family) and against the relative pressure (0), which reserved
// T4 at 10% restricted tasks and lost up to 1.3 points there; validated
// as DefaultScarcity.
const DefaultThreshold = 0.5

// Name implements Policy.
func (*FGDReserve) Name() string { return "fgd-reserve" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request and,
// for the penalty, whether the pod may use one GPU model only.
func (*FGDReserve) scoreKey(p *Pod) scoreKey {
	k := requestKey(p)
	if len(p.GPUSpec) == 1 {
		k.spec = 1
	}
	return k
}

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
	free := s.gpuFree[i]
	before := f.Target.nodeFrag(s, i)
	cpu := s.cpuFree[i] - p.MilliCPU
	// Best fit, as BestFit measures it (0..1, lower is tighter), scaled
	// below one score point so it only breaks ties.
	fit := 1e-3 * (0.5*float64(s.FreeGPUMilli(i)-p.GPUMilli())/maxSpecGPU + 0.5*float64(cpu)/maxSpecCPU)
	if !f.FitTies {
		fit = 0
	}
	base := -f.penalty(s, p, i) - fit
	var scratch [MaxGPUsPerNode]int64 // on the stack: scoring runs once per node and class
	buf := scratchFor(&scratch, len(free))
	copy(buf, free)
	if !p.Sharing() {
		takeLeastSufficient(buf, p)
		return fgdScore(before-s.fragWith(f.Target, i, cpu, buf)) + base, -1
	}
	best, bestGPU := 0.0, -1
	for g, fr := range free {
		if fr < p.MilliGPU || seenBefore(free, g) {
			continue
		}
		buf[g] -= p.MilliGPU
		sc := fgdScore(before-s.fragWith(f.Target, i, cpu, buf)) + base
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
// FGD score points, default DefaultScarcity), threshold=X (default
// DefaultThreshold) and tie=order|fit (default order). The first design
// is fgd-reserve:threshold=0,tie=fit.
func newFGDReserve(spec string, kv map[string]string, target *Target) (Policy, error) {
	f := &FGDReserve{Target: target, Scarcity: DefaultScarcity, Threshold: DefaultThreshold}
	for k, v := range kv {
		switch k {
		case "scarcity":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0 && x <= 100) {
				return nil, fmt.Errorf("%w %q: option scarcity=%s: want a number of FGD score points from 0 to 100", ErrPolicyOptions, spec, v)
			}
			f.Scarcity = x
		case "threshold":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0 && x < 1) {
				return nil, fmt.Errorf("%w %q: option threshold=%s: want a share of a model's GPUs from 0 to below 1", ErrPolicyOptions, spec, v)
			}
			f.Threshold = x
		case "tie":
			switch v {
			case "fit":
				f.FitTies = true
			case "order":
			default:
				return nil, fmt.Errorf("%w %q: option tie=%s: want fit (best fit) or order (the scheduler's node order, as FGD)", ErrPolicyOptions, spec, v)
			}
		default:
			return nil, fmt.Errorf("%w %q: unknown option %q (known: scarcity, threshold, tie)", ErrPolicyOptions, spec, k)
		}
	}
	return f, nil
}
