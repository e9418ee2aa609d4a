package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/sim/scenario"

	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/internal/testkit"
)

// adviseTrace is the small synthetic Azure trace of package advise's tests.
var adviseTrace = filepath.Join("..", "..", "..", "..", "advise", "testdata", "small_azure.csv")

// skipAdviseSims skips a test that simulates (a few dozen runs of 120
// requests) when every allocator self-check is on (-race, -tags
// invariants), which makes it take many minutes; package advise's tests
// cover Run's concurrency under -race with a fake evaluator.
func skipAdviseSims(t *testing.T) {
	t.Helper()
	if testkit.SlowBuild {
		t.Skip("simulates; too slow with every self-check on (-race, -tags invariants)")
	}
}

// adviseArgs is a narrow sweep (4 candidates, 2 bisections) that runs in a
// second or two.
func adviseArgs(extra ...string) []string {
	return append([]string{"advise", "--trace", adviseTrace, "--model", "llama-2-13b", "--gpu", "l40s-48g",
		"--kv", "paged:16,contiguous-grow", "--alloc", "caching,async", "--gpu-memory-utilization", "0.9",
		"--bucket", "0", "--defrag", "off", "--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--bisect-steps", "2"}, extra...)
}

// runAdviceJSON runs advise with args (--json among them), fails the
// test unless it exits 0, and returns the report, stdout and stderr.
func runAdviceJSON(t *testing.T, args ...string) (*advise.Report, string, string) {
	t.Helper()
	code, out, errs := run(t, "", args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	var rep advise.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	return &rep, out, errs
}

// TestAdviseBestEffort: with an SLO no setting can meet, advise still
// answers: the best effort, meets_slo false, what binds and what to change;
// the text names it and prints the deploy command with the model's
// Hugging Face id.
func TestAdviseBestEffort(t *testing.T) {
	skipAdviseSims(t)
	args := adviseArgs("--slo-tpot-p99", "0.0001", "--bracket-steps", "1", "--bisect-steps", "0")
	rep, _, _ := runAdviceJSON(t, append(args, "--json")...)
	r := rep.Recommended
	if r == nil || rep.MeetsSLO || r.MeetsSLO || r.Binding != "tpot_p99_s" || !(r.BestValue > 0.0001) || !strings.Contains(rep.Advice, "--slo-tpot-p99") {
		t.Fatalf("best effort %+v, advice %q", r, rep.Advice)
	}
	code, text, errs := run(t, "", args...)
	if code != 0 || !strings.Contains(text, "No setting tried meets the SLO. Best effort: ") ||
		!strings.Contains(text, "vllm serve meta-llama/Llama-2-13b-hf --block-size 16") {
		t.Fatalf("exit %d, %s\n%s", code, errs, text)
	}
}

// TestAdviseITLObjective: --slo-itl-p99 reaches the search and the
// report: an objective below every gap binds, the inputs carry it, and
// every candidate has its ITL p99; a negative one is a usage error.
func TestAdviseITLObjective(t *testing.T) {
	skipAdviseSims(t)
	args := adviseArgs("--slo-itl-p99", "0.0001", "--bracket-steps", "1", "--bisect-steps", "0")
	rep, _, _ := runAdviceJSON(t, append(args, "--json")...)
	r := rep.Recommended
	if r == nil || rep.MeetsSLO || r.Binding != "itl_p99_s" || !(r.BestValue > 0.0001) || !strings.Contains(rep.Advice, "Relax --slo-itl-p99") ||
		rep.Inputs.SLO.ITLP99 != 0.0001 {
		t.Fatalf("best effort %+v, advice %q, SLO %+v", r, rep.Advice, rep.Inputs.SLO)
	}
	for _, c := range rep.Candidates {
		if c.Completed > 0 && !(c.ITLP99 > 0) {
			t.Errorf("candidate %s: ITL p99 %v", c.Settings, c.ITLP99)
		}
	}
	code, _, errs := run(t, "", adviseArgs("--slo-itl-p99", "-1")...)
	if code != 2 || !strings.Contains(errs, "--slo-itl-p99 -1") {
		t.Errorf("a negative ITL objective: exit %d, %s", code, errs)
	}
}

func TestAdviseJSON(t *testing.T) {
	skipAdviseSims(t)
	code, out, errs := run(t, "", adviseArgs("--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "advise: 4 candidates (4 setup), at most 8 simulations each") {
		t.Errorf("no candidate count up front: %q", errs)
	}
	var rep advise.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if rep.Recommended == nil || rep.Recommended.OOMs != 0 || !(rep.Recommended.SustainableRPS > 0) || len(rep.Candidates) != 4 {
		t.Fatalf("recommended %+v, %d candidates", rep.Recommended, len(rep.Candidates))
	}
	// The shape of docs/json.md: recommended.{settings,sustainable_rate_rps,ooms}, runner_up, candidates.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(raw["recommended"], &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"settings", "sustainable_rate_rps", "ooms"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("recommended has no %q: %s", k, raw["recommended"])
		}
	}
	for _, k := range []string{"runner_up", "candidates"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q", k)
		}
	}
	if rep.Inputs.Trace.SHA256 == "" || rep.Inputs.Trace.Requests != 120 {
		t.Errorf("inputs %+v", rep.Inputs.Trace)
	}
}

