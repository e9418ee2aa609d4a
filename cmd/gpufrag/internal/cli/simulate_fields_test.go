package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim/scenario"
)

// scenarioWith writes the default scenario with old replaced by new to a
// file in a temporary directory and returns its path and the line of new.
func scenarioWith(t *testing.T, old, new string) (string, int) {
	t.Helper()
	def := string(scenario.DefaultYAML())
	i := strings.Index(def, old)
	if i < 0 {
		t.Fatalf("the default scenario has no %q", old)
	}
	path := filepath.Join(t.TempDir(), "my.yaml")
	if err := os.WriteFile(path, []byte(def[:i]+new+def[i+len(old):]), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, strings.Count(def[:i], "\n") + 1
}

// TestSimulateEngineSettingErrors: a setting the engine cannot take, from
// a scenario file, fails (exit 1) naming the file, the line and the YAML
// key; from a flag, it is a usage error (exit 2) naming the flag. Before,
// the file's were "every run (6): bad config: gpu memory utilization: 1.5
// is not in (0, 1]" (no file, line or key), and --unquantized self_attn
// with 16-bit weights the same, with status 1 (the review's item 1).
func TestSimulateEngineSettingErrors(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"gpu_memory_utilization: 0.9", "gpu_memory_utilization: 1.5", `field "engine.gpu_memory_utilization": 1.5: want the share of the GPU's memory the engine may use, above 0 and at most 1`},
		{"tp: 1", "tp: 3", `field "tp": bad tensor parallelism: llama-3.1-8b: 32 attention heads do not split over tp=3`},
		{"max_seqs: 256", "max_seqs: -3", `field "engine.max_seqs": -3: want a number of requests, 1 or more`},
		{"kv_dtype: bf16", "unquantized: self_attn", `field "unquantized": self_attn names what quantized weights keep in 16 bits, but the weights are bf16`},
	} {
		path, line := scenarioWith(t, tc.old, tc.new)
		code, _, errs := run(t, "", "simulate", "--scenario", path)
		want := "gpufrag: bad scenario: " + path + ": line " + strconv.Itoa(line) + ": " + tc.want
		if code != 1 || !strings.HasPrefix(errs, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q...", tc.new, code, errs, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tp", "3"}, "gpufrag: --tp 3 with the scenario's model llama-3.1-8b: bad tensor parallelism"},
		{[]string{"--gpu-memory-utilization", "1.5"}, "gpufrag: --gpu-memory-utilization 1.5: want a share in (0, 1]"},
		{[]string{"--unquantized", "self_attn"}, "gpufrag: --unquantized: self_attn names what quantized weights keep in 16 bits, but the weights are bf16: give weight_dtype (--weight-dtype) fp8, int8 or int4"},
		{[]string{"--unquantized", "layers.999", "--weight-dtype", "fp8"}, "gpufrag: --unquantized: bad model: llama-3.1-8b: "},
		{[]string{"--engine", "vllm-v0", "--num-scheduler-steps", "8"}, "gpufrag: --num-scheduler-steps: 8 with chunked prefill"},
	} {
		code, _, errs := run(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != 2 || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("simulate %v: exit %d, stderr %q; want exit 2 and %q...", tc.args, code, errs, tc.want)
		}
	}
}

