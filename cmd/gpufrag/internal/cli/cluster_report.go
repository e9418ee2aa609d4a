package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/internal/human"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/report"
)

func clusterPct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

// writeClusterReport prints the comparison for people.
func writeClusterReport(sb *strings.Builder, f clusterFlags, nodes []cluster.Node, pods []cluster.Pod, seeds []uint64,
	sums []protocol.Summary, out protocol.Comparison) {
	fmt.Fprintf(sb, "%s\n\n", human.Wrap(fmt.Sprintf(
		"Placed %s with %d polic%s on %s nodes with %s GPUs (%s), %d seed%s (%s), pods inflated or trimmed to %.0f%% of GPU capacity, no departures.",
		human.Thousands(len(pods))+" pods of "+f.pods, len(sums), map[bool]string{true: "y", false: "ies"}[len(sums) == 1],
		human.Thousands(len(nodes)), human.Thousands(out.GPUs), f.nodes, len(seeds), human.PluralS(len(seeds)), f.seeds, 100*f.ratio), 80))
	t := human.Table{
		Groups: []human.Group{{From: 1, To: 3, Label: "at 100% arrived demand"}, {From: 4, To: 6, Label: "frag/total at arrived"}},
		Head:   []string{"policy", "allocated", "unallocated GPUs", "share", "60%", "80%", "90%", "whole-free nodes", "failed pods", "first failure"},
	}
	for i, s := range sums {
		r := out.Results[i]
		t.Rows = append(t.Rows, []string{
			s.Policy,
			fmt.Sprintf("%s ±%.2f", clusterPct(r.AllocRatioAt100.Mean), 100*r.AllocRatioAt100.Std),
			fmt.Sprintf("%.0f ±%.0f", r.UnallocatedGPUsAt100.Mean, r.UnallocatedGPUsAt100.Std),
			clusterPct(r.UnallocatedShareAt100.Mean),
			fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["60"]), fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["80"]), fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["90"]),
			fmt.Sprintf("%.1f", r.WholeFreeNodesAt100),
			fmt.Sprintf("%.0f", s.Failed.Mean),
			firstFailure(s),
		})
	}
	t.Write(sb)
	sb.WriteString("\nallocated: GPU milli allocated ÷ capacity, mean ±std over seeds (percentage points)\n" +
		"frag/total: FGD fragmentation (idle GPU capacity the popular task types cannot use) ÷ capacity\n" +
		"failed pods: over the whole run (to " + fmt.Sprintf("%.0f%%", 100*f.ratio) + " arrived), mean over seeds\n" +
		"first failure: arrived demand when the first pod fit nowhere, and the GPU share then idle\n")
	best := 0
	for i := range out.Results {
		if out.Results[i].UnallocatedGPUsAt100.Mean < out.Results[best].UnallocatedGPUsAt100.Mean {
			best = i
		}
	}
	if len(sums) > 1 {
		fmt.Fprintf(sb, "fewest unallocated GPUs at 100%%: %s (%.0f GPUs)\n", sums[best].Policy, out.Results[best].UnallocatedGPUsAt100.Mean)
	}
}

// clusterCharts returns the curves: allocation, FGD fragmentation (total
// and rate), whole-free nodes, each against arrived demand.
func clusterCharts(sums []protocol.Summary) []report.LineChart {
	type metric struct {
		file, title, ylabel string
		unit                report.Unit
		get                 func(protocol.StatPoint) float64
	}
	metrics := []metric{
		{"alloc", "GPU allocation ratio", "allocated / capacity", report.UnitShare, func(p protocol.StatPoint) float64 { return p.AllocRatio.Mean }},
		{"frag-total", "FGD fragmentation / total GPU capacity", "fragment / capacity", report.UnitShare, func(p protocol.StatPoint) float64 { return p.FragTotal.Mean }},
		{"frag-rate", "FGD fragmentation rate (of idle GPU capacity)", "fragment / idle", report.UnitShare, func(p protocol.StatPoint) float64 { return p.FragRate.Mean }},
		{"whole-free", "Nodes with every GPU free", "nodes", report.UnitNone, func(p protocol.StatPoint) float64 { return p.WholeFreeNodes.Mean }},
	}
	var charts []report.LineChart
	for _, m := range metrics {
		c := report.LineChart{Title: m.title, XLabel: "arrived GPU demand / capacity", YLabel: m.ylabel, XUnit: report.UnitShare, YUnit: m.unit}
		for _, s := range sums {
			se := report.Series{Name: s.Policy}
			for _, p := range s.Curve {
				se.X = append(se.X, float64(p.Arrived)/100)
				y := math.NaN()
				if p.Seeds > 0 {
					y = m.get(p)
				}
				se.Y = append(se.Y, y)
			}
			c.Series = append(c.Series, se)
		}
		charts = append(charts, c)
	}
	return charts
}

