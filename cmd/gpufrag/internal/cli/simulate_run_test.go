package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/simreport"
)

// TestSimulateHeaderDescribesTheRun: the embedded scenario's header only
// when it ran as written; flags that change it give a header, "scenario",
// "about" and "run" that say what ran (issue 18, item 3).
func TestSimulateHeaderDescribesTheRun(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "tiny.csv")
	if err := os.WriteFile(trace, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"+
		"2023-11-16 18:15:46.6800000,100,20\n2023-11-16 18:15:47.0000000,200,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := run(t, "", "simulate", "--trace", trace, "--model", "qwen2.5-7b", "--gpu", "a100-40g",
		"--kv-dtype", "fp32", "--kv", "paged:16", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc struct {
		Scenario, About string
		Run             simreport.Run
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scenario != "tiny.csv: qwen2.5-7b on a100-40g" || strings.Contains(doc.About, "H100") ||
		!strings.Contains(doc.About, "KV cache fp32") || !strings.Contains(doc.About, "--trace") {
		t.Errorf("scenario %q, about %q: want the trace, model, GPU and KV type that ran", doc.Scenario, doc.About)
	}
	r := doc.Run
	if r.Trace == nil || r.Trace.Path != trace || r.Trace.Format != "azure" || r.Trace.Requests != 2 ||
		r.Model != "qwen2.5-7b" || r.GPU != "a100-40g" || r.TP != 1 || r.KVDType != "fp32" || r.Embedded != true ||
		r.FromScenario != "long-context-chat" || strings.Join(r.Changed, " ") != "--gpu --kv --kv-dtype --model --trace" {
		t.Errorf("run = %+v", r)
	}
	code, text, errb := run(t, "", "simulate", "--trace", trace, "--model", "qwen2.5-7b", "--gpu", "a100-40g", "--kv", "paged:16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Contains(text, "long-context chat on one H100") || !strings.HasPrefix(text, "tiny.csv: qwen2.5-7b on a100-40g") {
		t.Errorf("text header does not describe the run:\n%s", text)
	}
}

func TestSimulateRunUnchanged(t *testing.T) {
	_, yaml, _ := run(t, "", "simulate", "--print-scenario")
	// Two simulated minutes instead of thirty: the run is the point, not its
	// length (the whole default scenario takes minutes under -race).
	short := strings.Replace(yaml, "\nduration: 30m\n", "\nduration: 2m\n", 1)
	if short == yaml {
		t.Fatalf("--print-scenario has no top-level \"duration: 30m\" line to shorten:\n%s", yaml)
	}
	yaml = short
	file := filepath.Join(t.TempDir(), "my.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := run(t, "", "simulate", "--json", "--parallel", "2", "--scenario", file)
	if code != 0 {
		t.Fatalf("scenario file: exit %d: %s", code, errb)
	}
	var doc struct {
		Scenario string
		Run      simreport.Run
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Run.Changed) != 0 || doc.Run.Embedded || doc.Scenario != doc.Run.FromScenario || doc.Run.Title != doc.Scenario {
		t.Errorf("a scenario file run as written keeps its name: %+v", doc)
	}
}

// TestSimulateDefragSummary: --defrag's text has a compaction summary.
func TestSimulateDefragSummary(t *testing.T) {
	code, out, errb := run(t, "", "simulate", "--kv", "contiguous-grow,paged:16", "--alloc", "caching", "--defrag", "threshold", "--duration", "2m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, want := range []string{"Compaction (--defrag threshold):", "contiguous-grow / caching: ", " moved (lower bound ",
		"requests failed with OOM: ", "paged:16 / caching: did not run: paged:16 keeps no KV"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSimulateFragmentationNotes: the paged pool's 0.50 is weighed and
// explained.
func TestSimulateFragmentationNotes(t *testing.T) {
	code, out, errb := run(t, "", "simulate", "--kv", "paged:16", "--duration", "2m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(out, "paged:16 / caching: minor: little memory at stake") || !strings.Contains(out, "the KV pool is one") {
		t.Errorf("output does not weigh the paged run's fragmentation:\n%s", out)
	}
}

// TestDefragNothingToGain: a layout compaction cannot improve says so and
// why, instead of a bare "reached" with 0 moves.
func TestDefragNothingToGain(t *testing.T) {
	path := cachingLayoutFile(t, 5, []int{1}) // one 4 MiB hole in one 20 MiB segment
	code, out, errb := run(t, "", "defrag", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(out, "nothing to gain: the free memory is already one block.") || !strings.Contains(out, "fragmentation: healthy") {
		t.Errorf("output:\n%s", out)
	}
	// The three-segment layout has something to gain: no such line.
	_, out, _ = run(t, "", "defrag", defragLayoutFile(t))
	if strings.Contains(out, "nothing to gain") || !strings.Contains(out, "fragmentation: ") {
		t.Errorf("a plan with moves:\n%s", out)
	}
}

func TestReplayVerdicts(t *testing.T) {
	code, out, errb := run(t, "", "replay")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	// sizeclass: health 1.00 at the peak beside 333 OOMs is a full device.
	if !strings.Contains(out, "sizeclass: out of memory, not fragmentation (333 out-of-memory failures") {
		t.Errorf("output:\n%s", out)
	}
}

// TestSimulateArrivalSeed: --arrival-seed draws a benchmark file's Poisson
// arrivals again from another seed, says so, and changes the run (crusoe's
// FP8 70B at 3 req/s, where the queue starts: docs/calibrate.md, issue 24,
// twenty-second session); it needs --trace, and a trace that draws no
// arrivals refuses it.
func TestSimulateArrivalSeed(t *testing.T) {
	file := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps3.lens.json")
	var seedEcho *uint64
	ttft := func(extra ...string) (float64, string) {
		t.Helper()
		args := append([]string{"simulate", "--trace", file, "--kv", "paged:16", "--alloc", "caching", "--model", "llama-3.1-70b",
			"--tp", "4", "--weight-dtype", "fp8", "--gpu", "l40s-48g", "--engine", "vllm-v0", "--engine-version", "0.5.5",
			"--max-batch-tokens", "512", "--prefix-caching=false", "--json"}, extra...)
		code, out, errs := run(t, "", args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var doc struct {
			Results []struct {
				TTFT struct{ P50 float64 } `json:"ttft_s"`
			} `json:"results"`
			Run struct {
				Trace struct {
					ArrivalSeed *uint64 `json:"arrival_seed"`
				} `json:"trace"`
			} `json:"run"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("%v", err)
		}
		seedEcho = doc.Run.Trace.ArrivalSeed
		return doc.Results[0].TTFT.P50, errs
	}
	own, ownErr := ttft()
	if seedEcho != nil {
		t.Errorf("run.trace.arrival_seed %d without --arrival-seed", *seedEcho)
	}
	again, _ := ttft("--arrival-seed", "0") // the file's own seed: vLLM's default, 0
	other, otherErr := ttft("--arrival-seed", "4")
	if seedEcho == nil || *seedEcho != 4 {
		t.Errorf("run.trace.arrival_seed %v, want 4", seedEcho)
	}
	if own != again || own == other || !strings.Contains(otherErr, "arrivals drawn from seed 4, not the run's own (0)") ||
		strings.Contains(ownErr, "arrivals drawn") {
		t.Errorf("TTFT p50 %.3f s (own), %.3f (seed 0), %.3f (seed 4); stderr %q / %q", own, again, other, ownErr, otherErr)
	}
	if code, _, errs := run(t, "", "simulate", "--arrival-seed", "4"); code != 2 || !strings.Contains(errs, "--trace") {
		t.Errorf("--arrival-seed without --trace: exit %d, %q", code, errs)
	}
	csv := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(csv, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "simulate", "--trace", csv, "--arrival-seed", "4", "--model", "llama-3.1-8b", "--gpu", "a100-80g"); code == 0 ||
		!strings.Contains(errs, "arrival") {
		t.Errorf("an Azure trace with --arrival-seed: exit %d, %q", code, errs)
	}
}

// TestSimulateArrivalDraws: --arrival-draws N replays a benchmark run that
// saved no send times under N draws of its arrivals and reports each
// figure's smallest, median and largest; each draw is the run as
// --arrival-seed replays it alone (the oracle here: N separate runs). The
// text says how far the draw moves the figures, or, with one draw, how to
// see it; runs whose arrivals are not drawn are refused with the reason.
func TestSimulateArrivalDraws(t *testing.T) {
	file := filepath.Join("..", "..", "..", "..", "calib", "testdata", "bench", "crusoe-l40s-llama-3.1-70b-fp8-dynamic-tp4-qps3.lens.json")
	base := []string{"simulate", "--trace", file, "--kv", "paged:16", "--alloc", "caching", "--model", "llama-3.1-70b",
		"--tp", "4", "--weight-dtype", "fp8", "--gpu", "l40s-48g", "--engine", "vllm-v0", "--engine-version", "0.5.5",
		"--max-batch-tokens", "512", "--prefix-caching=false"}
	type result struct {
		TTFT  struct{ P50 float64 } `json:"ttft_s"`
		TPOT  struct{ P50 float64 } `json:"tpot_s"`
		ITL   struct{ P50 float64 } `json:"itl_s"`
		TPS   float64               `json:"output_tokens_per_s"`
		Draws *sim.ArrivalDraws     `json:"arrival_draws"`
	}
	simulate := func(extra ...string) (result, *uint64) {
		t.Helper()
		code, out, errs := run(t, "", append(append(append([]string{}, base...), "--json"), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		var doc struct {
			Results []result `json:"results"`
			Bench   struct {
				ArrivalSeed *uint64 `json:"arrival_seed"`
			} `json:"bench"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("%v: %v", extra, err)
		}
		return doc.Results[0], doc.Bench.ArrivalSeed
	}
	for _, tt := range []struct {
		first uint64
		extra []string
	}{{0, nil}, {5, []string{"--arrival-seed", "5"}}} {
		got, seed := simulate(append([]string{"--arrival-draws", "3"}, tt.extra...)...)
		d := got.Draws
		if d == nil || d.Draws != 3 || d.FirstSeed != tt.first || seed == nil || *seed != tt.first {
			t.Fatalf("%v: arrival_draws %+v, bench.arrival_seed %v; want 3 draws from seed %d", tt.extra, d, seed, tt.first)
		}
		var ttft, tpot, itl, tps []float64
		for k := range uint64(3) {
			r, _ := simulate("--arrival-seed", strconv.FormatUint(tt.first+k, 10))
			ttft, tpot, itl, tps = append(ttft, r.TTFT.P50), append(tpot, r.TPOT.P50), append(itl, r.ITL.P50), append(tps, r.TPS)
			if k == 0 && (r.TTFT.P50 != got.TTFT.P50 || r.TPS != got.TPS) {
				t.Errorf("%v: the main figures are not the first draw's: TTFT %g vs %g", tt.extra, got.TTFT.P50, r.TTFT.P50)
			}
		}
		for _, c := range []struct {
			name string
			got  sim.Spread
			xs   []float64
		}{{"ttft", d.TTFTP50, ttft}, {"tpot", d.TPOTP50, tpot}, {"itl", d.ITLP50, itl}, {"tokens/s", d.OutputTokensPerS, tps}} {
			s := slices.Sorted(slices.Values(c.xs))
			if c.got != (sim.Spread{Min: s[0], Median: s[1], Max: s[2]}) {
				t.Errorf("%v %s: spread %+v, the three runs %v", tt.extra, c.name, c.got, s)
			}
		}
		if d.TTFTP50.Min == d.TTFTP50.Max {
			t.Errorf("%v: three draws gave one TTFT: the test cannot tell draws apart", tt.extra)
		}
	}
	// The draws run several at once: the same document at --parallel 1 and
	// 4, and the report's trace names no draw's seed.
	one := append(append(append([]string{}, base...), "--json", "--arrival-draws", "4", "--kv", "contiguous-grow"), "--parallel", "1")
	_, a, _ := run(t, "", one...)
	_, b, _ := run(t, "", append(one[:len(one)-1], "4")...)
	var doc struct {
		Run struct {
			Trace struct {
				ArrivalSeed *uint64 `json:"arrival_seed"`
			} `json:"trace"`
		} `json:"run"`
		Results []result `json:"results"`
	}
	if err := json.Unmarshal([]byte(a), &doc); err != nil || len(doc.Results) != 2 || doc.Results[1].Draws == nil || doc.Results[1].Draws.Draws != 4 {
		t.Fatalf("%v: %s", err, a)
	}
	if a != b || doc.Run.Trace.ArrivalSeed != nil {
		t.Errorf("--parallel 1 and 4 differ, or a draw's seed (%v) leaked into run.trace:\n%s\n---\n%s", doc.Run.Trace.ArrivalSeed, a, b)
	}
	// The text: the table and, at this knee, the warning; with one draw, the hint.
	_, out, _ := run(t, "", append(append([]string{}, base...), "--arrival-draws", "8")...)
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "arrivals were drawn 8 times (seeds 0 to 7)") || !strings.Contains(flat, "the load sits where the queue starts") {
		t.Errorf("text with 8 draws:\n%s", out)
	}
	// A light load of few requests: the latencies hold and the throughput
	// follows the arrivals' span, which the text tells apart from a knee.
	_, out, _ = run(t, "", "simulate", "--trace", filepath.Join("..", "..", "..", "..", "examples", "vllm_bench_qps01.json"),
		"--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8", "--kv", "paged:16", "--arrival-draws", "8")
	if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, "while the latencies hold") || strings.Contains(flat, "queue starts") {
		t.Errorf("text of a light load with 8 draws:\n%s", out)
	}
	_, out, _ = run(t, "", base...)
	if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, "drawn again, from seed 0") || !strings.Contains(flat, "--arrival-draws 8") {
		t.Errorf("text with one draw:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(append([]string{}, base...), "--arrival-draws", "0"), "--arrival-draws 0: want 1 to 64"},
		{append(append([]string{}, base...), "--arrival-draws", "65"), "--arrival-draws 65: want 1 to 64"},
		{[]string{"simulate", "--arrival-draws", "2"}, "not a benchmark result file"},
		{[]string{"simulate", "--trace", filepath.Join("..", "..", "..", "..", "workload", "testdata", "bench", "vllm_bench_qpsinf_cut.json"),
			"--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8", "--arrival-draws", "2"}, "sent every request at once"},
	} {
		if code, _, errs := run(t, "", tt.args...); code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 with %q", tt.args, code, errs, tt.want)
		}
	}
}

// TestOnceOpener: --arrival-draws reads each input once; a file changed
// after its first read still gives every draw the first bytes, and an
// input over the bound (workload.MaxBenchBytes; 8 bytes here) is refused.
func TestOnceOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := onceOpener{max: 8}
	read := func() string {
		t.Helper()
		rc, err := o.open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "first" {
		t.Fatalf("first read %q", got)
	}
	if err := os.WriteFile(path, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "first" {
		t.Errorf("second read %q, want the first bytes", got)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte("123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.open(big); err == nil || !strings.Contains(err.Error(), "big.json") {
		t.Errorf("an input over the bound: %v", err)
	}
	if _, err := o.open(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Error("a missing file opened")
	}
}