// TestSimulateSessionKeys: a bad sessions setting in a scenario file names
// the file, the line and the key as the file spells it. Before:
// `field "workload.sessions": bad configuration: Sessions: need 1 <=
// MinTurns <= MaxTurns (got 5, 2)` (the review's item 2).
func TestSimulateSessionKeys(t *testing.T) {
	path, line := scenarioWith(t, "max_turns: 16", "max_turns: 2")
	def := string(scenario.DefaultYAML())
	if err := os.WriteFile(path, []byte(strings.Replace(strings.Replace(def, "max_turns: 16", "max_turns: 2", 1), "min_turns: 1", "min_turns: 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "simulate", "--scenario", path)
	want := "gpufrag: bad scenario: " + path + ": line " + strconv.Itoa(line) + `: field "workload.sessions.max_turns": 2 is below min_turns 5: turns are drawn from min_turns to max_turns`
	if code != 1 || !strings.HasPrefix(errs, want) {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q...", code, errs, want)
	}
}

// TestSimulateBadRate: a sessions rate of -1 or NaN in a scenario file is
// refused naming the rate's key and line. Before, both said `field
// "workload.sessions": give a count, or a rate and a duration` (the
// review's item 3).
func TestSimulateBadRate(t *testing.T) {
	for _, v := range []string{"-1", ".nan"} {
		path, line := scenarioWith(t, "rate: 0.02", "rate: "+v)
		code, _, errs := run(t, "", "simulate", "--scenario", path)
		want := "gpufrag: bad scenario: " + path + ": line " + strconv.Itoa(line) + `: field "workload.sessions.rate": `
		if code != 1 || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "want a positive number of new sessions per second") {
			t.Errorf("rate: %s: exit %d, stderr %q; want exit 1 and %q...", v, code, errs, want)
		}
	}
}

// TestSimulateScenarioNotYAML: --scenario given a CSV (the README's node
// list) says the file is not a scenario and what one is. Before: "line 1:
// cannot unmarshal !!str `sn,cpu_...` into a mapping of fields" (the
// review's item 4).
func TestSimulateScenarioNotYAML(t *testing.T) {
	nodes := filepath.Join("..", "..", "..", "..", "examples", "nodes.csv")
	code, _, errs := run(t, "", "simulate", "--scenario", nodes)
	want := "gpufrag: bad scenario: " + nodes + `: line 1: not a scenario: want a YAML mapping of fields (model:, gpu:, engine:, workload:, runs:; ` +
		"`gpufrag simulate --print-scenario` prints one), not text (\"sn,cpu_milli,memory_mib,gpu,model\")\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}
}

// TestSimulateDurationZero: --duration 0 runs until every request ends,
// as a scenario's "duration: 0" does and a trace does by default, and the
// help says so; where that cannot be (a generated workload without a
// count, whose duration sets how many arrive), it is a usage error naming
// --duration. Before, the default scenario at --duration 0 failed with
// status 1 and "bad scenario: workload.sessions: give a count, or a rate
// and a duration", --duration -1s said "want a positive duration" though
// 0 was taken, and the help did not say what 0 does (the review's item 5).
func TestSimulateDurationZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "0"}, "gpufrag: --duration 0 runs until every request ends, but the scenario's workload.sessions has no count: its duration sets how many arrive; give a duration such as 30m"},
		{[]string{"--duration", "-1s"}, "gpufrag: --duration -1s: want a positive duration such as 30m, or 0 to run until every request ends"},
	} {
		code, _, errs := run(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != 2 || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("simulate %v: exit %d, stderr %q; want exit 2 and %q...", tc.args, code, errs, tc.want)
		}
	}
	trace := filepath.Join("..", "..", "..", "..", "examples", "sharegpt.csv")
	code, out, errs := run(t, "", "simulate", "--trace", trace, "--rate", "4", "--kv", "paged:16", "--duration", "0")
	if code != 0 || !strings.Contains(out, "simulated to the end of the workload") {
		t.Errorf("--duration 0 on a trace: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	_, help, _ := run(t, "", "simulate", "--help")
	if !strings.Contains(help, "e.g. 30m; 0: until every request ends (a generated workload without a count needs a duration, which sets how many arrive)") {
		t.Errorf("simulate --help does not say what --duration 0 does")
	}
}

// TestSimulateRateLowerBound: --rate below what keeps a trace's drawn
// arrivals within the simulated clock is a usage error naming --rate and
// the lowest rate that fits, as --rate above maxRate is. Before, the
// review's command ran, its arrivals 73 minutes apart whatever the rate
// (the review's item 6).
func TestSimulateRateLowerBound(t *testing.T) {
	trace := filepath.Join("..", "..", "..", "..", "examples", "sharegpt.csv")
	for _, rate := range []string{"1e-300", "1e-6"} {
		code, _, errs := run(t, "", "simulate", "--trace", trace, "--rate", rate, "--kv", "paged:16")
		if want := "gpufrag: --rate: " + strings.Replace(rate, "-6", "-06", 1) + " requests per second: the trace's 1000 requests would arrive over about "; code != 2 || !strings.HasPrefix(errs, want) ||
			!strings.Contains(errs, "past the 2.3 years a run's drawn arrivals may span (workload.MaxArrivalSpan, a 64th of the 146 years the simulated clock holds); give at least 1.4e-05 requests per second") {
			t.Errorf("--rate %s: exit %d, stderr %q; want exit 2 and %q...", rate, code, errs, want)
		}
	}
	if code, _, errs := run(t, "", "simulate", "--trace", trace, "--rate", "1.4e-5", "--kv", "paged:16"); code != 0 {
		t.Errorf("--rate 1.4e-5: exit %d: %s", code, errs)
	}
}
