// Package pages draws the comparison of an FGD-protocol grid: the HTML
// report of cluster simulate --html and the curves of --png, as
// report.Page and report.LineChart values (the command writes them).
package pages

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/report"
)

// ChartFiles names the charts of Charts, in order, for file names
// (cluster-NAME.png).
var ChartFiles = []string{"alloc", "frag-total", "frag-rate", "whole-free"}

// Charts returns the curves: allocation, FGD fragmentation (total and
// rate), whole-free nodes, each against arrived demand.
func Charts(sums []protocol.Summary) []report.LineChart {
	type metric struct {
		title, ylabel string
		unit          report.Unit
		get           func(protocol.StatPoint) float64
	}
	metrics := []metric{
		{"GPU allocation ratio", "allocated / capacity", report.UnitShare, func(p protocol.StatPoint) float64 { return p.AllocRatio.Mean }},
		{"FGD fragmentation / total GPU capacity", "fragment / capacity", report.UnitShare, func(p protocol.StatPoint) float64 { return p.FragTotal.Mean }},
		{"FGD fragmentation rate (of idle GPU capacity)", "fragment / idle", report.UnitShare, func(p protocol.StatPoint) float64 { return p.FragRate.Mean }},
		{"Nodes with every GPU free", "nodes", report.UnitNone, func(p protocol.StatPoint) float64 { return p.WholeFreeNodes.Mean }},
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

// Page is the HTML report of the comparison: protocol.WriteText's text, a
// table at 100% arrived demand and the curves.
func Page(s protocol.Setup, sums []protocol.Summary, c protocol.Comparison) report.Page {
	var sb strings.Builder
	protocol.WriteText(&sb, s, sums, c) // a strings.Builder does not fail
	tab := report.Table{Caption: "At 100% arrived GPU demand (mean over seeds)",
		Header:      []string{"policy", "allocated", "std (pp)", "unallocated GPUs", "frag/total 60%", "80%", "90%", "whole-free nodes"},
		NumericCols: []int{1, 2, 3, 4, 5, 6, 7}}
	for _, r := range c.Results {
		tab.Rows = append(tab.Rows, []string{r.Policy, protocol.Pct(r.AllocRatioAt100.Mean), fmt.Sprintf("%.2f", 100*r.AllocRatioAt100.Std),
			fmt.Sprintf("%.0f", r.UnallocatedGPUsAt100.Mean), protocol.Pct(r.FragTotalAt["60"]), protocol.Pct(r.FragTotalAt["80"]), protocol.Pct(r.FragTotalAt["90"]),
			fmt.Sprintf("%.1f", r.WholeFreeNodesAt100)})
	}
	var policies []string
	for _, sum := range sums {
		policies = append(policies, sum.Policy)
	}
	return report.Page{
		Title: fmt.Sprintf("gpufrag cluster simulate: %s on %s (%s nodes, %s GPUs), %s, %d seed%s",
			filepath.Base(s.PodsFile), filepath.Base(s.NodesFile), human.Thousands(s.Nodes), human.Thousands(c.GPUs),
			strings.Join(policies, ", "), len(s.Seeds), human.PluralS(len(s.Seeds))),
		Subtitle: fmt.Sprintf("%s pods of %s on the nodes of %s; seeds %s", human.Thousands(s.Pods), s.PodsFile, s.NodesFile, s.SeedsText),
		Sections: []report.Section{
			{Heading: "Comparison", Tables: []report.Table{tab}, Pre: sb.String()},
			{Heading: "Curves against arrived GPU demand", Text: "Means over the seeds at every percent of arrived GPU demand (the FGD paper's Figs. 7 and 9).", Charts: Charts(sums)},
		},
	}
}
