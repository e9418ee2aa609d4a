// The cost model: what a plan's copies and remaps pause the GPU for.
// See doc.go for the overview.

package defrag

import (
	"math"

	"github.com/gpufrag/gpufrag/model"
)

// CostModel holds the constants of Cost. The zero value means DefaultCostModel.
type CostModel struct {
	// Efficiency is the share of the datasheet memory bandwidth that a
	// device-to-device copy achieves. Default 0.8: copy kernels
	// (cudaMemcpyAsync D2D, BabelStream's Copy, nvbandwidth's device-local
	// copy) reach about 80–90% of peak HBM bandwidth on A100/H100-class parts,
	// and less for copies of a few hundred kilobytes, which cannot fill the
	// GPU; 0.8 sits at the low end of the large-copy range so estimates err
	// towards longer pauses.
	Efficiency float64
	// LaunchNs is the fixed cost of one move: launching one copy (a kernel or
	// a cudaMemcpyAsync) and its completion. Default 5 µs: CUDA launch
	// latency is 2–5 µs on current drivers and a small copy cannot hide it;
	// an engine that batches all moves of a step into one kernel (as the
	// vllm-gaudi defragmenter does with padded swap lists) pays it once,
	// which a caller models with LaunchNs / moves.
	LaunchNs int64
	// PageNs is the cost of unmapping or remapping one physical page without
	// copying (cuMemUnmap / cuMemMap / cuMemSetAccess of a 2 MiB page). Default
	// 20 µs: driver calls that change page tables cost tens of microseconds
	// each, which is why vAttention maps pages ahead of need and overlaps the
	// calls with compute; this is an estimate, not a measurement, and a caller
	// with a measured figure should set it.
	PageNs int64
}

// DefaultCostModel is the model Cost uses for a zero CostModel; see the
// fields for each constant's reason.
var DefaultCostModel = CostModel{Efficiency: 0.8, LaunchNs: 5_000, PageNs: 20_000}

func (c CostModel) withDefaults() CostModel {
	d := DefaultCostModel
	if c.Efficiency > 0 && c.Efficiency <= 1 {
		d.Efficiency = c.Efficiency
	}
	if c.LaunchNs > 0 {
		d.LaunchNs = c.LaunchNs
	}
	if c.PageNs > 0 {
		d.PageNs = c.PageNs
	}
	return d
}

// Cost estimates the pause, in nanoseconds, that performing p on GPU g
// takes: every byte moved is read once and written once, so copies cost
// 2 × BytesMoved ÷ (bandwidth × efficiency), plus LaunchNs per move, plus
// PageNs per page unmapped. Zero fields of c take DefaultCostModel's values.
func Cost(p Plan, g model.GPU, c CostModel) (pauseNs int64) {
	return CopyCost(p.BytesMoved, len(p.Moves), g, c) + p.UnmapPages*c.withDefaults().PageNs
}

// CopyCost is the copy part of Cost for n moves of bytes in total; policies
// that budget bytes per step use it to turn a time budget into bytes.
func CopyCost(bytes int64, n int, g model.GPU, c CostModel) int64 {
	c = c.withDefaults()
	var copyNs float64
	if bytes > 0 && g.MemBandwidth > 0 {
		copyNs = 2 * float64(bytes) / (g.MemBandwidth * c.Efficiency) * 1e9
	}
	return int64(math.Ceil(copyNs)) + int64(n)*c.LaunchNs
}

// BytesWithin is the inverse of CopyCost for one move: the most bytes a single
// copy can move within budgetNs on g (0 if the launch alone exceeds it).
func BytesWithin(budgetNs int64, g model.GPU, c CostModel) int64 {
	c = c.withDefaults()
	rest := budgetNs - c.LaunchNs
	if rest <= 0 || g.MemBandwidth <= 0 {
		return 0
	}
	return int64(float64(rest) / 1e9 * g.MemBandwidth * c.Efficiency / 2)
}
