package model

import "testing"

// TestGPUMeasured checks every preset's measured figures against its
// datasheet: a sustained bandwidth is below the datasheet peak and above
// 60% of it (the T4, the lowest, sustains 75%); a GEMM rate is between
// 50% and 115% of the datasheet tensor peak (GeForce boards run above the
// rated boost clock their whitepapers count: the RTX 3090 reaches 108%).
// The reference the joint model's shared efficiencies are fitted against,
// h100-80g, must have all three, and a board without FP8 tensor cores no
// FP8 figure.
func TestGPUMeasured(t *testing.T) {
	within := func(name, field string, measured, datasheet, lo, hi float64) {
		t.Helper()
		if measured == 0 {
			return
		}
		if !(datasheet > 0) {
			t.Errorf("%s: %s = %g with no datasheet figure to compare with", name, field, measured)
			return
		}
		if r := measured / datasheet; !(r > lo && r <= hi) {
			t.Errorf("%s: %s = %g is %.3f of the datasheet %g, outside (%g, %g]", name, field, measured, r, datasheet, lo, hi)
		}
	}
	n := 0
	for _, name := range GPUNames() {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		within(name, "MeasuredMemBandwidth", g.MeasuredMemBandwidth, g.MemBandwidth, 0.6, 1.0)
		within(name, "MeasuredBF16FLOPS", g.MeasuredBF16FLOPS, g.BF16FLOPS, 0.5, 1.15)
		within(name, "MeasuredFP8FLOPS", g.MeasuredFP8FLOPS, g.FP8FLOPS, 0.5, 1.15)
		if g.MeasuredMemBandwidth < 0 || g.MeasuredBF16FLOPS < 0 || g.MeasuredFP8FLOPS < 0 {
			t.Errorf("%s: negative measured figure: %+v", name, g)
		}
		if g.MeasuredMemBandwidth > 0 || g.MeasuredBF16FLOPS > 0 || g.MeasuredFP8FLOPS > 0 {
			n++
		}
	}
	ref, err := LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	if ref.MeasuredMemBandwidth == 0 || ref.MeasuredBF16FLOPS == 0 || ref.MeasuredFP8FLOPS == 0 {
		t.Errorf("h100-80g (the reference) lacks a measured figure: %+v", ref)
	}
	if want := len(GPUNames()) - 1; n != want { // a10g-24g: none found
		t.Errorf("%d presets have a measured figure, want %d (all but a10g-24g)", n, want)
	}
}
