package calib

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// The reports of `gpufrag calibrate` for people; --json prints the same
// values (FitReport, OpsFit) as documents.

// WriteText prints a calibration for people: the setup, the parameters
// before and after with their standard errors and why the others were not
// fitted, the fit's statistics, a table of metrics per run, and the error
// summaries. output is the file the fitted profile was written to ("" for
// none), which the last line names. Names from the files and flags are
// printed through untrusted.Printable.
func (r *FitReport) WriteText(w io.Writer, output string) error {
	return r.WriteTextWidth(w, output, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): the tables are human.Table's with that
// Width (wider, they print stacked, short names beside their figures) and
// the load's sentence wraps at its spaces (human.WrapLong); the other
// sentences wrap at 80 in every layout.
func (r *FitReport) WriteTextWidth(w io.Writer, output string, width int) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n\n", human.Wrap(untrusted.Printable(fmt.Sprintf("Calibrated %s on %s (tp %d) under %s, from %s. Replayed with %s.",
		r.Model, r.GPU, r.TP, r.Engine, r.Start, r.Setup)), 80))
	if len(r.Setup.FromFiles) > 0 {
		var said []string
		for _, st := range r.Setup.FromFiles {
			said = append(said, fmt.Sprintf("--%s %s (%s)", st.Flag, st.Value, st))
		}
		fmt.Fprintf(&sb, "%s\n\n", human.Wrap(untrusted.Printable("From the files: "+strings.Join(said, "; ")+"."), 80))
	}
	r.writeParams(&sb, width)
	fs := r.Fit
	status := fs.Status
	if fs.StoppedAtCap {
		status = fmt.Sprintf("stopped at the cap of %d evaluations (--max-evals): the fit may not have converged", fs.MaxEvaluations)
	}
	fmt.Fprintf(&sb, "\n%s\n", human.Wrap(fmt.Sprintf("Fit: %s over %d metrics, %d evaluations (and %d to measure the parameters' effects), %s; "+
		"sum of squared log errors over their noise %.4g before, %.4g after.",
		fs.Method, fs.Residuals, fs.Evaluations, fs.ProbeEvaluations, status, fs.ObjectiveBefore, fs.ObjectiveAfter), 80))
	if fs.JudgeDraws > 1 {
		fmt.Fprintf(&sb, "%s\n", human.Wrap(fmt.Sprintf("A held-out run whose arrivals or lengths the client drew is judged on the geometric mean of "+
			"%d draws of them (its expected figures, not one draw's); a fitted run on %d, as the fit saw it (--seeds).",
			fs.JudgeDraws, fs.Seeds), 80))
	}
	for _, run := range r.Runs {
		run.writeText(&sb, width)
	}
	e := r.Errors
	fmt.Fprintf(&sb, "\n%s\n", human.Wrap(fmt.Sprintf("|relative error| over the %d fitted metrics: before median %.1f%%, max %.1f%%; after median %.1f%%, max %.1f%%.",
		e.Metrics, 100*e.BeforeMedian, 100*e.BeforeMax, 100*e.AfterMedian, 100*e.AfterMax), 80))
	if h := r.Holdout; h != nil {
		fmt.Fprintf(&sb, "%s\n", human.Wrap(fmt.Sprintf("Held out, over %d metrics: before median %.1f%%, max %.1f%%; after median %.1f%%, max %.1f%%.",
			h.Metrics, 100*h.BeforeMedian, 100*h.BeforeMax, 100*h.AfterMedian, 100*h.AfterMax), 80))
	}
	if output != "" {
		fmt.Fprintf(&sb, "%s\n", human.Wrap(untrusted.Printable(fmt.Sprintf("Wrote the fitted profile to %s (fitted_to: %s).", output, strings.Join(r.FittedTo, ", "))), 80))
	} else {
		sb.WriteString("The fitted profile was not written (give -o FILE).\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeParams prints the parameters' table and why those not fitted were
// not, for a terminal width columns wide (0: no limit).
func (r *FitReport) writeParams(sb *strings.Builder, width int) {
	pt := human.Table{Head: []string{"parameter", "before", "after", "±"}, Width: width}
	var kept []string
	for _, p := range r.Params {
		se := "kept"
		switch {
		case p.Fitted:
			se = fmt.Sprintf("%.0f%%", 100*p.StdErr)
		case p.After != p.Before:
			se = "moved" // with the host's speed (Reason says)
		}
		pt.Rows = append(pt.Rows, []string{p.Name, fmt.Sprintf("%.4g", p.Before), fmt.Sprintf("%.4g", p.After), se})
		if p.Reason != "" {
			kept = append(kept, p.Name+": "+p.Reason)
		}
	}
	pt.Write(sb)
	if r.Load.Why != "" {
		sb.WriteString("\n" + human.WrapLong("Load: "+r.Load.Why+".", width) + "\n")
	}
	sb.WriteString("\n± is a fitted parameter's standard error over the metrics' noise. Fitted:\n")
	for _, p := range r.Params {
		if p.Fitted && p.Because != "" {
			sb.WriteString(human.Indent(human.Wrap(untrusted.Printable(p.Name+" because "+p.Because), 76), "  ") + "\n")
		}
	}
	sb.WriteString("Not fitted:\n")
	for _, k := range kept {
		sb.WriteString(human.Indent(human.Wrap(untrusted.Printable(k), 76), "  ") + "\n")
	}
}

// writeText prints a run: a heading with its role and client, a table of
// its metrics measured, before and after, and the notes on metrics not
// fitted and on its prompts, for a terminal width columns wide (0: no
// limit).
func (run RunReport) writeText(sb *strings.Builder, width int) {
	role := "fitted to"
	if run.Holdout {
		role = "held out"
	}
	head := fmt.Sprintf("%s (%s; request rate %s", run.ID, role, run.RequestRate)
	if run.Runs > 1 {
		head = fmt.Sprintf("%s run %d of %d (%s; request rate %s", run.ID, run.Run, run.Runs, role, run.RequestRate)
	}
	if run.MaxConcurrency > 0 {
		head += fmt.Sprintf(", max concurrency %d", run.MaxConcurrency)
	}
	head += fmt.Sprintf(", %d requests", run.Requests)
	if run.WarmPrompts {
		head += ", prompts in the prefix cache"
	}
	head += ")"
	fmt.Fprintf(sb, "\n%s\n", human.Wrap(untrusted.Printable(head), 80))
	mt := human.Table{Groups: []human.Group{{From: 2, To: 3, Label: "before"}, {From: 4, To: 5, Label: "after"}},
		Head: []string{"metric", "measured", "value", "error", "value", "error", "noise", ""}, Width: width}
	var notes []string
	for _, m := range run.Metrics {
		mark := ""
		switch {
		case m.Fitted:
			mark = "fitted"
		case m.Judged:
			mark = "judged"
		case m.Excluded != "" && run.Excluded == "":
			mark = fmt.Sprintf("[%d]", len(notes)+1)
			notes = append(notes, fmt.Sprintf("[%d] %s", len(notes)+1, m.Excluded))
		}
		noise := "—"
		if m.Before != nil {
			noise = fmt.Sprintf("%.1f%%", 100*m.Noise)
		}
		mt.Rows = append(mt.Rows, []string{m.Metric.String(), metricText(m.Metric, m.Measured),
			metricText(m.Metric, m.Before), relErrText(m.BeforeErr), metricText(m.Metric, m.After), relErrText(m.AfterErr),
			noise, mark})
	}
	mt.Write(sb)
	if run.Excluded != "" {
		notes = append(notes, "Not fitted: "+run.Excluded)
	}
	if run.WarmReason != "" {
		notes = append(notes, "Prompts: "+run.WarmReason+".")
	}
	for _, n := range notes {
		sb.WriteString(human.Indent(human.Wrap(untrusted.Printable(n), 76), "  ") + "\n")
	}
}

// metricText formats a metric: ms for latencies, tok/s for throughput,
// "—" when absent.
func metricText(m Metric, v *float64) string {
	switch {
	case v == nil:
		return "—"
	case m.Latency():
		return fmt.Sprintf("%.4g ms", *v*1e3)
	}
	return fmt.Sprintf("%.4g tok/s", *v)
}

// relErrText formats a relative error as a signed percentage, "—" when
// absent.
func relErrText(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", 100**v)
}

// timingWords says how a document's operators were timed.
func timingWords(mode string) string {
	if mode == "cuda-graph" {
		return "replayed as CUDA graphs"
	}
	return "timed eagerly"
}

// WriteText prints an operator-timing fit for people: the fitted terms
// before and after, every point measured, before and after, and the error
// summary. o is the timings fitted; start names the starting profile;
// output is the file the profile was written to ("" for none).
func (f *OpsFit) WriteText(w io.Writer, o *Ops, start, output string) error {
	var sb strings.Builder
	layer := o.Model.Name
	if o.FP8() {
		layer += " with FP8 weights"
	}
	fmt.Fprintf(&sb, "%s:\n\n", untrusted.Printable(fmt.Sprintf("Operator timings of %s on %s (torch %s, CUDA %s, %s, %s), fitted from %s",
		layer, f.GPUName, o.Torch, o.CUDA, o.Date, timingWords(o.TimingMode()), start)))
	if o.TimingMode() == "eager" {
		sb.WriteString("Warning: every small operator includes Python's launch latency (tens of µs a kernel,\n" +
			"more than a decode GEMM's own time): weight_bw_eff reads low and attention's floors high. A server replays\n" +
			"its decode steps as CUDA graphs; time them so: calib/device/steptime.py without --eager.\n\n")
	}
	t := human.Table{Head: []string{"term", "before", "after"}}
	row := func(name string, v [2]float64, format string) {
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf(format, v[0]), fmt.Sprintf(format, v[1])})
	}
	if f.FP8 {
		row("linear.fp8_compute_eff_max", f.Linear.FP8ComputeEffMax, "%.3f")
	} else {
		row("linear.compute_eff_max", f.Linear.ComputeEffMax, "%.3f")
	}
	row("linear.compute_half_tokens", f.Linear.ComputeHalfTokens, "%.1f")
	row("linear.weight_bw_eff", f.Linear.WeightBWEff, "%.3f")
	row("linear.blend_exponent", f.Linear.BlendExponent, "%.2f")
	row("attention.prefill_compute_eff", f.Attention.PrefillComputeEff, "%.3f")
	row("attention.kv_bw_eff", f.Attention.KVBWEff, "%.3f")
	t.Write(&sb)
	sb.WriteString("\n")
	p := human.Table{Head: []string{"op", "point", "measured ms", "before ms", "error", "after ms", "error"}}
	for _, x := range f.Points {
		p.Rows = append(p.Rows, []string{x.Op, x.What, fmt.Sprintf("%.4g", x.MeasuredMs),
			fmt.Sprintf("%.4g", x.BeforeMs), fmt.Sprintf("%+.1f%%", 100*x.BeforeError),
			fmt.Sprintf("%.4g", x.AfterMs), fmt.Sprintf("%+.1f%%", 100*x.AfterError)})
	}
	p.Write(&sb)
	fmt.Fprintf(&sb, "\n|error| over the %d points: median %.1f%%, max %.1f%% before; median %.1f%%, max %.1f%% after.\n",
		len(f.Points), 100*f.MedianBefore, 100*f.MaxBefore, 100*f.MedianAfter, 100*f.MaxAfter)
	for _, op := range []string{"linear", "prefill_attention", "decode_attention"} {
		var before, after []float64
		for _, x := range f.Points {
			if x.Op == op {
				before, after = append(before, math.Abs(x.BeforeError)), append(after, math.Abs(x.AfterError))
			}
		}
		if len(before) > 0 {
			fmt.Fprintf(&sb, "  %-18s %2d points: median %.1f%%, max %.1f%% before; median %.1f%%, max %.1f%% after.\n",
				op, len(before), 100*stats.Median(before), 100*slices.Max(before), 100*stats.Median(after), 100*slices.Max(after))
		}
	}
	if output != "" {
		fmt.Fprintf(&sb, "Wrote the profile to %s (use it with gpufrag simulate --profile %s).\n", output, output)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