// TestReadAdviseTraceDigest: the digest is taken as the trace is read, and
// the rest of the file after --max-rows is hashed too, so it is the whole
// file's SHA-256 either way; a binary file is refused at once (it was hashed
// to its end first, so /dev/zero never ended).
func TestReadAdviseTraceDigest(t *testing.T) {
	data, err := os.ReadFile(adviseTrace)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	for _, maxRows := range []int{0, 3} {
		tr, got, err := scenario.ReadTrace(&scenario.Trace{File: adviseTrace, Format: "azure", MaxRows: maxRows}, openNamed)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || (maxRows > 0 && len(tr.Requests) != maxRows) {
			t.Errorf("max rows %d: digest %s, %d requests; want %s", maxRows, got, len(tr.Requests), want)
		}
	}
	zeros := filepath.Join(t.TempDir(), "zeros.csv")
	if err := os.WriteFile(zeros, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := scenario.ReadTrace(&scenario.Trace{File: zeros, Format: "azure"}, openNamed); err == nil || !strings.Contains(err.Error(), "byte 0 is NUL") {
		t.Errorf("binary trace: %v", err)
	}
}

// 1 and 4 workers print the same advice, byte for byte.
func TestAdviseParallelIdentical(t *testing.T) {
	skipAdviseSims(t)
	_, a, _ := run(t, "", adviseArgs("--json", "--parallel", "1")...)
	_, b, _ := run(t, "", adviseArgs("--json", "--parallel", "4")...)
	if a == "" || a != b {
		t.Fatalf("--parallel 1 and 4 differ:\n%s\n---\n%s", a, b)
	}
}

// Three shards merged print what the unsharded --exhaustive run prints, as
// JSON and as text; missing or foreign shards are refused with the file
// names.
func TestAdviseShardMerge(t *testing.T) {
	skipAdviseSims(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		f := filepath.Join(dir, "shard-"+string(rune('0'+i))+".json")
		code, out, errs := run(t, "", adviseArgs("--shard", string(rune('0'+i))+"/3", "--out", f)...)
		if code != 0 || out != "" {
			t.Fatalf("shard %d: exit %d, stdout %q: %s", i, code, out, errs)
		}
		files = append(files, f)
	}
	for _, asJSON := range []bool{true, false} {
		var flag []string
		if asJSON {
			flag = []string{"--json"}
		}
		code, whole, errs := run(t, "", adviseArgs(append(flag, "--exhaustive")...)...)
		if code != 0 {
			t.Fatalf("unsharded: %s", errs)
		}
		code, merged, errs := run(t, "", append(append([]string{"advise", "merge"}, files...), flag...)...)
		if code != 0 {
			t.Fatalf("merge: exit %d: %s", code, errs)
		}
		if merged != whole {
			t.Fatalf("merge (json %v) differs from the unsharded run:\n%s\n---\n%s", asJSON, merged, whole)
		}
		if !asJSON && (!strings.Contains(whole, "Recommended: ") || !strings.Contains(whole, "--gpu-memory-utilization 0.9")) {
			t.Errorf("text output:\n%s", whole)
		}
	}
	code, _, errs := run(t, "", "advise", "merge", files[0], files[2])
	if code != 1 || !strings.Contains(errs, "missing shard(s) 1/3") {
		t.Errorf("missing shard: exit %d: %s", code, errs)
	}
	other := filepath.Join(dir, "other.json")
	if code, _, errs := run(t, "", adviseArgs("--shard", "1/3", "--out", other, "--slo-ttft-p99", "5")...); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs = run(t, "", "advise", "merge", files[0], other, files[2])
	if code != 1 || !strings.Contains(errs, "come from different inputs") || !strings.Contains(errs, "other.json") {
		t.Errorf("foreign shard: exit %d: %s", code, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "gpufrag-advise-shard/1", "shard": x}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", "advise", "merge", bad)
	if code != 1 || !strings.Contains(errs, "bad.json: line 1: not JSON: byte 46: invalid character 'x'") { // the x, checked in the first 4 KiB (issue 28)
		t.Errorf("bad JSON: exit %d: %s", code, errs)
	}
}

// burstyShortTrace writes an Azure-format trace of 600 requests in bursts
// of 60 (0.5 ms apart, every 20 s) with short prompts and mostly short
// outputs (2 to 12 tokens for 5 in 7), on which nothing meets TPOT p99 for
// llama-3-8b on an A100 80GB at token budgets of 2,048 and more under the
// roofline step model (the joint model's faster small steps meet it at
// 8,192, so the tests that use it pin --profile roofline).
func burstyShortTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	outs := []int{2, 3, 5, 8, 12, 40, 120}
	for i := range 600 {
		ts := t0.Add(time.Duration(i/60)*20*time.Second + time.Duration(i%60)*500*time.Microsecond)
		fmt.Fprintf(&b, "%s.%07d,%d,%d\n", ts.Format("2006-01-02 15:04:05"), ts.Nanosecond()/100, 100+(i*37)%150, outs[i%7])
	}
	path := filepath.Join(t.TempDir(), "bursty.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAdviseFollowsAdvice: where nothing meets the SLO, advise goes on
// past the space as its advice says and says so (the recommendation found
// there, of group "extend"); with --extend 0 it stops at the space, the
// best effort stays in the engine in use, and short outputs are named
// with figures in "short_outputs".
func TestAdviseFollowsAdvice(t *testing.T) {
	skipAdviseSims(t)
	args := []string{"advise", "--trace", burstyShortTrace(t), "--model", "llama-3-8b", "--gpu", "a100-80g",
		"--kv", "paged:16,contiguous-max", "--alloc", "caching", "--gpu-memory-utilization", "0.9", "--bucket", "0",
		"--max-num-batched-tokens", "8192,2048", "--max-num-seqs", "256", "--profile", "roofline", "--json"}
	rep, _, errs := runAdviceJSON(t, args...)
	r := rep.Recommended
	if r == nil || !rep.MeetsSLO || r.Group != "extend" || r.Settings.KV.String() != "paged:16" || r.Settings.MaxBatchTokens >= 2048 ||
		!strings.Contains(rep.Reason, "it lies past the space") || !strings.Contains(errs, "going on past the space as the advice says") {
		t.Fatalf("recommended %+v, reason %q, stderr %q", r, rep.Reason, errs)
	}
	rep, out, _ := runAdviceJSON(t, append(args, "--extend", "0")...)
	r, so := rep.Recommended, rep.ShortOutputs
	if r == nil || rep.MeetsSLO || r.Settings.KV.String() != "paged:16" || len(rep.Candidates) != 4 || so == nil || so.Share < 0.5 ||
		!strings.Contains(rep.Advice, "Short outputs set it") || !strings.Contains(out, `"short_outputs": {`) {
		t.Fatalf("--extend 0: best effort %+v, short outputs %+v, advice %q", r, so, rep.Advice)
	}
}

func TestAdviseUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"advise", "--model", "llama-3.1-8b", "--gpu", "a100-80g"}, "--trace is required"},
		{[]string{"advise", "--trace", adviseTrace, "--gpu", "a100-80g"}, "--model is required"},
		{adviseArgs("--shard", "3/3"), "--shard"},
		{adviseArgs("--shard", "1"), "want i/n"},
		{adviseArgs("--gpu-memory-utilization", "1.5"), "gpu_memory_utilization: 1.5"},
		{adviseArgs("--gpu-memory-utilization", "lots"), `--gpu-memory-utilization "lots": want a number`},
		{adviseArgs("--bucket", "-16"), "bucket: -16"},
		{adviseArgs("--defrag", "sometimes"), `defrag: "sometimes"`},
		{adviseArgs("--kv", "paged:0"), "paged:0"},
		{adviseArgs("--alloc", "nosuch"), "nosuch"},
		{adviseArgs("--parallel", "0"), "--parallel 0"},
		{adviseArgs("--extend", "-1"), "--extend -1"},
		{adviseArgs("--slo-ttft-p99", "0"), "--slo-ttft-p99"},
		{adviseArgs("--start-rate", "-1"), "--start-rate -1"},
		{adviseArgs("--tp", "0"), "--tp 0"},
		{adviseArgs("--bisect-steps", "99"), "bisect steps 99"},
		{adviseArgs("--gpu", "nosuch-gpu"), "--gpu"},
		{adviseArgs("--format", "xml"), "--format"},
		{adviseArgs("--weight-dtype", "fp8_e5m2"), "--weight-dtype fp8_e5m2: vLLM serves fp8 weights as e4m3"},
		{adviseArgs("--weight-dtype", "fp7"), "--weight-dtype"},
		{adviseArgs("extra"), "extra"},
		{[]string{"advise", "merge"}, "merge needs the shard files"},
	} {
		code, out, errs := run(t, "", c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || !strings.Contains(errs, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", c.args[len(c.args)-2:], code, out, errs, c.want)
		}
	}
	// A trace that does not parse is not a usage error: exit 1 naming the file and line.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-01-01 00:00:00.0,12,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "advise", "--trace", bad, "--model", "llama-3.1-8b", "--gpu", "a100-80g")
	if code != 1 || !strings.Contains(errs, "bad.csv") || !strings.Contains(errs, "line 2") {
		t.Errorf("bad trace: exit %d: %s", code, errs)
	}
}

