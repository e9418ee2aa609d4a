package calib

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
)

// TestFitReportWriteText prints a report built by hand and checks each
// decision of the text: the files' settings, "kept"/"moved"/a standard
// error per parameter with the reasons, the cap's status, a run's heading
// (run N of M, the client, warm prompts), the metric marks with the
// numbered note of an excluded metric, the summaries and the output line;
// names from the files go through untrusted.Printable.
func TestFitReportWriteText(t *testing.T) {
	r := handReport()
	var sb strings.Builder
	if err := r.WriteText(&sb, "out.yaml"); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"Calibrated llama-3.1-8b on h100-80g (tp 2) under vllm-v1, from the embedded\nprofile. Replayed with bf16 weights,",
		"From the files: --tp 2 (a.json states tensor_parallel_size 2).",
		"overhead.step_s          0.003  0.0042    12%\n",
		"overhead.host                1     1.5  moved\n",
		"linear.compute_eff_max     0.6     0.6   kept\n",
		"Not fitted:\n  overhead.host: scaled with the host\n  linear.compute_eff_max: moves no metric\n",
		"stopped at the cap of 30 evaluations (--max-evals)",
		"a.json@sha256:0123\\x1b run 2 of 3 (fitted to; request rate 4, max concurrency 8,\n100 requests, prompts in the prefix cache)\n",
		"50 ms", "1234 tok/s", "-2.0%", "fitted\n", "judged\n", "[1]\n",
		"  [1] stream chunks of several tokens\n  Prompts: run 1 sent the same prompts.\n",
		"before median 20.0%, max 30.0%;\nafter median 2.0%, max 5.0%.",
		"Held out, over 2 metrics: before median 10.0%",
		"Wrote the fitted profile to out.yaml (fitted_to: a.json@sha256:0123).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a control character from the files reached the report")
	}
	sb.Reset()
	r.Holdout, r.Fit.StoppedAtCap, r.Fit.Status = nil, false, "GradientThreshold"
	if err := r.WriteText(&sb, ""); err != nil {
		t.Fatal(err)
	}
	out = sb.String()
	if !strings.Contains(out, "GradientThreshold; sum of squared") || strings.Contains(out, "Held out") ||
		!strings.HasSuffix(out, "The fitted profile was not written (give -o FILE).\n") {
		t.Errorf("report without holdout and output:\n%s", out)
	}
}

