package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
)

// calib/itl_p99.yaml is the step model's: its 32 runs, replayed as
// scripts/itl-check replays them, give the ITL p99s it holds. crusoe's 20
// and dstack's 9 come from the cut copies calib's fidelity page replays
// (calib/testdata/bench/{crusoe-l40s,dstack-h100}-*.lens.json: the same
// lengths and rates, so the same replay), always; surajssd's 3 from
// ../shared (skipped without it). A change to the step model that moves
// any of them fails here until the script writes the file again.
func TestITLP99FileCurrent(t *testing.T) {
	runs, err := calib.ITLP99Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 32 {
		t.Fatalf("%d runs, want 32 (20 crusoe, 9 dstack, 3 surajssd)", len(runs))
	}
	replay := func(name string, args ...string) {
		t.Helper()
		var want float64
		for _, r := range runs {
			if r.Run == name {
				want = r.SimulatedMs
			}
		}
		if want == 0 {
			t.Fatalf("%s: not in calib/itl_p99.yaml", name)
		}
		code, out, errs := run(t, "", append([]string{"simulate", "--kv", "paged:16", "--alloc", "caching", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		var doc struct {
			Results []struct {
				ITL struct{ P99 float64 } `json:"itl_s"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		// The file keeps 3 decimals of a millisecond.
		if got := 1e3 * doc.Results[0].ITL.P99; !(math.Abs(got-want) <= 0.0006) {
			t.Errorf("%s: ITL p99 %.4f ms, calib/itl_p99.yaml holds %.3f: run scripts/itl-check \"\" calib/itl_p99.yaml", name, got, want)
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-*.lens.json"))
	if err != nil || len(files) != 20 {
		t.Fatalf("calib/testdata/bench: %d crusoe files, %v", len(files), err)
	}
	// crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps5.lens.json is the
	// script's crusoe-70B-FP8-dynamic-qps5.
	names := strings.NewReplacer("crusoe-l40s-llama-3.1-", "", ".lens.json", "", "-tp1", "", "-tp4", "", "-tp8", "",
		"70b", "70B", "8b", "8B", "fp8-dynamic", "FP8-dynamic")
	for _, f := range files {
		setup := names.Replace(filepath.Base(f))
		var m []string
		switch {
		case strings.HasPrefix(setup, "8B-FP8"):
			m = []string{"--model", "llama-3.1-8b", "--tp", "1", "--weight-dtype", "fp8"}
		case strings.HasPrefix(setup, "8B"):
			m = []string{"--model", "llama-3.1-8b", "--tp", "1"}
		case strings.HasPrefix(setup, "70B-FP8"):
			m = []string{"--model", "llama-3.1-70b", "--tp", "4", "--weight-dtype", "fp8"}
		default:
			m = []string{"--model", "llama-3.1-70b", "--tp", "8"}
		}
		replay("crusoe-"+setup, append(m, "--trace", f, "--gpu", "l40s-48g", "--engine", "vllm-v0", "--engine-version", "0.5.5",
			"--max-batch-tokens", "512", "--prefix-caching=false")...)
	}
	dstack, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "dstack-h100-llama-3.1-405b-fp8-tp8-*.lens.json"))
	if err != nil || len(dstack) != 9 {
		t.Fatalf("calib/testdata/bench: %d dstack files, %v", len(dstack), err)
	}
	for _, f := range dstack {
		// dstack-h100-llama-3.1-405b-fp8-tp8-b512-s256-qps16.lens.json:
		// max_num_batched_tokens 512, max_num_seqs 256, 16 req/s.
		var b, s, q string
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".lens.json"), "-")
		for _, p := range parts {
			switch {
			case strings.HasPrefix(p, "b"):
				b = p[1:]
			case strings.HasPrefix(p, "s"):
				s = p[1:]
			case strings.HasPrefix(p, "qps"):
				q = p[3:]
			}
		}
		replay("dstack-405B-b"+b+"-s"+s+"-qps"+q, "--trace", f, "--model", "llama-3.1-405b", "--gpu", "h100-80g", "--tp", "8", "--engine", "vllm-v0",
			"--engine-version", "0.6.3", "--weight-dtype", "fp8", "--unquantized", "self_attn,layers.0,layers.125", "--max-context", "91680",
			"--max-batch-tokens", b, "--max-seqs", s, "--prefix-caching=false")
	}
	for _, q := range []string{"01", "16", "inf"} {
		path := filepath.Join("..", "..", "..", "..", "..", "shared", "data", "bench",
			"surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_"+q+".json")
		if _, err := os.Stat(path); err != nil {
			t.Skipf("shared benchmark results not present (%v): surajssd's runs not replayed; crusoe's were", err)
		}
		args := []string{"--trace", path, "--model", "llama-3.1-70b", "--gpu", "a100-40g",
			"--tp", "8", "--engine-version", "0.8.3", "--max-context", "131072", "--max-batch-tokens", "8192", "--max-seqs", "256"}
		if q != "01" {
			args = append(args, "--warm-prompts") // the runs after the first, as calibrate decides
		}
		replay("surajssd-qps_"+q, args...)
	}
}
