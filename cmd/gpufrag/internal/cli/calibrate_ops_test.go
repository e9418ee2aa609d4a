package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// writeOpsFile writes operator timings that a GPU with the embedded
// h200-141g profile's peaks (its sustained ones, sim.SustainedPeaks) and
// prefill_tok_ns and gemm_fixed_ns and the given efficiencies would give (one layer of
// Llama-3.1-8B).
func writeOpsFile(t *testing.T, effMax, half, weff, attn, kv float64) string {
	t.Helper()
	h200, err := sim.DefaultProfile("h200-141g", sim.EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	peak, bw, tokNs := h200.Peak.BF16FLOPSPerS, h200.Peak.MemBytesPerS, h200.Attention.PrefillTokNs
	gemmS := h200.Linear.GEMMFixedNs * sim.GEMMsPerLayer / 1e9 // the layer's GEMMs' fixed time, kept by the fit
	params := 4096.0*(4096+2*1024) + 4096*4096 + 4096*2*14336 + 14336*4096
	o := calib.Ops{Schema: calib.OpsSchema, Date: "2026-12-01T00:00:00Z", GPUName: "NVIDIA H200", Torch: "2.9", CUDA: "12.8", Reps: 20,
		Model:            calib.OpsModel{Name: "llama-3.1-8b", Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Layers: 32, Vocab: 128256, DType: "bf16"},
		LinearLayerBytes: 2 * params, LinearFLOPsPerToken: 2 * params}
	for _, n := range []float64{1, 4, 8, 64, 512, 1024, 4096, 8192} {
		o.Linear = append(o.Linear, calib.LinearPoint{Tokens: int(n),
			MsPerLayer: 1e3 * max((n+half)*o.LinearFLOPsPerToken/(peak*effMax), o.LinearLayerBytes/(bw*weff)+gemmS)})
	}
	for _, l := range []float64{1024, 4096} {
		o.PrefillAttention = append(o.PrefillAttention, calib.PrefillPoint{Tokens: int(l),
			MsPerLayer: 1e3 * (l*(l+1)/2*4*32*128/(peak*attn) + tokNs*32*l/1e9)})
	}
	kvBytes := 32.0 * 8192 * 2 * 8 * 128 * 2
	o.DecodeAttention = []calib.DecodePoint{{Batch: 32, Context: 8192, KVBytes: kvBytes, MsPerLayer: 1e3 * kvBytes / (bw * kv)}}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ops.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCalibrateOps(t *testing.T) {
	ops := writeOpsFile(t, 0.62, 40, 0.86, 0.5, 0.72)
	out := filepath.Join(filepath.Dir(ops), "h200.yaml")
	code, stdout, stderr := run(t, "", "calibrate", "--ops", ops, "--gpu", "h200-141g", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"linear.compute_eff_max", "0.620", "attention.kv_bw_eff", "0.720", "median 0.0%, max 0.0% after", "Wrote the profile"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := sim.LoadProfile(fh, out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Linear.ComputeEffMax < 0.6199 || p.Linear.ComputeEffMax > 0.6201 || p.Attention.KVBWEff < 0.7199 || p.Attention.KVBWEff > 0.7201 ||
		len(p.FittedTo) != 1 || !strings.HasPrefix(p.FittedTo[0], "ops:NVIDIA H200") {
		t.Errorf("written profile: linear %+v attention %+v fitted_to %v", p.Linear, p.Attention, p.FittedTo)
	}

	code, stdout, stderr = run(t, "", "calibrate", "--ops", ops, "--gpu", "h200-141g", "--json")
	var doc struct {
		GPUName string `json:"gpu_name"`
		Linear  struct {
			ComputeEffMax [2]float64 `json:"compute_eff_max"`
		} `json:"linear"`
		Points []struct {
			Op string `json:"op"`
		} `json:"points"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || doc.GPUName != "NVIDIA H200" || len(doc.Points) != 11 ||
		doc.Linear.ComputeEffMax[1] < 0.6199 {
		t.Errorf("--json: exit %d, %+v\n%s%s", code, doc, stdout, stderr)
	}
}

func TestCalibrateOpsErrors(t *testing.T) {
	ops := writeOpsFile(t, 0.62, 40, 0.86, 0.5, 0.72)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"calibrate", "--ops", ops}, 2, "--gpu is required"},
		{[]string{"calibrate", "--ops", ops, "--gpu", "h200-141g", "extra.json"}, 2, "--ops fits operator timings alone"},
		{[]string{"calibrate", "--ops", ops, "--gpu", "nope"}, 2, "--gpu"},
		{[]string{"calibrate", "--ops", filepath.Join(t.TempDir(), "missing.json"), "--gpu", "h200-141g"}, 1, "--ops"},
		// Timings faster than the peaks allow: the fit says so.
		{[]string{"calibrate", "--ops", writeOpsFile(t, 6.2, 40, 8.6, 0.5, 0.72), "--gpu", "h200-141g"}, 1, "outside (0, 1]"},
		{[]string{"calibrate"}, 2, "no benchmark result files"},
		// The setup of benchmark files is not the timings'.
		{[]string{"calibrate", "--ops", ops, "--gpu", "h200-141g", "--tp", "2"}, 2, "--tp has no effect with --ops"},
	} {
		code, _, stderr := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args[1:], code, stderr, tc.code, tc.want)
		}
	}
}
