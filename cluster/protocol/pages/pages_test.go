package pages

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster/protocol"
)

func summaries() []protocol.Summary {
	var sums []protocol.Summary
	for k, name := range []string{"fgd", "bestfit"} {
		s := protocol.Summary{Policy: name, Seeds: 2, Curve: make([]protocol.StatPoint, 131)}
		for pct := range s.Curve {
			s.Curve[pct] = protocol.StatPoint{Arrived: pct}
			if pct%2 == 0 { // odd percents have no sample
				s.Curve[pct].Seeds = 2
				s.Curve[pct].AllocRatio = protocol.MeanStd{Mean: float64(pct) / 140}
				s.Curve[pct].FragTotal = protocol.MeanStd{Mean: float64(k+1) / 100}
			}
		}
		sums = append(sums, s)
	}
	return sums
}

// Every chart has a series per policy with a point per percent, NaN
// where no seed had a sample.
func TestCharts(t *testing.T) {
	sums := summaries()
	charts := Charts(sums)
	if len(charts) != len(ChartFiles) {
		t.Fatalf("%d charts, %d file names", len(charts), len(ChartFiles))
	}
	for _, c := range charts {
		if len(c.Series) != len(sums) {
			t.Fatalf("%s: %d series", c.Title, len(c.Series))
		}
		for i, se := range c.Series {
			if se.Name != sums[i].Policy || len(se.X) != 131 || len(se.Y) != 131 || se.X[100] != 1 {
				t.Errorf("%s: series %d: %s, %d points", c.Title, i, se.Name, len(se.X))
			}
			if !math.IsNaN(se.Y[1]) || math.IsNaN(se.Y[2]) {
				t.Errorf("%s/%s: y at 1%% %v (no sample), at 2%% %v", c.Title, se.Name, se.Y[1], se.Y[2])
			}
		}
	}
	if got := charts[0].Series[0].Y[70]; got != 0.5 {
		t.Errorf("allocation at 70%%: %v, want 0.5", got)
	}
}

func TestPage(t *testing.T) {
	sums := summaries()
	c := protocol.Comparison{GPUs: 8, Results: make([]protocol.ComparisonResult, len(sums))}
	for i := range sums {
		c.Results[i].Policy = sums[i].Policy
	}
	s := protocol.Setup{NodesFile: "dir/nodes.csv", PodsFile: "dir/pods.csv", Seeds: []uint64{1, 2}, SeedsText: "1-2", Ratio: 1.3, Nodes: 2, Pods: 3}
	p := Page(s, sums, c)
	if want := "gpufrag cluster simulate: pods.csv on nodes.csv (2 nodes, 8 GPUs), fgd, bestfit, 2 seeds"; p.Title != want {
		t.Errorf("title %q, want %q", p.Title, want)
	}
	var text strings.Builder
	if err := protocol.WriteText(&text, s, sums, c); err != nil {
		t.Fatal(err)
	}
	if len(p.Sections) != 2 || p.Sections[0].Pre != text.String() || len(p.Sections[0].Tables[0].Rows) != 2 || len(p.Sections[1].Charts) != 4 {
		t.Errorf("sections: %+v", p.Sections)
	}
	var html bytes.Buffer
	if err := p.WriteHTML(&html); err != nil || !strings.Contains(html.String(), "dir/pods.csv") {
		t.Errorf("HTML: %v", err)
	}
}
