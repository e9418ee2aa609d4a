package calib

import (
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// TestFidelityOpGEMMFixedNs: Vidur's operator figures get the GEMMs' fixed
// time and not the layer's other kernels: the four projections of one
// Llama-3-8B layer at 1 token gain 4 × linear.gemm_fixed_ns on the weights
// side of the blend, the gate+up projection alone 1 ×, and neither moves
// with linear.layer_kernels_ns (Vidur times those kernels apart).
func TestFidelityOpGEMMFixedNs(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	prof, err := sim.DefaultProfile("a100-80g", sim.EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	prof.Linear.GEMMFixedNs, prof.Linear.LayerKernelsNs = 0, 0
	with := prof.Clone()
	with.Linear.GEMMFixedNs, with.Linear.LayerKernelsNs = 4000, 20000
	const h, inter = 4096.0, 14336.0
	for _, c := range []struct {
		id     string
		params float64
		gemms  float64
	}{
		{"vidur-a100-80g-meta-llama-3-8b-tp1-linear-n1", h*128*(32+2*8) + 32*128*h + 3*h*inter, 4},
		{"vidur-a100-80g-meta-llama-3-8b-tp1-mlp-up-n1", 2 * h * inter, 1},
	} {
		p, err := fidTranslate(fig(c.id), fidOpenFixture, files)
		if err != nil || p.op == nil {
			t.Fatalf("%s: %+v, %v", c.id, p, err)
		}
		for _, q := range []*sim.Profile{prof, with} {
			w := c.params*2/(q.Peak.MemBytesPerS*q.Linear.WeightBWEff)*1e3 + c.gemms*q.Linear.GEMMFixedNs/1e6
			comp := (1 + q.Linear.ComputeHalfTokens) * 2 * c.params / (q.Peak.BF16FLOPSPerS * q.Linear.ComputeEffMax) * 1e3 // 1 token
			want := sim.BlendLinear(comp, w, q.Linear.BlendExponent)
			if got := p.op(q); math.Abs(got-want) > 5e-5*want { // the step model tabulates the blend
				t.Errorf("%s, gemm_fixed_ns %v: %v ms, want %v", c.id, q.Linear.GEMMFixedNs, got, want)
			}
		}
		t.Logf("%s: %.4f ms without the fixed time, %.4f with", c.id, p.op(prof), p.op(with))
		if p.op(with)-p.op(prof) < 0.5*c.gemms*4000/1e6 {
			t.Errorf("%s: the fixed time adds %.4f ms, want about %v GEMMs × 4 µs", c.id, p.op(with)-p.op(prof), c.gemms)
		}
	}
}
