package model

import "testing"

// TestGPULinksAndFP8 pins the interconnect and FP8 figures of each preset
// to their datasheets (cited in gpu.go): NVLink parts carry half the
// bidirectional NVLink figure, the others their PCIe slot one way; FP8 is
// twice the dense BF16 peak where the GPU has FP8 tensor cores (L40S's
// datasheet says 733 against 362.05), 0 elsewhere.
func TestGPULinksAndFP8(t *testing.T) {
	tests := []struct {
		name      string
		linkGBs   float64
		fp8TFLOPS float64
	}{
		{"a100-40g", 300, 0},       // NVLink 3: 600 GB/s
		{"a100-80g", 300, 0},       // NVLink 3
		{"a800-80g", 200, 0},       // NVLink 3 cut to 400 GB/s
		{"a10g-24g", 32, 0},        // PCIe Gen4 x16
		{"h100-80g", 450, 1979},    // NVLink 4: 900 GB/s
		{"h200-141g", 450, 1979},   // NVLink 4
		{"b200-192g", 900, 4500},   // NVLink 5: 1.8 TB/s
		{"l40s-48g", 32, 733},      // PCIe Gen4 x16: 64 GB/s
		{"rtx3090-24g", 32, 0},     // PCIe Gen4 x16
		{"rtx4090-24g", 32, 330.3}, // PCIe Gen4 x16
		{"rtx-a6000-48g", 32, 0},   // PCIe Gen4 x16 (the 2-card bridge not assumed)
		{"t4-16g", 16, 0},          // PCIe Gen3 x16: 32 GB/s
	}
	if len(tests) != len(GPUNames()) {
		t.Fatalf("%d presets, %d checked", len(GPUNames()), len(tests))
	}
	for _, tt := range tests {
		g, err := LookupGPU(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if g.LinkBandwidth != tt.linkGBs*1e9 || g.FP8FLOPS != tt.fp8TFLOPS*1e12 {
			t.Errorf("%s: link %g B/s, fp8 %g FLOP/s; want %g GB/s, %g TFLOPS", tt.name, g.LinkBandwidth, g.FP8FLOPS, tt.linkGBs, tt.fp8TFLOPS)
		}
		if g.FP8FLOPS != 0 && (g.FP8FLOPS < 2*g.BF16FLOPS || g.FP8FLOPS > 2.05*g.BF16FLOPS) {
			t.Errorf("%s: FP8 %g is not about twice BF16 %g", tt.name, g.FP8FLOPS, g.BF16FLOPS)
		}
	}
}
