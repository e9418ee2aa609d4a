package sim

import (
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// TestSustainedPeaks: each datasheet peak is scaled by the GPU's measured
// share of it over the h100-80g's (docs/calibrate.md, "what GPUs really
// sustain": the scale column), 1 where a figure is unknown; the H100 keeps
// its datasheet; the link is never scaled.
func TestSustainedPeaks(t *testing.T) {
	for _, tc := range []struct {
		gpu             string
		bf16, fp8, mem  float64 // scales
		wantDatasheetBF bool
	}{
		{"h100-80g", 1, 1, 1, true},
		// 165.26/165.15 over 790.6/989; 921.85/1008 over 2.97/3.35.
		{"rtx4090-24g", (165.26 / 165.15) / (790.6 / 989), 1, (921.85 / 1008) / (2.97 / 3.35), false},
		// 790.29/989 over 790.6/989; 1300.6/1979 over 1290.1/1979; 4.15/4.8 over 2.97/3.35.
		{"h200-141g", 790.29 / 790.6, 1300.6 / 1290.1, (4.15 / 4.8) / (2.97 / 3.35), false},
		// no bandwidth figure: the datasheet's.
		{"rtx-a6000-48g", (123.34 / 154.8) / (790.6 / 989), 1, 1, false},
		// nothing measured.
		{"a10g-24g", 1, 1, 1, true},
	} {
		g, err := model.LookupGPU(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p := SustainedPeaks(g)
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"bf16", p.BF16FLOPSPerS, g.BF16FLOPS * tc.bf16},
			{"fp8", p.FP8FLOPSPerS, g.FP8FLOPS * tc.fp8},
			{"mem", p.MemBytesPerS, g.MemBandwidth * tc.mem},
			{"link", p.LinkBytesPerS, g.LinkBandwidth},
		} {
			if math.Abs(c.got-c.want) > 1e-9*math.Max(1, c.want) {
				t.Errorf("%s %s: %g, want %g", tc.gpu, c.name, c.got, c.want)
			}
		}
		if tc.wantDatasheetBF != (p.BF16FLOPSPerS == g.BF16FLOPS) {
			t.Errorf("%s: BF16 %g against the datasheet's %g", tc.gpu, p.BF16FLOPSPerS, g.BF16FLOPS)
		}
	}
	// The RTX 4090's BF16 rate: the GeForce whitepaper's rated boost clock
	// understates it by a quarter relative to the H100 (1.25).
	g, _ := model.LookupGPU("rtx4090-24g")
	if s := SustainedPeaks(g).BF16FLOPSPerS / g.BF16FLOPS; s < 1.24 || s > 1.26 {
		t.Errorf("rtx4090 BF16 scale %.3f, want 1.25", s)
	}
}
