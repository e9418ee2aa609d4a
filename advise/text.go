// The human-readable report. See doc.go for the overview.

package advise

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/sim"
)

// WriteText writes the report as a table ranked best first, then the
// recommendation (or the best effort and what to change) and the command
// that deploys it. The trace's file and the model's name, which a merged
// shard file supplies, print through untrusted.Printable.
func WriteText(w io.Writer, r *Report) error {
	return WriteTextWidth(w, r, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide: the
// table wraps its columns to fit (human.Table's Width) and a sentence
// longer than width wraps at its spaces, its further lines indented two
// more than its first (human.WrapHang); the deploy command stays on one
// line, to be copied whole. 0 is no limit, the layout of WriteText.
func WriteTextWidth(w io.Writer, r *Report, width int) error {
	var out, sb strings.Builder
	// prose moves what sb holds to out, wrapped to width.
	prose := func() {
		out.WriteString(human.WrapLong(sb.String(), width))
		sb.Reset()
	}
	in := r.Inputs
	arrivals := rps(in.Trace.NativeRPS) + " as recorded"
	switch in.Trace.Arrivals {
	case "assigned":
		arrivals = fmt.Sprintf("arrivals assigned: Poisson at %s, the trace has no times", rps(untimedRate))
	case "drawn":
		arrivals = fmt.Sprintf("arrivals drawn at the run's request_rate %g: %s", in.Trace.RequestRate, rps(in.Trace.NativeRPS))
	}
	fmt.Fprintf(&sb, "trace %s (%s, %d %s, %s), %s on %s, tp %d\n",
		untrusted.Printable(in.Trace.File), untrusted.Printable(in.Trace.Format), in.Trace.Requests, plural(in.Trace.Requests, "request"), arrivals, untrusted.Printable(in.Model), in.GPU, in.TP)
	itl := in.SLO.ITLP99 > 0
	goals := fmt.Sprintf("TTFT p99 ≤ %s and TPOT p99 ≤ %s", secs(in.SLO.TTFTP99), secs(in.SLO.TPOTP99))
	if itl {
		goals = fmt.Sprintf("TTFT p99 ≤ %s, TPOT p99 ≤ %s and ITL p99 ≤ %s", secs(in.SLO.TTFTP99), secs(in.SLO.TPOTP99), secs(in.SLO.ITLP99))
	}
	fmt.Fprintf(&sb, "sustainable: the highest rate with no OOMs, %s (%s; rates within %.1f%%, the search's resolution, tie)\n\n",
		goals, human.Count(int64(len(r.Candidates)), "candidate"), 100*(r.TieTolerance-1))
	order := make([]int, len(r.Candidates))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return r.Candidates[a].Rank - r.Candidates[b].Rank })
	prose()
	// Every column right-aligned and each line indented by the gap: an
	// empty first column (human.Table left-aligns its first).
	table := human.Table{Width: width}
	banded := slices.ContainsFunc(r.Candidates, func(c Result) bool { return c.SustainableBand != nil })
	table.Head = []string{"", "rank", "kv", "allocator", "util", "bucket", "defrag", "tokens", "seqs", "prefix", "req/s"}
	if banded {
		table.Head = append(table.Head, "req/s band")
	}
	table.Head = append(table.Head, "× trace", "OOMs", "preempt", "frag p99", "TTFT p99", "TPOT p99")
	if itl {
		table.Head = append(table.Head, "ITL p99")
	}
	table.Head = append(table.Head, "changes")
	anyExp, anyLimit := false, false
	for _, i := range order {
		c := r.Candidates[i]
		s := c.Settings
		rank := fmt.Sprint(c.Rank)
		if !c.Eligible {
			rank = "-"
		}
		kv := s.KV.String()
		if c.Experimental {
			kv += "*"
			anyExp = true
		}
		rate := fmt.Sprintf("%.3g", c.SustainableRPS)
		if upperLimit(&c) {
			rate, anyLimit = "≥ "+rate, true
		}
		row := []string{"", rank, kv, fmt.Sprint(s.Alloc), fmtShare(s.GPUMemoryUtilization), fmt.Sprint(s.Bucket), fmt.Sprint(s.Defrag),
			orDefault(s.MaxBatchTokens), orDefault(s.MaxSeqs), orOn(s.PrefixCaching), rate}
		if banded {
			row = append(row, rateBand(c.SustainableBand))
		}
		row = append(row, fmt.Sprintf("%.3g", c.Multiplier), fmt.Sprint(c.OOMs+int(c.ActivationOOMs)), fmt.Sprint(c.Preemptions),
			fmt.Sprintf("%.3f", c.FragRate.P99), secs(c.TTFTP99), secs(c.TPOTP99))
		if itl {
			row = append(row, secs(c.ITLP99))
		}
		table.Rows = append(table.Rows, append(row, fmt.Sprint(len(c.Changes))))
	}
	table.Write(&out)
	sb.WriteString("\nrank -: not eligible (no rate tried held, it cannot run, it rejects more requests than the best, or it is not deployable)\n")
	sb.WriteString("figures are at each candidate's sustainable rate (at the lowest rate tried when none held); changes: settings that differ from the engine's defaults\n")
	if anyLimit {
		sb.WriteString("≥: held at every rate tried, the search's upper limit (a higher --start-rate or more --bracket-steps search further)\n")
	}
	if anyExp {
		sb.WriteString("*: experimental, a research setup no stock engine offers (--experimental)\n")
	}
	if banded {
		writeBands(&sb, r.Candidates, itl)
	}
	sb.WriteString("\n")
	b := r.Recommended
	if b == nil {
		fmt.Fprintf(&sb, "No recommendation: %s.\n", r.Reason)
		for _, i := range order {
			fmt.Fprintf(&sb, "  %s: %s\n", r.Candidates[i].Settings, r.Candidates[i].Evidence)
		}
		prose()
		_, err := io.WriteString(w, out.String())
		return err
	}
	if !b.MeetsSLO {
		fmt.Fprintf(&sb, "No setting tried meets the SLO. Best effort: %s (%s).\n", b.Settings, changesText(b.Changes))
		fmt.Fprintf(&sb, "%s.\n", r.Advice)
	} else {
		fmt.Fprintf(&sb, "Recommended: %s (%s, %s)", b.Settings, rateOf(b), changesText(b.Changes))
		if r.RunnerUp != nil {
			fmt.Fprintf(&sb, ", runner-up: %s (%s)", r.RunnerUp.Settings, rateOf(r.RunnerUp))
		}
		fmt.Fprintf(&sb, ", because %s.\n", r.Reason)
		fmt.Fprintf(&sb, "At %s: %d of %d requests completed, %d preemptions, frag p50/p99 %.3f/%.3f, health min %.3f, peak reserved %s, %.0f output tokens/s.\n",
			rps(b.SustainableRPS), b.Completed, b.Total, b.Preemptions, b.FragRate.P50, b.FragRate.P99, b.HealthMin,
			mem.FormatBytes(b.PeakReservedBytes), b.OutputTokensPerS)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&sb, "Warning: %s.\n", w)
	}
	if b.Experimental {
		fmt.Fprintf(&sb, "Experimental: %s.\n", strings.Join(b.Settings.Research(), "; "))
	}
	if r.BandNote != "" {
		fmt.Fprintf(&sb, "%s.\n", r.BandNote)
	}
	sb.WriteString("\nTo deploy it:\n")
	prose()
	for _, line := range NewDeploy(b.Settings, in).Lines() {
		fmt.Fprintf(&out, "  %s\n", line)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// rateBand writes a sustainable rate's band, "-" for none.
func rateBand(b *sim.Band) string {
	switch {
	case b == nil:
		return "-"
	case b.ErrLow <= -1:
		return fmt.Sprintf("≥ %.3g", b.Lower)
	}
	return fmt.Sprintf("%.3g–%.3g", b.Lower, b.Upper)
}

// writeBands says how far the candidates' bands reach and which held-out
// figures they come from, per metric and basis (candidates at different
// loads draw on different figures).
func writeBands(sb *strings.Builder, cs []Result, itl bool) {
	q := 0.0
	for _, c := range cs {
		if c.SustainableBand != nil {
			q = c.SustainableBand.Quantile
		}
	}
	fmt.Fprintf(sb, "req/s band: where the engine's sustainable rate should fall, %.0f%% of the time, by the held-out errors of the step model\n", 100*q)
	sb.WriteString("  (docs/calibrate.md, \"Error bands\"); the bands of each candidate's figures are in --json:\n")
	metrics := []struct {
		name string
		band func(Result) *sim.Band
	}{
		{"req/s", func(c Result) *sim.Band { return c.SustainableBand }},
		{"TTFT p99", func(c Result) *sim.Band { return c.TTFTP99Band }},
		{"TPOT p99", func(c Result) *sim.Band { return c.TPOTP99Band }},
	}
	if itl {
		metrics = append(metrics, struct {
			name string
			band func(Result) *sim.Band
		}{"ITL p99", func(c Result) *sim.Band { return c.ITLP99Band }})
	}
	for _, m := range metrics {
		var bases []string
		n := map[string]int{}
		rel := map[string]string{}
		for _, c := range cs {
			b := m.band(c)
			if b == nil {
				continue
			}
			if n[b.Basis] == 0 {
				bases = append(bases, b.Basis)
				rel[b.Basis] = fmt.Sprintf("%+.0f%% to %+.0f%%", 100*b.RelLower, 100*b.RelUpper)
				if b.ErrLow <= -1 {
					rel[b.Basis] = fmt.Sprintf("%+.0f%% or more", 100*b.RelLower)
				}
			}
			n[b.Basis]++
		}
		for _, basis := range bases {
			who := m.name
			if len(bases) > 1 {
				who += fmt.Sprintf(" (%d %s)", n[basis], plural(n[basis], "candidate"))
			}
			fmt.Fprintf(sb, "  %s: %s, from %s\n", who, rel[basis], basis)
		}
	}
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// orDefault writes a limit, "-" for the base config's (0).
func orDefault(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// orOn writes prefix caching, "" being on.
func orOn(p string) string {
	if p == "" {
		return "on"
	}
	return p
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
