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

// TestSameBoardMeasured pins the one figure a preset borrows: the A800 SXM4
// 80GB is the A100 SXM4 80GB with NVLink cut from 600 to 400 GB/s (its
// datasheet: the same GA100, the same 2,039 GB/s HBM2e), so a device-memory
// triad measured on the one stands for the other; their compute figures are
// each their own. A different SKU on the same chip (the L40 beside the
// L40S: other clocks and power limit) lends nothing, so the L40S has no
// bandwidth figure.
func TestSameBoardMeasured(t *testing.T) {
	a100, err := LookupGPU("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	a800, err := LookupGPU("a800-80g")
	if err != nil {
		t.Fatal(err)
	}
	if a800.MemBandwidth != a100.MemBandwidth || a800.Capacity != a100.Capacity || a800.BF16FLOPS != a100.BF16FLOPS {
		t.Fatalf("a800-80g's datasheet differs from a100-80g's beyond NVLink: %+v vs %+v", a800, a100)
	}
	if a800.MeasuredMemBandwidth != a100.MeasuredMemBandwidth || a800.MeasuredMemBandwidth == 0 {
		t.Errorf("a800-80g measured bandwidth %g, want the a100-80g's %g", a800.MeasuredMemBandwidth, a100.MeasuredMemBandwidth)
	}
	if a800.MeasuredBF16FLOPS == a100.MeasuredBF16FLOPS {
		t.Errorf("a800-80g's BF16 figure is its own measurement, not the a100-80g's: both %g", a800.MeasuredBF16FLOPS)
	}
	l40s, err := LookupGPU("l40s-48g")
	if err != nil {
		t.Fatal(err)
	}
	if l40s.MeasuredMemBandwidth != 0 {
		t.Errorf("l40s-48g has a bandwidth figure %g: none was measured on the L40S itself (a first-hand L40S figure may replace this check; "+
			"the L40's may not)", l40s.MeasuredMemBandwidth)
	}
}