func TestAdviseHelp(t *testing.T) {
	code, out, _ := run(t, "", "advise", "--help")
	if code != 0 || !strings.Contains(out, "gpufrag advise merge") || !strings.Contains(out, "--slo-ttft-p99") {
		t.Errorf("help: exit %d:\n%s", code, out)
	}
}

// A second stage crosses the best setups of the first with every
// utilization and bucket; advice for another model is refused.
func TestAdviseRefine(t *testing.T) {
	skipAdviseSims(t)
	dir := t.TempDir()
	stage1 := filepath.Join(dir, "stage1.json")
	code, out, errs := run(t, "", adviseArgs("--json")...)
	if code != 0 {
		t.Fatal(errs)
	}
	if err := os.WriteFile(stage1, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var first advise.Report
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "", adviseArgs("--refine", stage1, "--refine-top", "2", "--bucket", "256", "--json")...)
	if code != 0 {
		t.Fatalf("refine: exit %d: %s", code, errs)
	}
	var rep advise.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) != 4 || rep.Inputs.RefinedFrom != first.Digest || rep.Recommended == nil {
		t.Fatalf("%d candidates, refined from %q (want 4 from %q)", len(rep.Candidates), rep.Inputs.RefinedFrom, first.Digest)
	}
	for _, c := range rep.Candidates {
		if c.Group != "refine" {
			t.Errorf("candidate %s in group %s", c.Settings, c.Group)
		}
	}
	code, _, errs = run(t, "", "advise", "--trace", adviseTrace, "--model", "llama-3.1-8b", "--gpu", "l40s-48g", "--refine", stage1)
	if code != 1 || !strings.Contains(errs, "llama-2-13b") || !strings.Contains(errs, "stage1.json") {
		t.Errorf("other model: exit %d: %s", code, errs)
	}
	code, _, errs = run(t, "", adviseArgs("--refine", stage1, "--full")...)
	if code != 2 || !strings.Contains(errs, "choose one") {
		t.Errorf("--refine --full: exit %d: %s", code, errs)
	}
}