// TestFitReportWriteTextWidth: on a terminal of 80 columns the report's
// tables (the metrics', 86 columns and more with calibrate's figures) fit,
// stacked, with every name and figure, no empty line inside a table (a
// metric with no mark ends its row with an empty cell), and the load's
// sentence wraps; with no limit, or one the tables fit, the text is
// WriteText's byte for byte.
func TestFitReportWriteTextWidth(t *testing.T) {
	r := handReport()
	v := func(x float64) *float64 { return &x }
	r.Load.Why = "one load, light: the start's replay holds 3.7 sequences a step on average (at most 4), too few to tell what grows with the batch from a step's fixed cost"
	r.Runs[0].Metrics = append(r.Runs[0].Metrics, MetricReport{Metric: OutputThroughput, Measured: v(208.2), Before: v(189.2), After: v(173.6),
		BeforeErr: v(-0.091), AfterErr: v(-0.166), Noise: 0.191})
	text := func(width int) string {
		var sb strings.Builder
		if err := r.WriteTextWidth(&sb, "", width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var plain strings.Builder
	if err := r.WriteText(&plain, ""); err != nil {
		t.Fatal(err)
	}
	full := plain.String()
	if n, line := testkit.WidestLine(full); n <= 80 {
		t.Fatalf("the full-width report is %d columns (%q): the test needs one wider than 80", n, line)
	}
	for _, width := range []int{0, 200} {
		if got := text(width); got != full {
			t.Errorf("width %d:\n%s\nwant WriteText's:\n%s", width, got, full)
		}
	}
	got := text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns a line is %d: %q\n%s", n, line, got)
	}
	if fields := strings.Fields(got); len(fields) != len(strings.Fields(full)) {
		t.Errorf("on 80 columns %d words, the full-width report %d:\n%s", len(fields), len(strings.Fields(full)), got)
	}
	_, table, _ := strings.Cut(got, "prompts in the prefix cache)\n")
	table, _, _ = strings.Cut(table, "\n  [1] ")
	if strings.Contains(table, "\n\n") || !strings.Contains(table, "\noutput_throughput\n") {
		t.Errorf("on 80 columns the metrics' table:\n%s", table)
	}
}

// handReport is a calibration report built by hand (TestFitReportWriteText).
func handReport() *FitReport {
	v := func(x float64) *float64 { return &x }
	return &FitReport{Model: "llama-3.1-8b", GPU: "h100-80g", TP: 2, Engine: "vllm-v1", Start: "the embedded profile",
		Setup: SetupReport{WeightDType: "bf16", KVDType: "default", MaxContext: 8192, MaxBatchTokens: 8192, MaxSeqs: 256,
			FromFiles: []Stated{{Flag: "tp", Value: "2", Where: "a.json", Said: "tensor_parallel_size 2"}}},
		FittedTo: []string{"a.json@sha256:0123"},
		Params: []ParamReport{
			{Name: "overhead.step_s", Before: 0.003, After: 0.0042, Fitted: true, StdErr: 0.12},
			{Name: "overhead.host", Before: 1, After: 1.5, Reason: "scaled with the host"},
			{Name: "linear.compute_eff_max", Before: 0.6, After: 0.6, Reason: "moves no metric"},
		},
		Fit: FitStats{Method: "nelder-mead", Evaluations: 30, MaxEvaluations: 30, StoppedAtCap: true, Residuals: 4,
			ObjectiveBefore: 2.5, ObjectiveAfter: 0.25},
		Runs: []RunReport{{ID: "a.json@sha256:0123\x1b", Run: 2, Runs: 3, RequestRate: "4", MaxConcurrency: 8, Requests: 100,
			WarmPrompts: true, WarmReason: "run 1 sent the same prompts",
			Metrics: []MetricReport{
				{Metric: MedianTTFT, Measured: v(0.05), Before: v(0.04), After: v(0.049), BeforeErr: v(-0.2), AfterErr: v(-0.02), Noise: 0.03, Fitted: true},
				{Metric: OutputThroughput, Measured: v(1234), Before: v(1000), After: v(1200), BeforeErr: v(-0.19), AfterErr: v(-0.028), Judged: true},
				{Metric: MedianITL, Measured: v(0.01), Excluded: "stream chunks of several tokens"},
			}}},
		Errors:  ErrorSummary{Metrics: 4, BeforeMedian: 0.2, BeforeMax: 0.3, AfterMedian: 0.02, AfterMax: 0.05},
		Holdout: &ErrorSummary{Metrics: 2, BeforeMedian: 0.1, BeforeMax: 0.2, AfterMedian: 0.05, AfterMax: 0.08},
	}
}

// TestOpsFitWriteText prints an operator-timing fit: the terms before and
// after, a row per point, the summary, and the output line when written.
func TestOpsFitWriteText(t *testing.T) {
	start := h200(t)
	truth := start.Clone()
	truth.Linear.ComputeEffMax = 0.71
	ops := syntheticOps(t, truth)
	f, err := FitOps(ops, start)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := f.WriteText(&sb, ops, "the embedded h200-141g vllm-v1 profile", "h200.yaml"); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"Operator timings of llama-3.1-8b on " + f.GPUName + " (torch ",
		"fitted from the embedded h200-141g vllm-v1 profile:\n\n",
		"linear.compute_eff_max", "attention.kv_bw_eff",
		fmt.Sprintf("|error| over the %d points: median ", len(f.Points)),
		fmt.Sprintf("  linear             %2d points: median ", len(ops.Linear)),
		"Wrote the profile to h200.yaml (use it with gpufrag simulate --profile h200.yaml).\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if rows := strings.Count(out, "\nlinear "); rows != len(ops.Linear) {
		t.Errorf("%d linear rows, want %d:\n%s", rows, len(ops.Linear), out)
	}
	sb.Reset()
	if err := f.WriteText(&sb, ops, "x", ""); err != nil || strings.Contains(sb.String(), "Wrote") {
		t.Errorf("no output file, yet: %v\n%s", err, sb.String())
	}
	// A document without "timing" was timed eagerly: the report says so and
	// warns; one replayed as CUDA graphs does neither.
	if !strings.Contains(out, ", timed eagerly)") || !strings.Contains(out, "Warning: every small operator includes Python's launch latency") {
		t.Errorf("an eager document's report lacks its timing or warning:\n%s", out)
	}
	ops.Timing = "cuda-graph"
	sb.Reset()
	if err := f.WriteText(&sb, ops, "x", ""); err != nil || !strings.Contains(sb.String(), ", replayed as CUDA graphs)") || strings.Contains(sb.String(), "Warning") {
		t.Errorf("a graphed document's report: %v\n%s", err, sb.String())
	}
}
