package cli

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

func modelGPUNames() []string { return model.GPUNames() }

func numCPU() int { return runtime.NumCPU() }

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func runName(r sim.Result) string { return r.KV + " / " + r.Allocator }

// writeSimulateReport prints simulate results for people: what ran, a
// memory table, a service table, a legend and the recommendation. The
// scenario's name and description, the model and the workload's source
// come from files, so they print through loc.Printable.
func writeSimulateReport(sb *strings.Builder, o *scenario.Report) {
	head := o.Scenario
	if o.About != "" {
		head += ": " + o.About
	}
	sb.WriteString(human.Wrap(loc.Printable(head), 80) + "\n")
	span := "to the end of the workload"
	if o.Duration > 0 {
		span = "for " + time.Duration(o.Duration*1e9).String()
	}
	fmt.Fprintf(sb, "%s\n\n", human.Wrap(fmt.Sprintf("%s on %s (tp %d); %s; simulated %s; seed %d.",
		loc.Printable(o.Model), o.GPU, o.TP, loc.Printable(o.Source), span, o.Seed), 80))

	mt := human.Table{
		Groups: []human.Group{{From: 1, To: 1, Label: "reserved"}, {From: 2, To: 4, Label: "fragmentation"}, {From: 6, To: 9, Label: "KV memory"}},
		Head:   []string{"kv / allocator", "peak", "p50", "p99", "max", "min health", "tokens", "reserved", "internal", "external"},
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
		Groups: []human.Group{{From: 1, To: 4, Label: "requests"}, {From: 8, To: 9, Label: "TTFT"}, {From: 10, To: 11, Label: "TPOT"}},
		Head:   []string{"kv / allocator", "done", "OOM", "rejected", "unfinished", "preempted", "tokens/s", "batch", "p50", "p99", "p50", "p99"},
	}
	for _, r := range o.Results {
		st.Rows = append(st.Rows, []string{runName(r), human.Thousands(r.RequestsCompleted), human.Thousands(r.RequestsFailedOOM),
			human.Thousands(r.RequestsRejected), human.Thousands(r.RequestsUnfinished), strconv.FormatInt(r.Preemptions, 10),
			fmt.Sprintf("%.0f", r.OutputTokensPerS), fmt.Sprintf("%.1f", r.BatchSizeMean),
			human.Seconds(r.TTFT.P50), human.Seconds(r.TTFT.P99), human.Seconds(r.TPOT.P50), human.Seconds(r.TPOT.P99)})
	}
	st.Write(sb)
	sb.WriteString(`
fragmentation: 1 − largest free block ÷ free memory in the allocator's segments,
               sampled every simulated second (above 0.5 is worth acting on)
KV memory:     shares of KV memory held for live requests plus the holes between
               them: token states (real KV), reserved for tokens still to come,
               internal (held but never filled), external (free holes)
OOM:           requests failed by an out-of-memory error; preempted: recomputations
`)
	writeSimulateBands(sb, o)
	if o.Recommended >= 0 {
		fmt.Fprintf(sb, "\n%s\n", human.Wrap("Recommended: "+loc.Printable(o.Reason)+".", 80))
	}
}

// simulateRunTitle describes what ran, for the HTML title and heading:
// the report's scenario field, which applyRun sets to the run's title (the
// scenario's name when it ran as written, else the trace's file name with
// the model and the GPU, or the flags that changed it), completed with
// what it leaves out of model, GPU, tensor-parallel degree and span.
func simulateRunTitle(o *scenario.Report) string {
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

// writeSimulateHTML writes the report page: the tables and, per run, the
// memory and health over time with OOM and preemption markers.
func writeSimulateHTML(path string, o *scenario.Report) error {
	sub := fmt.Sprintf("%s; seed %d", o.Source, o.Seed)
	if o.About != "" {
		sub = o.About + "; " + sub
	}
	page := report.Page{Title: "gpufrag simulate: " + simulateRunTitle(o), Subtitle: sub}
	var sb strings.Builder
	writeSimulateReport(&sb, o)
	summary := report.Table{Caption: "Results",
		Header: []string{"KV", "allocator", "done", "OOM", "rejected", "preempted", "peak reserved", "frag p99",
			"min health", "token states", "tokens/s", "TTFT p99", "TPOT p99"},
		NumericCols: []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	for _, r := range o.Results {
		summary.Rows = append(summary.Rows, []string{r.KV, r.Allocator, human.Thousands(r.RequestsCompleted),
			human.Thousands(r.RequestsFailedOOM), human.Thousands(r.RequestsRejected), strconv.FormatInt(r.Preemptions, 10),
			human.Bytes(r.PeakReservedBytes), fmt.Sprintf("%.2f", r.FragRate.P99), fmt.Sprintf("%.2f", r.HealthMin),
			pct(r.KVBreakdown.TokenStates), fmt.Sprintf("%.0f", r.OutputTokensPerS), human.Seconds(r.TTFT.P99), human.Seconds(r.TPOT.P99)})
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
			{Name: "reserved", X: s.Time, Y: ints(s.Reserved)},
			{Name: "allocated", X: s.Time, Y: ints(s.Allocated)},
			{Name: "requested", X: s.Time, Y: ints(s.Requested)},
			{Name: "KV held", X: s.Time, Y: ints(s.KVHeld)},
		}
		mem.Markers = markers(r.Events)
		health := report.LineChart{Title: runName(r) + ": health (largest free ÷ free)", XLabel: "time", YLabel: "health",
			XUnit: report.UnitSeconds, YUnit: report.UnitRatio,
			Series: []report.Series{{Name: "health", X: s.Time, Y: s.Health}}}
		queue := report.LineChart{Title: runName(r) + ": requests", XLabel: "time", YLabel: "requests",
			XUnit:  report.UnitSeconds,
			Series: []report.Series{{Name: "running", X: s.Time, Y: intsN(s.Running)}, {Name: "waiting", X: s.Time, Y: intsN(s.Waiting)}}}
		text := fmt.Sprintf("%d completed, %d failed with OOM, %d rejected, %d preemptions, %d activation OOMs. Markers: %s.",
			r.RequestsCompleted, r.RequestsFailedOOM, r.RequestsRejected, r.Preemptions, r.ActivationOOMs, markerLegend(r.Events))
		page.Sections = append(page.Sections, report.Section{Heading: runName(r), Text: text,
			Charts: []report.LineChart{mem, health, queue}})
	}
	page.Sections = append(page.Sections, report.Section{Heading: "Text report", Pre: sb.String()})
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := page.WriteHTML(fh); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}

func ints(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func intsN(xs []int) []float64 {
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

// markers turns events into chart markers: per kind, one marker per
// 1/markerBins of the run's span, at the first event there, counting the
// events it stands for (the chart's labels add them up).
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
