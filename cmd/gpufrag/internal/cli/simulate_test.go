package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// skipHeavy skips a test that runs the whole default scenario when the
// allocators' and block pool's self-checks are on (-race or -tags
// invariants): they check after every operation, which turns the seconds
// of a 30-minute simulation into many minutes. The plain `go test ./...`
// step runs these tests; the self-checks run on the smaller simulations.
func skipHeavy(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the full default scenario; run without -short")
	}
	if testkit.SlowBuild {
		t.Skip("runs the full default scenario; too slow with every self-check on (-race, -tags invariants)")
	}
}

// simulateJSON runs simulate with --json and decodes the output.
func simulateJSON(t *testing.T, args ...string) (scenario.Report, string) {
	t.Helper()
	code, out, errs := run(t, "", append([]string{"simulate", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("simulate %v: exit %d: %s", args, code, errs)
	}
	var o scenario.Report
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("simulate %v: bad JSON: %v\n%s", args, err, out)
	}
	return o, out
}

// The default scenario runs every combination and accounts for every request.
func TestSimulateDefault(t *testing.T) {
	skipHeavy(t)
	o, _ := simulateJSON(t)
	if o.Scenario != "long-context-chat" || len(o.Results) != 6 {
		t.Fatalf("scenario %q with %d results, want long-context-chat with 6", o.Scenario, len(o.Results))
	}
	for _, r := range o.Results {
		if got := r.RequestsCompleted + r.RequestsFailedOOM + r.RequestsRejected + r.RequestsUnfinished; got != r.RequestsTotal {
			t.Errorf("%s/%s: completed+failed+rejected+unfinished = %d, total %d", r.KV, r.Allocator, got, r.RequestsTotal)
		}
		if r.RequestsCompleted == 0 || r.PeakReservedBytes == 0 || r.OutputTokensPerS <= 0 {
			t.Errorf("%s/%s: nothing served: %+v", r.KV, r.Allocator, r)
		}
		b := r.KVBreakdown
		if s := b.TokenStates + b.Reservation + b.Internal + b.External; s < 0.999 || s > 1.001 {
			t.Errorf("%s/%s: KV shares sum to %v", r.KV, r.Allocator, s)
		}
	}
	// Paged holds only real tokens and partly filled blocks; reserving the
	// whole 128K context wastes most of what it holds.
	for _, r := range o.Results {
		switch r.KV {
		case "paged:16":
			if r.KVBreakdown.TokenStates < 0.9 {
				t.Errorf("paged token share %v, want > 0.9", r.KVBreakdown.TokenStates)
			}
		case "contiguous-max":
			if r.KVBreakdown.TokenStates > 0.5 {
				t.Errorf("contiguous-max token share %v, want < 0.5", r.KVBreakdown.TokenStates)
			}
		}
	}
	if o.Recommended < 0 || o.Recommended >= len(o.Results) || o.Reason == "" {
		t.Errorf("no recommendation: %d %q", o.Recommended, o.Reason)
	}
}

// Same inputs, byte-identical JSON, even with runs in parallel.
func TestSimulateDeterministic(t *testing.T) {
	// 40 simulated seconds: enough for compactions of the cache and
	// preemption-free batches, cheap under -race (which turns on every
	// allocator self-check).
	args := []string{"--duration", "40s", "--kv", "paged:16,contiguous-grow", "--alloc", "caching"}
	_, a := simulateJSON(t, append(args, "--parallel", "1")...)
	_, b := simulateJSON(t, append(args, "--parallel", "4")...)
	if a != b {
		t.Fatalf("two runs differ:\n%s\n---\n%s", a, b)
	}
	_, c := simulateJSON(t, append(args, "--seed", "7")...)
	if a == c {
		t.Fatalf("--seed 7 gave the same output as the scenario's seed")
	}
}

func TestSimulateTrace(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(tr, []byte("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"+
		"100,20,120,5\n3000,200,3200,15\n50,0,50,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A length-only trace needs a rate.
	code, _, errs := run(t, "", "simulate", "--trace", tr, "--json")
	if code != 1 || !strings.Contains(errs, "--rate") {
		t.Errorf("no rate: exit %d, %q", code, errs)
	}
	o, _ := simulateJSON(t, "--trace", tr, "--rate", "2", "--model", "qwen2.5-7b", "--gpu", "a100-80g",
		"--kv", "paged:16,vmm:2MiB")
	if len(o.Results) != 2 || o.Results[1].Allocator != "vmm:2MiB" {
		t.Fatalf("runs: %+v", o.Results)
	}
	for _, r := range o.Results {
		if r.RequestsTotal != 3 || r.RequestsCompleted != 3 {
			t.Errorf("%s: %d of %d completed", r.KV, r.RequestsCompleted, r.RequestsTotal)
		}
		// 20 + 200 + 0 output tokens, one sample each.
		if r.OutputTokens != 220 {
			t.Errorf("%s: %d output tokens, want 220", r.KV, r.OutputTokens)
		}
	}
}

// TestSimulateWarnsDroppedRows: FineServe rows without a timestamp are
// dropped when the file has timed rows; the CLI printed a warning only for
// skipped bad rows, so they vanished without a word.
func TestSimulateWarnsDroppedRows(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "fs.csv")
	if err := os.WriteFile(tr, []byte("input_length,output_length,latency,timestamp,architecture,scale\n"+
		"300,120,0.0015,0.0,Dense,30-100B\n80,45,0.0014,250000.0,Dense,30-100B\n90,10,0.001,,Dense,30-100B\n"+
		"50,5,0.001,500000.0,Dense,30-100B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "simulate", "--trace", tr, "--model", "qwen2.5-7b", "--gpu", "a100-80g", "--kv", "paged:16", "--alloc", "caching")
	if code != 0 || !strings.Contains(errs, "warning: "+tr+": dropped 1 of 4 rows, which have no timestamp (the first on line 4)") {
		t.Errorf("exit %d, stderr %q: want a warning about the untimed row", code, errs)
	}
}

func TestSimulateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"+
		"2023-11-16 18:15:46.6800000,100,20\n2023-11-16 18:15:47.0000000,-5,20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(yml, []byte("name: x\nmodle: llama-3-8b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--trace", bad, "--format", "azure"}, 1, `line 3: field "ContextTokens"`},
		{[]string{"--trace", bad, "--format", "azure", "--skip-bad-rows", "--duration", "1m"}, 0, "skipped 1 bad row (the first: line 3"},
		{[]string{"--scenario", yml}, 1, "line 2"},
		{[]string{"--format", "azure"}, 2, "--format has no effect without --trace"},
		{[]string{"--rate", "-1"}, 2, "--rate"},
		{[]string{"--tp", "0"}, 2, "--tp"},
		{[]string{"--on-oom", "explode"}, 2, "--on-oom"},
		{[]string{"--kv-dtype", "int4"}, 2, "4-bit KV caches are not modelled"},
		{[]string{"--trace", bad, "--max-rows", "-1"}, 2, "--max-rows -1"},
		// Bad flag values exit 2, every one (issue 18).
		{[]string{"--gpu", "h100"}, 2, "unknown gpu"},
		{[]string{"--kv", "paged:0"}, 2, "paged"},
		{[]string{"extra"}, 2, ""},
	} {
		code, _, errs := run(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("simulate %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func TestSimulateHTMLAndScenario(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := run(t, "", "simulate", "--print-scenario")
	if code != 0 || !strings.Contains(out, "name: long-context-chat") {
		t.Fatalf("print-scenario: exit %d:\n%s", code, out)
	}
	yml := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(yml, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "r.html")
	code, text, errs := run(t, "", "simulate", "--scenario", yml, "--duration", "2m", "--kv", "contiguous-grow", "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(text, "contiguous-grow") || !strings.Contains(text, "Recommended:") {
		t.Errorf("table:\n%s", text)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "contiguous-grow / caching: memory", "Recommended:"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<script") {
		t.Errorf("HTML has a script")
	}
}

// TestReadmeSimulateTable keeps the README honest: every row of the tables
// it quotes must be what `gpufrag simulate` prints now.
func TestReadmeSimulateTable(t *testing.T) {
	skipHeavy(t)
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	code, out, errs := run(t, "", "simulate")
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		for _, kv := range []string{"contiguous-", "paged:", "vmm:"} {
			if strings.HasPrefix(line, kv) {
				n++
				if !strings.Contains(string(readme), line) {
					t.Errorf("README.md does not quote the current simulate output line:\n%s\n(update it from `go run ./cmd/gpufrag simulate`)", line)
				}
			}
		}
	}
	if n != 12 {
		t.Fatalf("found %d result rows in the simulate output, want 12 (6 runs × 2 tables):\n%s", n, out)
	}
	// The error bands' rows (indented) and their bases are quoted too.
	_, bands, _ := strings.Cut(out, "\nError bands:")
	bands, _, _ = strings.Cut(bands, "\nRecommended:")
	rows := 0
	for _, line := range strings.Split(bands, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.Contains(string(readme), line+"\n") {
			t.Errorf("README.md does not quote the current simulate error-band line:\n%s\n(update it from `go run ./cmd/gpufrag simulate`)", line)
		}
		rows++
	}
	if rows < 8 {
		t.Errorf("the simulate output's error bands have %d lines, want the table of 6 runs and 3 bases:\n%s", rows, out)
	}
}

// TestSimulateImpossiblePair: a scenario that runs vmm KV on the caching
// allocator is refused before anything runs, with the one message of
// strategy.CheckPair naming the run, in the file and on its line.
func TestSimulateImpossiblePair(t *testing.T) {
	yml := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(yml, []byte("model: llama-3.1-8b\ngpu: h100-80g\n"+
		"workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"+
		"runs:\n  - {kv: \"paged:16\", alloc: caching}\n  - {kv: \"vmm:2MiB\", alloc: caching}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "simulate", "--scenario", yml)
	want := yml + `: line 7: field "runs[1]": bad strategy spec: kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc caching does not grow blocks in place`
	if code != exitFail || out != "" || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, exitFail, want)
	}
}