// TestAdviseDeployCommand: the deploy command sets what the run was
// sized for besides the swept settings (tensor parallelism, context, fp8
// KV cache) and serves the benchmark run's own model id, which agrees
// with --model (it printed `vllm serve meta-llama/Llama-3.1-70B
// --block-size 16 ...`, which does not start a 70B model on one 40 GB GPU).
func TestAdviseDeployCommand(t *testing.T) {
	skipAdviseSims(t)
	code, out, errs := run(t, "", "advise", "--trace", benchFixture("vllm_bench_qps1_cut.json"), "--model", "llama-3.1-70b", "--tp", "8",
		"--gpu", "a100-40g", "--kv-dtype", "fp8", "--max-context", "8192", "--kv", "paged:16", "--alloc", "caching",
		"--gpu-memory-utilization", "0.9", "--bucket", "0", "--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--bisect-steps", "1")
	want := "vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 8 --max-model-len 8192 --kv-cache-dtype fp8 --block-size 16"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, %s\n%s\nwant %s", code, errs, out, want)
	}
	// The run saved no start times: its arrivals are drawn, not recorded.
	if !strings.Contains(out, "(vllm-bench, 6 requests, arrivals drawn at the run's request_rate 1: ") || strings.Contains(out, "as recorded") {
		t.Errorf("header:\n%s", out)
	}
}

