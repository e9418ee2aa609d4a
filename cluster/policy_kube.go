package cluster

import (
	"math"
	"math/rand/v2"
)

// KubeFit is the Kubernetes NodeResourcesFit score plugin with one of its
// scoring strategies, over CPU, memory and GPU milli (the GPU resource,
// nvidia.com/gpu or a shared-GPU resource, enters only with a positive
// weight: like Kubernetes' default, CPU and memory only).
//
//   - "spread", LeastAllocated: per resource (capacity-requested)*100/capacity;
//   - "mostallocated", MostAllocated: requested*100/capacity;
//   - "rtcr", RequestedToCapacityRatio with shape {0: 0, 100: 10}: the
//     utilisation mapped through the shape, times 10; resources scoring 0
//     drop out of the weighted mean, as in kube-scheduler.
//
// requested includes the pod; integer arithmetic as in kube-scheduler; the
// node score is the weighted mean. GPUs inside the node: best fit.
type KubeFit struct {
	Strategy         string // spread, mostallocated or rtcr
	CPU, Memory, GPU int64  // weights
}

// Name implements Policy.
func (k *KubeFit) Name() string { return k.Strategy }

// scoreKey implements scoreKeyer: Score reads the CPU, memory and GPU
// request.
func (*KubeFit) scoreKey(p *Pod) scoreKey { return memKey(p) }

// Score implements Policy.
func (k *KubeFit) Score(s *State, p *Pod, i int) float64 {
	n := &s.nodes[i]
	spread, rtcr := k.Strategy == "spread", k.Strategy == "rtcr"
	var sum, wsum int64
	// CPU, memory and GPU milli in turn: the terms of a weighted mean, in
	// integer arithmetic as in kube-scheduler.
	if k.CPU != 0 {
		sum, wsum = kubeTerm(sum, wsum, n.MilliCPU-s.cpuFree[i]+p.MilliCPU, n.MilliCPU, k.CPU, spread, rtcr)
	}
	if k.Memory != 0 {
		sum, wsum = kubeTerm(sum, wsum, n.MemoryMiB-s.memFree[i]+p.MemoryMiB, n.MemoryMiB, k.Memory, spread, rtcr)
	}
	if k.GPU != 0 {
		c := int64(n.GPUs) * MilliGPU
		sum, wsum = kubeTerm(sum, wsum, c-s.idle[i]+p.GPUMilli(), c, k.GPU, spread, rtcr)
	}
	if wsum == 0 {
		return 0
	}
	if rtcr {
		return math.Round(float64(sum) / float64(wsum))
	}
	return float64(sum / wsum)
}

// kubeTerm adds one resource's term to KubeFit's weighted sum: requested
// req (the pod included) of capacity c, weight w (not 0). A resource that
// would overflow scores 0; rtcr leaves out a resource scoring 0.
func kubeTerm(sum, wsum, req, c, w int64, spread, rtcr bool) (int64, int64) {
	var sc int64
	if c > 0 && req <= c {
		if spread {
			sc = (c - req) * maxNodeScore / c
		} else { // mostallocated; rtcr's shape 0->0, 100->100 is the identity
			sc = req * maxNodeScore / c
		}
	}
	if rtcr && (c == 0 || sc <= 0) {
		return sum, wsum
	}
	return sum + sc*w, wsum + w
}

// GPUs implements Policy.
func (k *KubeFit) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	return bestFitGPUs(s.gpuFree[i], p)
}

// VolcanoBinpack is Volcano's binpack plugin (pkg/scheduler/plugins/binpack):
// for each resource the pod requests (non-zero) that has a weight,
// w_r*(used_r+request_r)/allocatable_r; a node where one would overflow
// scores 0; node score = sum / (sum of those weights) * 100 * Weight. GPUs
// count only when listed (GPU > 0: binpack.resources: nvidia.com/gpu), as
// Volcano does; its shipped configuration lists none. GPUs inside the node:
// best fit.
type VolcanoBinpack struct {
	Weight, CPU, Memory, GPU int64
}

// Name implements Policy.
func (*VolcanoBinpack) Name() string { return "volcano-binpack" }

// scoreKey implements scoreKeyer: Score reads the CPU, memory and GPU
// request.
func (*VolcanoBinpack) scoreKey(p *Pod) scoreKey { return memKey(p) }

// Score implements Policy.
func (v *VolcanoBinpack) Score(s *State, p *Pod, i int) float64 {
	n := &s.nodes[i]
	res := [3]struct{ req, used, cap, w int64 }{
		{p.MilliCPU, n.MilliCPU - s.cpuFree[i], n.MilliCPU, v.CPU},
		{p.MemoryMiB, n.MemoryMiB - s.memFree[i], n.MemoryMiB, v.Memory},
		{p.GPUMilli(), int64(n.GPUs)*MilliGPU - s.FreeGPUMilli(i), int64(n.GPUs) * MilliGPU, v.GPU},
	}
	var score float64
	var wsum int64
	for _, r := range res {
		if r.req == 0 || r.w == 0 {
			continue
		}
		if r.cap == 0 {
			wsum += r.w
			continue
		}
		if r.used+r.req > r.cap {
			return 0
		}
		score += float64(r.w) * float64(r.used+r.req) / float64(r.cap)
		wsum += r.w
	}
	if wsum > 0 {
		score /= float64(wsum)
	}
	return score * maxNodeScore * float64(v.Weight)
}

// GPUs implements Policy.
func (v *VolcanoBinpack) GPUs(s *State, p *Pod, i int, _ *rand.Rand) []int {
	return bestFitGPUs(s.gpuFree[i], p)
}
