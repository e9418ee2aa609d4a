package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// benchFixture is one of workload's benchmark fixtures (their origin:
// workload/testdata/README.md).
func benchFixture(name string) string {
	return filepath.Join("..", "..", "..", "..", "workload", "testdata", "bench", name)
}

// calibrate70B is the setup of the surajssd runs the fixtures are cut
// from; 30 evaluations keep the tests short (also with -race).
var calibrate70B = []string{"--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8", "--max-evals", "30"}

// TestCalibrateJSON: calibrate on the 6-request cut of a vLLM run writes
// a profile that loads, names the file in fitted_to, and prints the
// report as JSON with every run, metric and parameter.
func TestCalibrateJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "fitted.yaml")
	in := benchFixture("vllm_bench_qps1_cut.json")
	held := benchFixture("vllm_bench_qpsinf_cut.json")
	args := append([]string{"calibrate", in, "--holdout", held, "-o", out, "--json"}, calibrate70B...)
	code, stdout, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep calib.FitReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	if rep.Model != "llama-3.1-70b" || rep.GPU != "a100-40g" || rep.TP != 8 || rep.Engine != "vllm-v1" ||
		len(rep.Runs) != 2 || len(rep.Params) != len(calib.ParamNames()) || rep.Holdout == nil {
		t.Errorf("report: %+v", rep)
	}
	for _, r := range rep.Runs {
		if len(r.Metrics) != len(calib.Metrics()) {
			t.Errorf("%s: %d metrics", r.File, len(r.Metrics))
		}
	}
	// The cut file's summary is the 200-request run's: said on stderr.
	if !strings.Contains(stderr, "gpufrag: warning: ") || !strings.Contains(stderr, "differ from those its per-request arrays give") {
		t.Errorf("stderr lacks the cut file's warning:\n%s", stderr)
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := sim.LoadProfile(fh, out)
	if err != nil {
		t.Fatalf("the written profile does not load: %v", err)
	}
	if len(p.FittedTo) != 1 || !strings.HasPrefix(p.FittedTo[0], "vllm_bench_qps1_cut.json@sha256:") || p.GPU != "a100-40g" {
		t.Errorf("profile: gpu %q, fitted_to %q", p.GPU, p.FittedTo)
	}
	// The same command again writes the same bytes.
	first, _ := os.ReadFile(out)
	out2 := filepath.Join(dir, "again.yaml")
	args[5] = out2
	if code, _, stderr := run(t, "", args...); code != 0 {
		t.Fatalf("again: exit %d: %s", code, stderr)
	}
	second, _ := os.ReadFile(out2)
	if !bytes.Equal(first, second) {
		t.Error("the same files gave different profiles")
	}
}

// TestCalibrateTable: the text report shows the setup, the parameters,
// a table per run with measured, before and after, and the summary.
func TestCalibrateTable(t *testing.T) {
	args := append([]string{"calibrate", benchFixture("vllm_bench_qps1_cut.json")}, calibrate70B...)
	code, stdout, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Calibrated llama-3.1-70b on a100-40g (tp 8) under vllm-v1, from embedded", "a100-40g (vllm-v1).",
		"overhead.step_ns", "Fit: nelder-mead over", "vllm_bench_qps1_cut.json@sha256:", "median_ttft", "output_throughput",
		"|relative error| over the", "The fitted profile was not written (give -o FILE)."} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestCalibrateErrors: usage mistakes exit 2 naming the flag; files whose
// setup cannot be told exit 1 naming the field.
func TestCalibrateErrors(t *testing.T) {
	in := benchFixture("vllm_bench_qps1_cut.json")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"calibrate", "--gpu", "a100-40g"}, 2, "no benchmark result files"},
		{[]string{"calibrate", in, "--gpu", "a100-40g"}, 2, "--model is required"},
		{[]string{"calibrate", in, "--model", "llama-3.1-70b"}, 2, "--gpu is required"},
		{append([]string{"calibrate", in, "--engine", "trt"}, calibrate70B...), 2, `--engine "trt"`},
		{append([]string{"calibrate", in, "--params", "peak.mem_bytes_per_s"}, calibrate70B...), 2, "--params"},
		{append(append([]string{"calibrate", in}, calibrate70B...), "--max-evals", "0"), 2, "--max-evals 0"},
		{append(append([]string{"calibrate", in}, calibrate70B...), "--seeds", "0"), 2, "--seeds 0: want 1 to 64"},
		{append(append([]string{"calibrate", in}, calibrate70B...), "--seeds", "65"), 2, "--seeds 65: want 1 to 64"},
		{append([]string{"calibrate", in, "-o", in}, calibrate70B...), 2, "is the input file given to the benchmark result argument: refusing to overwrite"},
		{append([]string{"calibrate", benchFixture("sglang_bench_online.jsonl")}, calibrate70B...), 1, `field "input_lens"`},
		{[]string{"calibrate", in, "--model", "llama-3.1-70b", "--gpu", "a100-40g"}, 1, "raise --tp"},
		// A setting the engine cannot take, given by a flag: a usage error
		// naming it (it was "bad scenario: unquantized: ...", status 1).
		{append(append([]string{"calibrate", in}, calibrate70B...), "--unquantized", "self_attn"), 2,
			"--unquantized: self_attn names what quantized weights keep in 16 bits, but the weights are bf16"},
	}
	for _, tt := range tests {
		code, _, stderr := run(t, "", tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