// TestAdviseJSONDeploy: --json carries the deploy command the text
// prints (it had none), with the allocator's environment and the notes.
func TestAdviseJSONDeploy(t *testing.T) {
	skipAdviseSims(t)
	args := []string{"advise", "--trace", adviseTrace, "--model", "llama-2-13b", "--gpu", "l40s-48g", "--kv", "paged:16",
		"--alloc", "caching:expandable_segments:True", "--gpu-memory-utilization", "0.9", "--bucket", "256", "--defrag", "off",
		"--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--bisect-steps", "1"}
	rep, out, _ := runAdviceJSON(t, append(args, "--json")...)
	d := rep.Deploy
	if d == nil || !strings.HasPrefix(d.Command, "PYTORCH_ALLOC_CONF=expandable_segments:True vllm serve meta-llama/Llama-2-13b-hf --block-size 16") ||
		d.Env["PYTORCH_ALLOC_CONF"] != "expandable_segments:True" || len(d.Notes) == 0 {
		t.Fatalf("deploy %+v\n%s", d, out)
	}
	code, text, errs := run(t, "", args...)
	_, lines, _ := strings.Cut(text, "To deploy it:\n")
	var want strings.Builder
	for _, l := range d.Lines() {
		want.WriteString("  " + l + "\n")
	}
	if code != 0 || lines != want.String() {
		t.Errorf("exit %d, %s\ntext's deploy lines:\n%s\nJSON's:\n%s", code, errs, lines, want.String())
	}
}

