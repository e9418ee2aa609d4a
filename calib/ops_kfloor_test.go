package calib

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestFitOpsKeepsGEMMFixedNs: FitOps keeps linear.gemm_fixed_ns (cited,
// like prefill_tok_ns) and reads weight_bw_eff off the weight-bound GEMMs
// less the layer's four GEMMs' fixed time: timings made by a truth with
// 4 µs a GEMM fit back to its weight_bw_eff exactly, where taking the whole
// time as weight reads (the fit before the term) would put it 13% lower.
func TestFitOpsKeepsGEMMFixedNs(t *testing.T) {
	start := h200(t)
	start.Linear.BlendExponent = 64
	start.Linear.GEMMFixedNs = 4000
	truth := start.Clone()
	truth.Linear = sim.LinearTerm{ComputeEffMax: 0.71, FP8ComputeEffMax: 0.6, ComputeHalfTokens: 48, WeightBWEff: 0.86,
		BlendExponent: 64, GEMMFixedNs: 4000}
	ops := syntheticOps(t, truth)
	f, err := FitOps(ops, start)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Fitted.Linear.WeightBWEff; math.Abs(got-0.86) > 1e-9 {
		t.Errorf("weight_bw_eff = %.12g, want 0.86", got)
	}
	if got := f.Fitted.Linear.GEMMFixedNs; got != 4000 {
		t.Errorf("gemm_fixed_ns = %v, want the start's 4000 kept", got)
	}
	if f.MaxAfter > 1e-9 {
		t.Errorf("largest error after the fit %g, want 0", f.MaxAfter)
	}
	// Without the fixed time the same timings read as a lower share.
	noFixed := start.Clone()
	noFixed.Linear.GEMMFixedNs = 0
	g, err := FitOps(ops, noFixed)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Fitted.Linear.WeightBWEff / 0.86; r > 0.97 {
		t.Errorf("without the fixed time weight_bw_eff is %.3f of the truth's: the term hardly shows", r)
	}
	t.Logf("weight_bw_eff %.4f with the fixed time, %.4f without", f.Fitted.Linear.WeightBWEff, g.Fitted.Linear.WeightBWEff)
	// Timings faster than the fixed time itself are refused, naming it.
	fast := *ops
	fast.Linear = append([]LinearPoint{{Tokens: 1, MsPerLayer: 0.01}}, ops.Linear[1:]...)
	if _, err := FitOps(&fast, start); !errors.Is(err, ErrBadOps) || !strings.Contains(err.Error(), "gemm_fixed_ns") {
		t.Errorf("a layer faster than its GEMMs' fixed time: %v", err)
	}
}
