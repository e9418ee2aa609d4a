package cluster

import (
	"math"
	"math/rand/v2"
)

// Constants of the FGD artifact's score plugins.
const (
	maxNodeScore = 100 // Kubernetes framework.MaxNodeScore
	// maxSpecCPU and maxSpecGPU normalise resource vectors in the dot-product
	// and best-fit scores: the largest node of the openb cluster (128 cores,
	// 8 GPUs), hard-coded so in the artifact.
	maxSpecCPU = 128000
	maxSpecGPU = 8 * MilliGPU
)

// FGD is fragmentation gradient descent (Weng et al., USENIX ATC '23): the
// pod goes where the node's expected fragmentation F_n(M) grows least. As in
// the artifact, the decrease in whole GPUs goes through a logistic function
// and is truncated to an integer score from 0 to 100 (so near-equal moves
// tie and ties are broken at random); a sharing pod tries every GPU that
// holds it and keeps the best (lowest index on ties); whole-GPU pods take
// the fully free GPUs of lowest index.
type FGD struct{ Target *Target }

// Name implements Policy.
func (*FGD) Name() string { return "fgd" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request.
func (*FGD) scoreKey(p *Pod) scoreKey { return requestKey(p) }

// fgdScore maps a fragmentation decrease in milli to the plugin's score.
func fgdScore(decrease float64) float64 {
	return math.Trunc(maxNodeScore / (1 + math.Exp(-decrease/MilliGPU)))
}

// Score implements Policy.
func (f *FGD) Score(s *State, p *Pod, i int) float64 {
	sc, _ := f.best(s, p, i)
	return sc
}

// best returns the score and, for a sharing pod, the GPU that gives it.
func (f *FGD) best(s *State, p *Pod, i int) (float64, int) {
	free := s.gpuFree[i]
	before := f.Target.nodeFrag(s, i)
	cpu := s.cpuFree[i] - p.MilliCPU
	var scratch [MaxGPUsPerNode]int64 // on the stack: scoring runs once per node and class
	buf := scratchFor(&scratch, len(free))
	copy(buf, free)
	if !p.Sharing() {
		takeLeastSufficient(buf, p)
		return fgdScore(before - s.fragWith(f.Target, i, cpu, buf)), -1
	}
	best, bestGPU := 0.0, -1
	for g, fr := range free {
		if fr < p.MilliGPU || seenBefore(free, g) {
			continue
		}
		buf[g] -= p.MilliGPU
		sc := fgdScore(before - s.fragWith(f.Target, i, cpu, buf))
		buf[g] += p.MilliGPU
		if bestGPU < 0 || sc > best {
			best, bestGPU = sc, g
		}
	}
	return best, bestGPU
}

// scratchFor returns n int64s of scratch, from arr when they fit (nodes
// the readers accept always do).
func scratchFor(arr *[MaxGPUsPerNode]int64, n int) []int64 {
	if n <= len(arr) {
		return arr[:n]
	}
	return make([]int64, n)
}

// seenBefore reports whether a GPU before g has the same free milli: it
// would score the same, and the first index wins ties.
func seenBefore(free []int64, g int) bool {
	for _, f := range free[:g] {
		if f == free[g] {
			return true
		}
	}
	return false
}

// takeLeastSufficient subtracts a non-sharing pod's GPUs from free, taking
// the GPUs with the least free milli that still hold the per-GPU share (for
// whole-GPU pods: fully free ones), as the artifact's NodeResource.Sub does.
func takeLeastSufficient(free []int64, p *Pod) {
	for n := p.NumGPU; n > 0; n-- {
		best := -1
		for g, f := range free {
			if f >= p.MilliGPU && (best < 0 || f < free[best]) {
				best = g
			}
		}
		if best < 0 {
			return
		}
		free[best] -= p.MilliGPU
	}
}

// GPUs implements Policy.
func (f *FGD) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	if !p.Sharing() {
		return firstFreeGPUs(s.gpuFree[i], p)
	}
	_, g := f.best(s, p, i)
	return []int{g}
}

