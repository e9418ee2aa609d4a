package simreport

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// Title describes what ran, for the HTML title and heading: the report's
// scenario field, which Run.Apply sets to the run's title (the scenario's
// name when it ran as written, else the trace's file name with the model
// and the GPU, or the flags that changed it), completed with what it
// leaves out of model, GPU, tensor-parallel degree and span.
func Title(o *scenario.Report) string {
	t := o.Scenario
	if !strings.Contains(t, " on "+o.GPU) {
		t += fmt.Sprintf(": %s on %s", o.Model, o.GPU)
	}
	if !strings.Contains(t, "(tp ") {
		t += fmt.Sprintf(", TP %d", o.TP)
	}
	span := "to the end of the workload"
	if o.Duration > 0 {
		span = human.Seconds(o.Duration) + " simulated"
	}
	return t + ", " + span
}

// WriteHTML writes the report page (`simulate --html`): a comparison
// table with the recommendation, per run the memory, health and requests
// over time with OOM and preemption markers, and the text report.
func WriteHTML(w io.Writer, o *scenario.Report) error {
	sub := fmt.Sprintf("%s; seed %d", o.Source, o.Seed)
	if o.About != "" {
		sub = o.About + "; " + sub
	}
	page := report.Page{Title: "gpufrag simulate: " + Title(o), Subtitle: sub}
	var sb strings.Builder
	writeTables(&sb, o, 0) // the page is as wide as its reader makes it
	summary := report.Table{Caption: "Results",
		Header: []string{"KV", "allocator", "done", "OOM", "rejected", "preempted", "peak reserved", "frag p99",
			"min health", "token states", "tokens/s", "TTFT p99", "TPOT p99", "ITL p99"},
		NumericCols: []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}}
	for _, r := range o.Results {
		summary.Rows = append(summary.Rows, []string{r.KV, r.Allocator, human.Thousands(r.RequestsCompleted),
			human.Thousands(r.RequestsFailedOOM), human.Thousands(r.RequestsRejected), strconv.FormatInt(r.Preemptions, 10),
			human.Bytes(r.PeakReservedBytes), fmt.Sprintf("%.2f", r.FragRate.P99), fmt.Sprintf("%.2f", r.HealthMin),
			pct(r.KVBreakdown.TokenStates), fmt.Sprintf("%.0f", r.OutputTokensPerS), human.Seconds(r.TTFT.P99), human.Seconds(r.TPOT.P99),
			human.Seconds(r.ITL.P99)})
	}
	text := ""
	if o.Recommended >= 0 {
		text = "Recommended: " + o.Reason + "."
	}
	page.Sections = append(page.Sections, report.Section{Heading: "Comparison", Text: text, Tables: []report.Table{summary}})
	for _, r := range o.Results {
		s := r.Series
		mem := report.LineChart{Title: runName(r) + ": memory", XLabel: "time", YLabel: "bytes",
			XUnit: report.UnitSeconds, YUnit: report.UnitBytes}
		mem.Series = []report.Series{
			{Name: "reserved", X: s.Time, Y: floats(s.Reserved)},
			{Name: "allocated", X: s.Time, Y: floats(s.Allocated)},
			{Name: "requested", X: s.Time, Y: floats(s.Requested)},
			{Name: "KV held", X: s.Time, Y: floats(s.KVHeld)},
		}
		mem.Markers = markers(r.Events)
		health := report.LineChart{Title: runName(r) + ": health (largest free ÷ free)", XLabel: "time", YLabel: "health",
			XUnit: report.UnitSeconds, YUnit: report.UnitRatio,
			Series: []report.Series{{Name: "health", X: s.Time, Y: s.Health}}}
		queue := report.LineChart{Title: runName(r) + ": requests", XLabel: "time", YLabel: "requests",
			XUnit:  report.UnitSeconds,
			Series: []report.Series{{Name: "running", X: s.Time, Y: floats(s.Running)}, {Name: "waiting", X: s.Time, Y: floats(s.Waiting)}}}
		text := fmt.Sprintf("%d completed, %d failed with OOM, %d rejected, %d preemptions, %d activation OOMs. Markers: %s.",
			r.RequestsCompleted, r.RequestsFailedOOM, r.RequestsRejected, r.Preemptions, r.ActivationOOMs, markerLegend(r.Events))
		page.Sections = append(page.Sections, report.Section{Heading: runName(r), Text: text,
			Charts: []report.LineChart{mem, health, queue}})
	}
	page.Sections = append(page.Sections, report.Section{Heading: "Text report", Pre: sb.String()})
	return page.WriteHTML(w)
}

// floats converts a series of counts to a chart's values.
func floats[T int | int64](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// markerBins is how many spans a run's time is cut into for its markers:
// the events of one kind within a span become one marker that counts them,
// so a run with thousands of OOMs draws a few hundred lines at most.
const markerBins = 240

// markers turns a run's events into chart markers: per kind, one marker
// per 1/markerBins (240) of the run's span, at the first event there,
// counting the events it stands for (the chart's labels add them up).
func markers(evs []sim.Event) []report.Marker {
	if len(evs) == 0 {
		return nil
	}
	lo, hi := evs[0].Time, evs[0].Time
	for _, e := range evs {
		lo, hi = min(lo, e.Time), max(hi, e.Time)
	}
	width := (hi - lo) / markerBins
	type key struct {
		kind string
		bin  int
	}
	at := map[key]int{}
	var out []report.Marker
	for _, e := range evs {
		k := key{e.Kind, 0}
		if width > 0 {
			k.bin = min(int((e.Time-lo)/width), markerBins-1)
		}
		if i, ok := at[k]; ok {
			out[i].Count++
			continue
		}
		at[k] = len(out)
		out = append(out, report.Marker{X: e.Time, Label: e.Kind, Count: 1})
	}
	return out
}

// markerLegend counts the events by kind, in order of first appearance
// ("oom ×3, preempt ×1"), "none" for no events.
func markerLegend(evs []sim.Event) string {
	counts := map[string]int{}
	var kinds []string
	for _, e := range evs {
		if counts[e.Kind] == 0 {
			kinds = append(kinds, e.Kind)
		}
		counts[e.Kind]++
	}
	if len(kinds) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
