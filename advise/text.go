// The human-readable report. See doc.go for the overview.

package advise

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpufrag/gpufrag/mem"
)

// WriteText writes the report as a table ranked best first, then the
// recommendation and the settings to deploy it.
func WriteText(w io.Writer, r *Report) error {
	var sb strings.Builder
	in := r.Inputs
	fmt.Fprintf(&sb, "trace %s (%s, %d requests, %.3g rps as recorded), %s on %s, tp %d\n",
		in.Trace.File, in.Trace.Format, in.Trace.Requests, in.Trace.NativeRPS, in.Model, in.GPU, in.TP)
	fmt.Fprintf(&sb, "sustainable: the highest rate with no OOMs, TTFT p99 ≤ %gs and TPOT p99 ≤ %gs (%d candidates)\n\n",
		in.SLO.TTFTP99, in.SLO.TPOTP99, len(r.Candidates))
	order := make([]int, len(r.Candidates))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return r.Candidates[a].Rank - r.Candidates[b].Rank })
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tkv\tallocator\tutil\tbucket\tdefrag\trps\t× trace\tOOMs\tpreempt\tfrag p99\tTTFT p99\tTPOT p99\t")
	for _, i := range order {
		c := r.Candidates[i]
		s := c.Settings
		rank := fmt.Sprint(c.Rank)
		if !c.Eligible {
			rank = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%.3g\t%.3g\t%d\t%d\t%.3f\t%s\t%s\t\n",
			rank, s.KV, s.Alloc, fmtShare(s.GPUMemoryUtilization), s.Bucket, s.Defrag,
			c.SustainableRPS, c.Multiplier, c.OOMs+int(c.ActivationOOMs), c.Preemptions, c.FragRate.P99, secs(c.TTFTP99), secs(c.TPOTP99))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sb.WriteString("\nrank -: not eligible (no rate tried held, it cannot run, it rejects more requests than the best, or it is not deployable)\n")
	sb.WriteString("figures are at each candidate's sustainable rate (at the lowest rate tried when none held)\n\n")
	if r.Recommended == nil {
		fmt.Fprintf(&sb, "No recommendation: %s.\n", r.Reason)
		for _, i := range order {
			fmt.Fprintf(&sb, "  %s: %s\n", r.Candidates[i].Settings, r.Candidates[i].Evidence)
		}
		_, err := io.WriteString(w, sb.String())
		return err
	}
	b := r.Recommended
	fmt.Fprintf(&sb, "Recommended: %s (%.3g rps)", b.Settings, b.SustainableRPS)
	if r.RunnerUp != nil {
		fmt.Fprintf(&sb, ", runner-up: %s (%.3g rps)", r.RunnerUp.Settings, r.RunnerUp.SustainableRPS)
	}
	fmt.Fprintf(&sb, ", because %s.\n", r.Reason)
	fmt.Fprintf(&sb, "At %.3g rps: %d of %d requests completed, %d preemptions, frag p50/p99 %.3f/%.3f, health min %.3f, peak reserved %s, %.0f output tokens/s.\n",
		b.SustainableRPS, b.Completed, b.Total, b.Preemptions, b.FragRate.P50, b.FragRate.P99, b.HealthMin,
		mem.FormatBytes(b.PeakReservedBytes), b.OutputTokensPerS)
	flags, env, notes := b.Settings.EngineFlags()
	sb.WriteString("\nTo deploy it:\n")
	fmt.Fprintf(&sb, "  vllm serve %s %s\n", in.Model, strings.Join(flags, " "))
	if env != "" {
		fmt.Fprintf(&sb, "  PYTORCH_CUDA_ALLOC_CONF=%s\n", env)
	} else {
		sb.WriteString("  PYTORCH_CUDA_ALLOC_CONF unset (PyTorch's defaults)\n")
	}
	for _, n := range notes {
		fmt.Fprintf(&sb, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// secs formats seconds with a unit that keeps three significant digits.
func secs(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 1:
		return fmt.Sprintf("%.3gms", s*1000)
	default:
		return fmt.Sprintf("%.3gs", s)
	}
}