// BestFit scores a node by what is left after placement, CPU and GPU
// normalised by the largest node and weighted 0.5 each:
// 100 * (1 - (0.5*(cpuLeft-cpu)/128 cores + 0.5*(gpuLeft-gpu)/8 GPUs)),
// truncated, then rescaled over the feasible nodes to 0-100 (integer
// min-max, as the artifact's NormalizeScore). GPUs: best fit.
type BestFit struct{}

// Name implements Policy.
func (BestFit) Name() string { return "bestfit" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request.
func (BestFit) scoreKey(p *Pod) scoreKey { return requestKey(p) }

// Score implements Policy.
func (BestFit) Score(s *State, p *Pod, i int) float64 {
	left := 0.5*float64(s.cpuFree[i]-p.MilliCPU)/maxSpecCPU + 0.5*float64(s.FreeGPUMilli(i)-p.GPUMilli())/maxSpecGPU
	return math.Trunc((1 - left) * maxNodeScore)
}

// Normalize implements Normalizer: integer min-max rescaling to 0-100, all
// zero when every score is the same.
func (BestFit) Normalize(scores []float64) { minMaxNormalize(scores) }

// keepsBest marks minMaxNormalize as keeping the best nodes: BestFit's
// scores are integers, so only the highest maps to 100 (all map to 0 when
// they are equal).
func (BestFit) keepsBest() {}

func minMaxNormalize(scores []float64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, v := range scores {
		lo, hi = min(lo, v), max(hi, v)
	}
	for i, v := range scores {
		if hi == lo {
			scores[i] = 0
		} else {
			scores[i] = float64(int64(v-lo) * maxNodeScore / int64(hi-lo))
		}
	}
}

// GPUs implements Policy.
func (BestFit) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int { return bestFitGPUs(s.gpuFree[i], p) }

// DotProduct is Tetris's alignment score (Grandl et al., SIGCOMM '14) as
// the FGD artifact applies it: free (CPU, GPU) and requested (CPU, GPU)
// vectors, each dimension divided by the largest node's capacity, GPUs
// merged into one dimension; score 100 * (1 - dot/2), truncated, so the
// node whose free resources align least with the request wins. GPUs: best
// fit.
type DotProduct struct{}

// Name implements Policy.
func (DotProduct) Name() string { return "dotprod" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request.
func (DotProduct) scoreKey(p *Pod) scoreKey { return requestKey(p) }

// Score implements Policy.
func (DotProduct) Score(s *State, p *Pod, i int) float64 {
	dot := float64(s.cpuFree[i])/maxSpecCPU*float64(p.MilliCPU)/maxSpecCPU +
		float64(s.FreeGPUMilli(i))/maxSpecGPU*float64(p.GPUMilli())/maxSpecGPU
	return math.Trunc(maxNodeScore * (1 - dot/2))
}

// GPUs implements Policy.
func (DotProduct) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	return bestFitGPUs(s.gpuFree[i], p)
}

// Clustering keeps pods of the same GPU shape (sharing, or n whole GPUs)
// together. Tiers, each 25 points wide: (75, 100] a node running only pods
// of the pod's shape, (50, 75] a node running that shape among others,
// (25, 50] a node without GPU pods, (0, 25] a node running other shapes;
// inside a tier 25*(8000 - free GPU milli)/8000 points (integer) prefer
// fuller nodes. CPU-only pods score 0 everywhere. GPUs: best fit.
type Clustering struct{}

// Name implements Policy.
func (Clustering) Name() string { return "clustering" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request.
func (Clustering) scoreKey(p *Pod) scoreKey { return requestKey(p) }

// Score implements Policy.
func (Clustering) Score(s *State, p *Pod, i int) float64 {
	if p.NumGPU == 0 {
		return 0
	}
	in := int64(maxNodeScore/4) * (maxSpecGPU - s.FreeGPUMilli(i)) / maxSpecGPU
	mine, kinds := s.tagPods(i, tagOf(p)), s.tagKinds[i]
	switch {
	case mine > 0 && kinds == 1:
		return float64(in + maxNodeScore*3/4)
	case mine > 0:
		return float64(in + maxNodeScore*2/4)
	case kinds == 0:
		return float64(in + maxNodeScore/4)
	}
	return float64(in)
}

// GPUs implements Policy.
func (Clustering) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	return bestFitGPUs(s.gpuFree[i], p)
}

// Packing prefers, in order: (1) putting the pod on partly used GPUs,
// 100 - (sum of the used GPUs' free percent)/10, at least 50; (2) fully
// free GPUs on a node already in use, 50 - GPUs taken, at least 33; (3) an
// idle node, 33 - its GPU count (at least that count, as coded in the
// artifact). CPU-only pods score 0 everywhere. GPUs: best fit.
type Packing struct{}

// Name implements Policy.
func (Packing) Name() string { return "packing" }

// scoreKey implements scoreKeyer: Score reads the CPU and GPU request.
func (Packing) scoreKey(p *Pod) scoreKey { return requestKey(p) }

// Score implements Policy.
func (Packing) Score(s *State, p *Pod, i int) float64 {
	if p.NumGPU == 0 {
		return 0
	}
	free := s.gpuFree[i]
	whole := s.WholeFreeGPUs(i)
	if whole == len(free) {
		return float64(max(int64(maxNodeScore/3-whole), int64(whole)))
	}
	// Take GPUs tightest first, as the scheduler would.
	var scratch [MaxGPUsPerNode]int64 // on the stack: scoring runs once per node and class
	buf := scratchFor(&scratch, len(free))
	copy(buf, free)
	wholeUsed, pct := 0, int64(0)
	for n := p.NumGPU; n > 0; n-- {
		best := -1
		for g, f := range buf {
			if f >= p.MilliGPU && (best < 0 || f < buf[best]) {
				best = g
			}
		}
		if best < 0 {
			return 0
		}
		if buf[best] == MilliGPU {
			wholeUsed++
		}
		pct += buf[best] * 100 / MilliGPU
		buf[best] = -1 // used
	}
	if wholeUsed > 0 {
		return float64(max(int64(maxNodeScore/2-wholeUsed), maxNodeScore/3))
	}
	return float64(max(maxNodeScore-pct/10, maxNodeScore/2))
}

// GPUs implements Policy.
func (Packing) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int { return bestFitGPUs(s.gpuFree[i], p) }

// Random places a pod on a uniformly random feasible node and a sharing pod
// on a uniformly random GPU that holds it; whole-GPU pods take the fully
// free GPUs of lowest index.
type Random struct{}

// Name implements Policy.
func (Random) Name() string { return "random" }

// Score implements Policy; Random chooses through Choose, so every node
// scores the same.
func (Random) Score(*State, *Pod, int) float64 { return 0 }

// Choose implements Chooser.
func (r Random) Choose(_ *State, _ *Pod, feasible []int, rng *rand.Rand) int {
	return feasible[r.ChooseNth(len(feasible), rng)]
}

// ChooseNth implements NthChooser: uniform over the feasible nodes.
func (Random) ChooseNth(n int, rng *rand.Rand) int { return rng.IntN(n) }

// GPUs implements Policy.
func (Random) GPUs(s *State, p *Pod, i int, rng *rand.Rand) []int {
	free := s.gpuFree[i]
	if !p.Sharing() {
		return firstFreeGPUs(free, p)
	}
	pick, n := -1, 0
	for g, f := range free {
		if f >= p.MilliGPU {
			n++
			if rng.IntN(n) == 0 {
				pick = g
			}
		}
	}
	return []int{pick}
}
