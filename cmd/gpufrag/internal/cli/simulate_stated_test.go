package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A benchmark run whose model id names FP8 weights, replayed without
// --weight-dtype: simulate warns that calibrate replays it as FP8 and
// names the flag; with the flag, or a run that states nothing, no
// warning.
func TestSimulateBenchSetupWarning(t *testing.T) {
	fp8 := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps1.lens.json")
	args := []string{"simulate", "--trace", fp8, "--model", "llama-3.1-70b", "--gpu", "l40s-48g", "--tp", "4", "--kv", "paged:16", "--max-rows", "20", "--json"}
	const want = "states model_id neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic (fp8), which calibrate replays as --weight-dtype fp8_e4m3; " +
		"simulate replays bf16: give --weight-dtype fp8_e4m3 to replay the run as it ran"
	code, _, errs := run(t, "", args...)
	if code != 0 || !strings.Contains(errs, want) {
		t.Errorf("without --weight-dtype: exit %d, stderr %q, want %q", code, errs, want)
	}
	code, _, errs = run(t, "", append(args, "--weight-dtype", "fp8")...)
	if code != 0 || strings.Contains(errs, "calibrate replays") {
		t.Errorf("with --weight-dtype fp8: exit %d, stderr %q", code, errs)
	}
	bf16 := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-8b-tp1-qps1.lens.json")
	code, _, errs = run(t, "", "simulate", "--trace", bf16, "--model", "llama-3.1-8b", "--gpu", "l40s-48g", "--kv", "paged:16", "--max-rows", "20", "--json")
	if code != 0 || strings.Contains(errs, "calibrate replays") {
		t.Errorf("a BF16 run: exit %d, stderr %q", code, errs)
	}
}