var clusterChartFiles = []string{"alloc", "frag-total", "frag-rate", "whole-free"}

func writeClusterPNGs(dir string, sums []protocol.Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, c := range clusterCharts(sums) {
		if err := writeClusterFile(filepath.Join(dir, "cluster-"+clusterChartFiles[i]+".png"), func(w io.Writer) error { return c.PNGScaled(w, 2) }); err != nil {
			return err
		}
	}
	return nil
}

func writeClusterHTML(path string, f clusterFlags, nodes []cluster.Node, pods []cluster.Pod, seeds []uint64, sums []protocol.Summary) error {
	out := protocol.NewComparison(nodes, sums)
	var sb strings.Builder
	writeClusterReport(&sb, f, nodes, pods, seeds, sums, out)
	tab := report.Table{Caption: "At 100% arrived GPU demand (mean over seeds)",
		Header:      []string{"policy", "allocated", "std (pp)", "unallocated GPUs", "frag/total 60%", "80%", "90%", "whole-free nodes"},
		NumericCols: []int{1, 2, 3, 4, 5, 6, 7}}
	for _, r := range out.Results {
		tab.Rows = append(tab.Rows, []string{r.Policy, clusterPct(r.AllocRatioAt100.Mean), fmt.Sprintf("%.2f", 100*r.AllocRatioAt100.Std),
			fmt.Sprintf("%.0f", r.UnallocatedGPUsAt100.Mean), clusterPct(r.FragTotalAt["60"]), clusterPct(r.FragTotalAt["80"]), clusterPct(r.FragTotalAt["90"]),
			fmt.Sprintf("%.1f", r.WholeFreeNodesAt100)})
	}
	var policies []string
	for _, s := range sums {
		policies = append(policies, s.Policy)
	}
	page := report.Page{
		Title: fmt.Sprintf("gpufrag cluster simulate: %s on %s (%s nodes, %s GPUs), %s, %d seed%s",
			filepath.Base(f.pods), filepath.Base(f.nodes), human.Thousands(len(nodes)), human.Thousands(out.GPUs),
			strings.Join(policies, ", "), len(seeds), human.PluralS(len(seeds))),
		Subtitle: fmt.Sprintf("%s pods of %s on the nodes of %s; seeds %s", human.Thousands(len(pods)), f.pods, f.nodes, f.seeds),
		Sections: []report.Section{
			{Heading: "Comparison", Tables: []report.Table{tab}, Pre: sb.String()},
			{Heading: "Curves against arrived GPU demand", Text: "Means over the seeds at every percent of arrived GPU demand (the FGD paper's Figs. 7 and 9).", Charts: clusterCharts(sums)},
		},
	}
	return writeClusterFile(path, page.WriteHTML)
}

// writeClusterFile creates path and writes it with fn, reporting close errors.
func writeClusterFile(path string, fn func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(file); err != nil {
		file.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return file.Close()
}

// writeClusterTimed prints the comparison of a --timed grid.
func writeClusterTimed(w io.Writer, f clusterFlags, nodes []cluster.Node, seeds []uint64, out protocol.TimedComparison) error {
	if f.json {
		return writeJSON(w, out, true)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n\n", human.Wrap(fmt.Sprintf("Replayed the pods of %s by creation and deletion time on %s nodes with %s GPUs (%s), %d seed%s.",
		f.pods, human.Thousands(len(nodes)), human.Thousands(out.GPUs), f.nodes, len(seeds), human.PluralS(len(seeds))), 80))
	t := human.Table{Head: []string{"policy", "mean allocated", "peak allocated", "mean frag/total", "failed pods"}}
	for _, r := range out.Results {
		t.Rows = append(t.Rows, []string{r.Policy, clusterPct(r.MeanAllocRatio.Mean), clusterPct(r.PeakAllocRatio.Mean),
			clusterPct(r.MeanFragTotal.Mean), fmt.Sprintf("%.1f", r.FailedPods.Mean)})
	}
	t.Write(&sb)
	sb.WriteString("\nmean: weighted by how long each state held, from the first to the last event\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// firstFailure formats when the first pod failed, "none" when none did.
func firstFailure(s protocol.Summary) string {
	if s.FirstFailures == 0 {
		return "none"
	}
	out := fmt.Sprintf("%.1f%% (%.1f%% idle)", 100*s.FirstFailureArrived.Mean, 100*s.FirstFailureUnallocated.Mean)
	if s.FirstFailures < s.Seeds {
		out += fmt.Sprintf(" in %d of %d", s.FirstFailures, s.Seeds)
	}
	return out
}