// TestAdviseShortTraceWarning: a rate whose run drains the trace after
// its arrivals end (six requests at tens of req/s, 133 output tokens/s
// where the rate offers thousands) is called out in the text and --json:
// it held only for the trace's length. It was reported as sustainable.
func TestAdviseShortTraceWarning(t *testing.T) {
	skipAdviseSims(t)
	args := []string{"advise", "--trace", benchFixture("vllm_bench_qps1_cut.json"), "--model", "llama-3.1-70b", "--tp", "8",
		"--gpu", "a100-40g", "--kv", "paged:16", "--alloc", "caching", "--gpu-memory-utilization", "0.9", "--bucket", "0",
		"--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--bisect-steps", "1"}
	rep, out, _ := runAdviceJSON(t, append(args, "--json")...)
	b := rep.Recommended
	if b == nil || !b.MeetsSLO || !(b.OfferedTokensPerS > 2*b.OutputTokensPerS) || len(rep.Warnings) != 1 ||
		!strings.Contains(rep.Warnings[0], "the rate holds for the trace's length, not beyond it") || !strings.Contains(rep.Warnings[0], "give a longer trace") {
		t.Fatalf("recommended %+v, warnings %q\n%s", b, rep.Warnings, out)
	}
	code, text, errs := run(t, "", args...)
	if code != 0 || !strings.Contains(text, "Warning: at ") || !strings.Contains(text, "give a longer trace") {
		t.Errorf("exit %d, %s\n%s", code, errs, text)
	}
}

// TestAdviseRejectedWarning: a recommendation that turns most requests
// away as never fitting (--max-context 10 against prompts of hundreds of
// tokens) says so, naming --max-context, instead of advising a rate at
// which 5 of 1,400 requests complete with only a drain warning that asks
// for a longer trace.
func TestAdviseRejectedWarning(t *testing.T) {
	skipAdviseSims(t)
	args := []string{"advise", "--trace", "../../../../examples/azure_conv.csv", "--max-rows", "200", "--model", "llama-3.1-8b",
		"--gpu", "a100-80g", "--kv", "paged:16", "--alloc", "caching", "--gpu-memory-utilization", "0.9", "--bucket", "0",
		"--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--bisect-steps", "1", "--max-context", "10"}
	rep, out, _ := runAdviceJSON(t, append(args, "--json")...)
	b := rep.Recommended
	if b == nil || 2*b.Rejected <= b.Total || len(rep.Warnings) != 1 ||
		!strings.Contains(rep.Warnings[0], fmt.Sprintf("%d of %d requests", b.Rejected, b.Total)) || !strings.Contains(rep.Warnings[0], "--max-context 10 turns away") {
		t.Fatalf("recommended %+v, warnings %q\n%s", b, rep.Warnings, out)
	}
	code, text, errs := run(t, "", args...)
	if code != 0 || !strings.Contains(text, "Warning: ") || !strings.Contains(text, "were turned away") || strings.Contains(text, "give a longer trace") {
		t.Errorf("exit %d, %s\n%s", code, errs, text)
	}
}

// TestAdviseTraceHints: advise's trace errors name what advise takes: --run
// alone, not the scenario field simulate's scenarios have; and a trace
// whose requests all arrive at once says what to give instead, advise
// having no --rate.
func TestAdviseTraceHints(t *testing.T) {
	base := []string{"advise", "--model", "llama-3.1-70b", "--tp", "8", "--gpu", "a100-40g", "--kv", "paged:16", "--alloc", "caching",
		"--gpu-memory-utilization", "0.9", "--bucket", "0", "--max-num-batched-tokens", "8192", "--max-num-seqs", "256"}
	for _, c := range []struct {
		args     []string
		code     int
		want     string
		unwanted string
	}{
		{[]string{"--trace", benchFixture("sglang_bench_online.jsonl")}, 1, "(--run N)", "workload.trace.run"},
		{[]string{"--trace", benchFixture("sglang_bench_online.jsonl"), "--run", "99"}, 1, "(--run N)", "workload.trace.run"},
		{[]string{"--trace", adviseTrace, "--format", "azure", "--run", "2"}, 2, "--run 2: only benchmark result files", "workload.trace.run"},
		{[]string{"--trace", benchFixture("vllm_bench_qpsinf_cut.json")}, 1, "advise has no --rate: give a trace with arrival times", "xx"},
	} {
		code, _, errs := run(t, "", append(base, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Contains(errs, c.unwanted) {
			t.Errorf("%v: exit %d, %s; want exit %d naming %q", c.args, code, errs, c.code, c.want)
		}
	}
}
