package protocol

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/testkit"
)

func TestParseSeeds(t *testing.T) {
	seeds, err := ParseSeeds("42-44,7")
	if err != nil || !reflect.DeepEqual(seeds, []uint64{42, 43, 44, 7}) {
		t.Errorf("ParseSeeds = %v, %v", seeds, err)
	}
	for _, bad := range []string{"", "a", "5-", "-5", "3-1", "0-20000"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("ParseSeeds(%q) accepted", bad)
		}
	}
}

// The text report has a row per policy with its figures from the
// comparison, in the summaries' order, and names the policy with the
// fewest unallocated GPUs.
func TestWriteText(t *testing.T) {
	nodes, pods := gridInputs(t)
	g := NewGrid(GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"random", "fgd", "bestfit"}, Seeds: []uint64{1, 2}})
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	sums := g.Summaries()
	c := NewComparison(nodes, sums)
	s := Setup{NodesFile: "n.csv", PodsFile: "p.csv", Seeds: []uint64{1, 2}, SeedsText: "1-2", Ratio: DefaultRatio, Nodes: len(nodes), Pods: len(pods)}
	var sb strings.Builder
	if err := WriteText(&sb, s, sums, c); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	// The header counts the pods submitted, not placed (it said "Placed"
	// while thousands failed): the list inflated to the ratio.
	head := strings.Join(strings.Fields(out[:strings.Index(out, "\n\n")]), " ")
	if want := fmt.Sprintf("Submitted about %s pods a run (the %d pods of p.csv, inflated or trimmed to 130%% of GPU capacity) with 3 policies on %d nodes",
		human.Thousands(int(math.Round(sums[0].Pods.Mean))), len(pods), len(nodes)); !strings.HasPrefix(head, want) {
		t.Errorf("header: %q\nwant %q", head, want)
	}
	if sums[0].Pods.Std == 0 || sums[0].Pods.Mean <= float64(len(pods)) {
		t.Errorf("%+v pods a run, want more than the list's %d (inflated to 130%%), varying with the seed", sums[0].Pods, len(pods))
	}
	best := 0
	last := -1
	for i, r := range c.Results {
		if r.UnallocatedGPUsAt100.Mean < c.Results[best].UnallocatedGPUsAt100.Mean {
			best = i
		}
		row := fmt.Sprintf("\n%s ", sums[i].Policy)
		k := strings.Index(out, row)
		if k < last {
			t.Errorf("row of %s missing or out of order", sums[i].Policy)
		}
		last = k
		line := out[k+1:]
		line = line[:strings.IndexByte(line, '\n')]
		if want := fmt.Sprintf("%s ±%.2f", Pct(r.AllocRatioAt100.Mean), 100*r.AllocRatioAt100.Std); !strings.Contains(line, want) {
			t.Errorf("%s: row %q lacks the allocation %q", sums[i].Policy, line, want)
		}
	}
	if want := fmt.Sprintf("fewest unallocated GPUs at 100%%: %s (", sums[best].Policy); !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
}

// TestWriteTextWidth: the legend's lines, up to 94 columns, which a pipe
// or a file keeps, wrap at their spaces on a terminal of 80 and of 60
// columns, and so does the first sentence (80 in every layout) on 60;
// every name and figure kept; a terminal as wide as the widest line gets WriteText's
// bytes.
func TestWriteTextWidth(t *testing.T) {
	nodes, pods := gridInputs(t)
	g := NewGrid(GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"fgd", "bestfit"}, Seeds: []uint64{1}})
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	sums := g.Summaries()
	c := NewComparison(nodes, sums)
	s := Setup{NodesFile: "n.csv", PodsFile: "p.csv", Seeds: []uint64{1}, SeedsText: "1", Ratio: DefaultRatio, Nodes: len(nodes), Pods: len(pods)}
	text := func(width int) string {
		var sb strings.Builder
		if err := WriteTextWidth(&sb, s, sums, c, width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var plain strings.Builder
	if err := WriteText(&plain, s, sums, c); err != nil {
		t.Fatal(err)
	}
	full := text(0)
	if full != plain.String() {
		t.Errorf("width 0 is not WriteText:\n%s\nwant:\n%s", full, plain.String())
	}
	_, legend, _ := strings.Cut(full, "\n\nallocated: ")
	if n, _ := testkit.WidestLine(legend); n != 94 {
		t.Errorf("the full-width legend is %d columns, want 94:\n%s", n, legend)
	}
	n, _ := testkit.WidestLine(full)
	if got := text(n); got != full {
		t.Errorf("on %d columns:\n%s\nwant:\n%s", n, got, full)
	}
	for _, cols := range []int{80, 60} {
		got := text(cols)
		if n, line := testkit.WidestLine(got); n > cols {
			t.Errorf("on %d columns a line is %d: %q\n%s", cols, n, line, got)
		}
		// Sorted: a stacked table's cells change places; without the
		// group labels' dashes, which stretch with their columns.
		if !slices.Equal(testkit.Words(got), testkit.Words(full)) {
			t.Errorf("on %d columns the words differ from the full-width report's:\n%s", cols, got)
		}
	}
	want := "\nfrag/total: FGD fragmentation (idle GPU capacity the popular task types cannot\n  use) ÷ capacity\n"
	if got := text(80); !strings.Contains(got, want) {
		t.Errorf("on 80 columns no %q in:\n%s", want, got)
	}
}

func TestFirstFailureText(t *testing.T) {
	for _, tc := range []struct {
		s    Summary
		want string
	}{
		{Summary{Seeds: 2}, "none"},
		{Summary{Seeds: 2, FirstFailures: 2, FirstFailureArrived: MeanStd{Mean: 0.905}, FirstFailureUnallocated: MeanStd{Mean: 0.1}}, "90.5% (10.0% idle)"},
		{Summary{Seeds: 3, FirstFailures: 1, FirstFailureArrived: MeanStd{Mean: 1}, FirstFailureUnallocated: MeanStd{Mean: 0.02}}, "100.0% (2.0% idle) in 1 of 3"},
	} {
		if got := tc.s.firstFailure(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestWriteTimedText(t *testing.T) {
	nodes, pods := gridInputs(t)
	g := NewGrid(GridConfig{Nodes: nodes, Pods: pods, Policies: []string{"fgd", "bestfit"}, Seeds: []uint64{1}, Timed: true})
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	c := NewTimedComparison(nodes, g.TimedSummaries())
	var sb strings.Builder
	if err := WriteTimedText(&sb, Setup{NodesFile: "n.csv", PodsFile: "p.csv", Seeds: []uint64{1}, Nodes: len(nodes)}, c); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !strings.HasPrefix(out, "Replayed the pods of p.csv by creation and deletion time on 40 nodes") || !strings.Contains(out, "1 seed.") {
		t.Errorf("header: %q", out)
	}
	for _, r := range c.Results {
		if !strings.Contains(out, "\n"+r.Policy+" ") || !strings.Contains(out, Pct(r.PeakAllocRatio.Mean)) {
			t.Errorf("no row for %s with its peak %s in\n%s", r.Policy, Pct(r.PeakAllocRatio.Mean), out)
		}
	}
}
