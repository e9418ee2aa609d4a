package simreport

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// runName names a run in tables and notes: "KV / allocator".
func runName(r sim.Result) string { return r.KV + " / " + r.Allocator }

// WriteText prints the report for people (`gpufrag simulate`): what ran, a
// memory table, a service table, a legend, the error bands, the
// recommendation, then what the tables cannot say: each run's compaction
// (with a defrag policy) and whether its fragmentation matters (frag.Judge
// weighs the ratio by the bytes at stake on a GPU of capacity bytes) and
// why a setup shows it.
func WriteText(w io.Writer, o *scenario.Report, capacity int64) error {
	return WriteTextWidth(w, o, capacity, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide: a table
// wider than that prints stacked (human.Table's Width); 0 is no limit, the
// layout of WriteText.
func WriteTextWidth(w io.Writer, o *scenario.Report, capacity int64, width int) error {
	var sb strings.Builder
	writeTables(&sb, o, width)
	writeNotes(&sb, o, capacity)
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeTables prints what ran, the tables, the legend, the bands and the
// recommendation (the HTML page's text report). The scenario's name and
// description, the model and the workload's source come from files, so
// they print through untrusted.Printable. width is the widest a table's
// line may be, 0 for no limit (human.Table's Width).
func writeTables(sb *strings.Builder, o *scenario.Report, width int) {
	head := o.Scenario
	if o.About != "" {
		head += ": " + o.About
	}
	sb.WriteString(human.Wrap(untrusted.Printable(head), 80) + "\n")
	span := "to the end of the workload"
	if o.Duration > 0 {
		span = "for " + time.Duration(o.Duration*1e9).String()
	}
	fmt.Fprintf(sb, "%s\n\n", human.Wrap(fmt.Sprintf("%s on %s (tp %d); %s; simulated %s; seed %d.",
		untrusted.Printable(o.Model), o.GPU, o.TP, untrusted.Printable(o.Source), span, o.Seed), 80))

	mt := human.Table{
		Groups: []human.Group{{From: 1, To: 1, Label: "reserved"}, {From: 2, To: 4, Label: "fragmentation"}, {From: 6, To: 9, Label: "KV memory"}},
		Head:   []string{"kv / allocator", "peak", "p50", "p99", "max", "min health", "tokens", "reserved", "internal", "external"},
		Width:  width,
	}
	for _, r := range o.Results {
		b := r.KVBreakdown
		mt.Rows = append(mt.Rows, []string{runName(r), human.Bytes(r.PeakReservedBytes),
			fmt.Sprintf("%.2f", r.FragRate.P50), fmt.Sprintf("%.2f", r.FragRate.P99), fmt.Sprintf("%.2f", r.FragRate.Max),
			fmt.Sprintf("%.2f", r.HealthMin), pct(b.TokenStates), pct(b.Reservation), pct(b.Internal), pct(b.External)})
	}
	mt.Write(sb)
	sb.WriteString("\n")
	st := human.Table{
		Groups: []human.Group{{From: 1, To: 4, Label: "requests"}, {From: 8, To: 9, Label: "TTFT"}, {From: 10, To: 11, Label: "TPOT"},
			{From: 12, To: 13, Label: "ITL"}},
		Head: []string{"kv / allocator", "done", "OOM", "rejected", "unfinished", "preempted", "tokens/s", "batch", "p50", "p99", "p50", "p99",
			"p50", "p99"},
		Width: width,
	}
	for _, r := range o.Results {
		st.Rows = append(st.Rows, []string{runName(r), human.Thousands(r.RequestsCompleted), human.Thousands(r.RequestsFailedOOM),
			human.Thousands(r.RequestsRejected), human.Thousands(r.RequestsUnfinished), strconv.FormatInt(r.Preemptions, 10),
			fmt.Sprintf("%.0f", r.OutputTokensPerS), fmt.Sprintf("%.1f", r.BatchSizeMean),
			human.Seconds(r.TTFT.P50), human.Seconds(r.TTFT.P99), human.Seconds(r.TPOT.P50), human.Seconds(r.TPOT.P99),
			human.Seconds(r.ITL.P50), human.Seconds(r.ITL.P99)})
	}
	if b := o.Bench; b != nil {
		// The benchmark file's own figures, beneath the simulated ones.
		secs := func(v *float64) string {
			if v == nil {
				return "-"
			}
			return human.Seconds(*v)
		}
		done, tps := "-", "-"
		if b.Completed != nil {
			done = human.Thousands(*b.Completed)
		}
		if b.OutputTokensPerS != nil {
			tps = fmt.Sprintf("%.0f", *b.OutputTokensPerS)
		}
		label := "measured" // the legend names the file: a long name would widen the whole table
		if b.NotComparable != "" {
			label = "measured, another workload" // the legend says why
		}
		st.Rows = append(st.Rows, []string{label, done, "-", "-", "-", "-", tps, "-",
			secs(b.TTFT.P50), secs(b.TTFT.P99), secs(b.TPOT.P50), secs(b.TPOT.P99), secs(b.ITL.P50), secs(b.ITL.P99)})
	}
	st.Write(sb)
	sb.WriteString(`
fragmentation: 1 − largest free block ÷ free memory in the allocator's segments,
               sampled every simulated second (above 0.5 is worth acting on)
KV memory:     shares of KV memory held for live requests plus the holes between
               them: token states (real KV), reserved for tokens still to come,
               internal (held but never filled), external (free holes)
OOM:           requests failed by an out-of-memory error; preempted: recomputations
TPOT, ITL:     a request's mean time per output token after the first, and each
               gap between two of its tokens (over every gap: a prefill that
               stalls the decodes shows in ITL's p99, TPOT averages it away)
`)
	if b := o.Bench; b != nil {
		sb.WriteString("measured:      " + human.WrapHang("the benchmark file's own figures, as its client computed them ("+
			untrusted.Printable(filepath.Base(b.File))+")", 80, 15) + "\n")
		if b.NotComparable != "" {
			sb.WriteString(human.WrapHang("               (not comparable with this replay: "+untrusted.Printable(b.NotComparable)+")", 80, 16) + "\n")
		}
	}
	writeBands(sb, o, width)
	writeArrivalDraws(sb, o, width)
	if o.Recommended >= 0 {
		fmt.Fprintf(sb, "\n%s\n", human.Wrap("Recommended: "+untrusted.Printable(o.Reason)+".", 80))
	}
}

// writeNotes prints each run's compaction (with --defrag) and, where
// fragmentation is reported, whether it matters and why a setup shows it.
func writeNotes(sb *strings.Builder, o *scenario.Report, capacity int64) {
	var lines []string
	for _, r := range o.Results {
		if d := r.Defrag; d != nil {
			lines = append(lines, human.WrapHang("  "+runName(r)+": "+compactionSummary(r), 80, 6))
		}
	}
	if len(lines) > 0 {
		sb.WriteString("\nCompaction (--defrag " + o.Results[0].Defrag.Policy + "):\n" + strings.Join(lines, "\n") + "\n")
	}
	lines = lines[:0]
	for _, r := range o.Results {
		v, ok := judgeRun(r, capacity)
		if !ok {
			continue
		}
		line := fmt.Sprintf("  %s: %s (%s)", runName(r), v.Label, v.Why)
		if r.KVPoolBytes > 0 && v.Level != frag.LevelHealthy {
			line += fmt.Sprintf("; the KV pool is one %s block, so the free memory the ratio sees is the activation buffers' scratch beside it, not KV memory",
				human.Bytes(r.KVPoolBytes))
		}
		lines = append(lines, human.WrapHang(line, 80, 6))
	}
	if len(lines) > 0 {
		sb.WriteString("\nFragmentation at the lowest health, weighed by the memory at stake:\n" + strings.Join(lines, "\n") + "\n")
	}
}

// judgeRun weighs a run's worst sample (the lowest health) by the free
// memory then outside the largest free block; false when the run has no
// samples.
func judgeRun(r sim.Result, capacity int64) (frag.Verdict, bool) {
	s := r.Series
	worst := -1
	for i, h := range s.Health {
		if worst < 0 || h < s.Health[worst] {
			worst = i
		}
	}
	if worst < 0 || worst >= len(s.Reserved) || worst >= len(s.Allocated) {
		return frag.Verdict{}, false
	}
	ooms := r.RequestsFailedOOM // the table's OOM column
	return frag.Judge(frag.Stake{Health: s.Health[worst], CachedFree: s.Reserved[worst] - s.Allocated[worst],
		Reserved: s.Reserved[worst], Capacity: capacity, OOMs: ooms}), true
}

// compactionSummary says what a run's compaction did: runs, bytes moved,
// pauses, and the OOMs of the same run without compaction.
func compactionSummary(r sim.Result) string {
	d := r.Defrag
	if d.Skipped != "" {
		return "did not run: " + d.Skipped
	}
	s := fmt.Sprintf("%s run%s, %s moved (lower bound %s), %s freed", human.Thousands(d.Runs), human.PluralS(d.Runs),
		human.Bytes(d.BytesMoved), human.Bytes(d.LowerBound), human.Bytes(d.FreedBytes))
	if d.Runs > 0 {
		s += fmt.Sprintf(", pauses p50 %s, p99 %s, max %s, %s in all", human.Seconds(d.Pause.P50), human.Seconds(d.Pause.P99),
			human.Seconds(d.Pause.Max), human.Seconds(d.PauseTotal))
	}
	return s + fmt.Sprintf("; requests failed with OOM: %s with compaction, %s without", human.Thousands(r.RequestsFailedOOM), human.Thousands(d.OOMsWithout))
}
