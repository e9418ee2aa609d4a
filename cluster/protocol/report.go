package protocol

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
)

// Setup is what a comparison ran on, as its reports name it.
type Setup struct {
	NodesFile, PodsFile string // the lists' paths, as given
	Seeds               []uint64
	SeedsText           string  // the seeds as given ("42-51")
	Ratio               float64 // Options.Ratio
	Nodes, Pods         int     // the lists' lengths
}

// Pct formats a share as a percentage with two decimals.
func Pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

// WriteText prints the comparison of an FGD-protocol grid for people (the
// text of cluster simulate): per policy, at 100% arrived demand, the
// allocation, the unallocated GPUs, the fragmentation at 60/80/90%, the
// whole-free nodes, the failed pods and the first failure; c is
// NewComparison of the summaries.
func WriteText(w io.Writer, s Setup, sums []Summary, c Comparison) error {
	return WriteTextWidth(w, s, sums, c, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide: a table
// wider than that prints stacked (human.Table's Width), the first sentence,
// wrapped at 80 columns in every layout, wraps at width where that is
// narrower, and a line of the legend longer than width wraps at its spaces,
// its further lines indented (human.WrapLong); 0 is no limit, the layout of
// WriteText.
func WriteTextWidth(w io.Writer, s Setup, sums []Summary, c Comparison, width int) error {
	var sb strings.Builder
	// The pods submitted, not placed: those that fit nowhere fail.
	submitted := fmt.Sprintf("the %s pods of %s, inflated or trimmed to %.0f%% of GPU capacity", human.Thousands(s.Pods), s.PodsFile, 100*s.Ratio)
	if len(sums) > 0 {
		about := map[bool]string{true: "about "}[sums[0].Pods.Std > 0]
		submitted = fmt.Sprintf("%s%s pods a run (%s)", about, human.Thousands(int(math.Round(sums[0].Pods.Mean))), submitted)
	}
	fmt.Fprintf(&sb, "%s\n\n", human.Wrap(fmt.Sprintf(
		"Submitted %s with %d polic%s on %s nodes with %s GPUs (%s), %d seed%s (%s), no departures.",
		submitted, len(sums), map[bool]string{true: "y", false: "ies"}[len(sums) == 1],
		human.Thousands(s.Nodes), human.Thousands(c.GPUs), s.NodesFile, len(s.Seeds), human.PluralS(len(s.Seeds)), s.SeedsText), sentenceWidth(width)))
	t := human.Table{
		Groups: []human.Group{{From: 1, To: 3, Label: "at 100% arrived demand"}, {From: 4, To: 6, Label: "frag/total at arrived"}},
		Head:   []string{"policy", "allocated", "unallocated GPUs", "share", "60%", "80%", "90%", "whole-free nodes", "failed pods", "first failure"},
		Width:  width,
	}
	for i, sum := range sums {
		r := c.Results[i]
		t.Rows = append(t.Rows, []string{
			sum.Policy,
			fmt.Sprintf("%s ±%.2f", Pct(r.AllocRatioAt100.Mean), 100*r.AllocRatioAt100.Std),
			fmt.Sprintf("%.0f ±%.0f", r.UnallocatedGPUsAt100.Mean, r.UnallocatedGPUsAt100.Std),
			Pct(r.UnallocatedShareAt100.Mean),
			fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["60"]), fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["80"]), fmt.Sprintf("%.1f%%", 100*r.FragTotalAt["90"]),
			fmt.Sprintf("%.1f", r.WholeFreeNodesAt100),
			fmt.Sprintf("%.0f", sum.Failed.Mean),
			sum.firstFailure(),
		})
	}
	t.Write(&sb)
	sb.WriteString(human.WrapLong("\nallocated: GPU milli allocated ÷ capacity, mean ±std over seeds (percentage points)\n"+
		"frag/total: FGD fragmentation (idle GPU capacity the popular task types cannot use) ÷ capacity\n"+
		"failed pods: over the whole run (to "+fmt.Sprintf("%.0f%%", 100*s.Ratio)+" arrived), mean over seeds\n"+
		"first failure: arrived demand when the first pod fit nowhere, and the GPU share then idle\n", width))
	best := 0
	for i := range c.Results {
		if c.Results[i].UnallocatedGPUsAt100.Mean < c.Results[best].UnallocatedGPUsAt100.Mean {
			best = i
		}
	}
	if len(sums) > 1 {
		sb.WriteString(human.WrapLong(fmt.Sprintf("fewest unallocated GPUs at 100%%: %s (%.0f GPUs)\n", sums[best].Policy, c.Results[best].UnallocatedGPUsAt100.Mean), width))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// sentenceWidth is the width the report's first sentence wraps at: 80
// columns, or a terminal's width (0 is no limit) where it is narrower.
func sentenceWidth(width int) int {
	if width > 0 {
		return min(width, 80)
	}
	return 80
}

// WriteTimedText prints the comparison of a timed grid for people
// (cluster simulate --timed).
func WriteTimedText(w io.Writer, s Setup, c TimedComparison) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n\n", human.Wrap(fmt.Sprintf("Replayed the pods of %s by creation and deletion time on %s nodes with %s GPUs (%s), %d seed%s.",
		s.PodsFile, human.Thousands(s.Nodes), human.Thousands(c.GPUs), s.NodesFile, len(s.Seeds), human.PluralS(len(s.Seeds))), 80))
	t := human.Table{Head: []string{"policy", "mean allocated", "peak allocated", "mean frag/total", "failed pods"}}
	for _, r := range c.Results {
		t.Rows = append(t.Rows, []string{r.Policy, Pct(r.MeanAllocRatio.Mean), Pct(r.PeakAllocRatio.Mean),
			Pct(r.MeanFragTotal.Mean), fmt.Sprintf("%.1f", r.FailedPods.Mean)})
	}
	t.Write(&sb)
	sb.WriteString("\nmean: weighted by how long each state held, from the first to the last event\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// firstFailure formats when the first pod failed, "none" when none did.
func (s *Summary) firstFailure() string {
	if s.FirstFailures == 0 {
		return "none"
	}
	out := fmt.Sprintf("%.1f%% (%.1f%% idle)", 100*s.FirstFailureArrived.Mean, 100*s.FirstFailureUnallocated.Mean)
	if s.FirstFailures < s.Seeds {
		out += fmt.Sprintf(" in %d of %d", s.FirstFailures, s.Seeds)
	}
	return out
}

// ParseSeeds reads a list of seeds as the commands take it: "42-51", "7"
// or "1,3,10-12"; at most 10,000 seeds.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range N-M", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range N-M with N <= M", part)
			}
		}
		if b-a >= 10000 || len(out) > 10000 {
			return nil, fmt.Errorf("%q: too many seeds (at most 10000)", part)
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}
