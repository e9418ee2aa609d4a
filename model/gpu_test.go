package model

import (
	"errors"
	"strings"
	"testing"
)

func TestGPUPresets(t *testing.T) {
	want := []string{"a100-40g", "a100-80g", "a10g-24g", "a800-80g", "b200-192g", "h100-80g", "h200-141g", "l40s-48g",
		"rtx-a6000-48g", "rtx3090-24g", "rtx4090-24g", "t4-16g"}
	if got := GPUNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("GPUNames = %v, want %v", got, want)
	}
	tests := []struct {
		name     string
		capMiB   int64
		bwGBs    float64
		tflops   float64
		nominalG float64 // the GB in the name: capacity must be within 10% below it
	}{
		{"a100-40g", 40536, 1555, 312, 40},
		{"a100-80g", 81920, 2039, 312, 80},
		{"a800-80g", 81920, 2039, 312, 80},
		{"a10g-24g", 23028, 600, 70, 24},
		{"h100-80g", 81559, 3350, 989, 80},
		{"h200-141g", 143771, 4800, 989, 141},
		{"b200-192g", 183359, 8000, 2250, 192},
		{"l40s-48g", 46068, 864, 362.05, 48},
		{"rtx3090-24g", 24576, 936, 71, 24},
		{"rtx4090-24g", 24564, 1008, 165.15, 24},
		{"rtx-a6000-48g", 49140, 768, 154.8, 48},
		{"t4-16g", 15360, 320, 65, 16},
	}
	for _, tt := range tests {
		g, err := LookupGPU(strings.ToUpper(tt.name))
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != tt.name || g.Capacity != tt.capMiB<<20 || g.MemBandwidth != tt.bwGBs*1e9 || g.BF16FLOPS != tt.tflops*1e12 {
			t.Errorf("%s = %+v", tt.name, g)
		}
		if c := float64(g.Capacity); c > tt.nominalG*1e9*1.1 || c < tt.nominalG*1e9*0.9 {
			t.Errorf("%s: capacity %.1f GB is not within 10%% of the nominal %g GB", tt.name, c/1e9, tt.nominalG)
		}
	}
	_, err := LookupGPU("v100")
	if !errors.Is(err, ErrUnknownGPU) || !strings.Contains(err.Error(), "h100-80g") {
		t.Errorf("LookupGPU(v100): err = %v, want ErrUnknownGPU listing presets", err)
	}
}
