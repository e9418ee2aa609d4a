package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
)

// calib/itl_p99.yaml is the step model's: surajssd's three runs (the ones
// of its 23 in ../shared), replayed as scripts/itl-check replays them,
// give the ITL p99s it holds. A change to the step model that moves them
// fails here until the script writes the file again. Skipped without the
// shared checkout.
func TestITLP99FileCurrent(t *testing.T) {
	runs, err := calib.ITLP99Runs()
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]float64{}
	for _, r := range runs {
		held[r.Run] = r.SimulatedMs
	}
	for _, q := range []string{"01", "16", "inf"} {
		path := filepath.Join("..", "..", "..", "..", "..", "shared", "data", "bench",
			"surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_"+q+".json")
		if _, err := os.Stat(path); err != nil {
			t.Skipf("shared benchmark results not present (%v)", err)
		}
		args := []string{"simulate", "--trace", path, "--kv", "paged:16", "--alloc", "caching", "--json", "--model", "llama-3.1-70b", "--gpu", "a100-40g",
			"--tp", "8", "--engine-version", "0.8.3", "--max-context", "131072", "--max-batch-tokens", "8192", "--max-seqs", "256"}
		if q != "01" {
			args = append(args, "--warm-prompts")
		}
		code, out, errs := run(t, "", args...)
		if code != 0 {
			t.Fatalf("qps %s: exit %d: %s", q, code, errs)
		}
		var doc struct {
			Results []struct {
				ITL struct{ P99 float64 } `json:"itl_s"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("qps %s: %v", q, err)
		}
		got, want := 1e3*doc.Results[0].ITL.P99, held["surajssd-qps_"+q]
		if !(math.Abs(got-want) <= 0.001*want) {
			t.Errorf("surajssd qps %s: ITL p99 %.3f ms, calib/itl_p99.yaml holds %.3f: run scripts/itl-check \"\" calib/itl_p99.yaml", q, got, want)
		}
	}
}
