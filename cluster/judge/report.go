package judge

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints j for people (the text of gpufrag cluster judge): per
// list and per family, each candidate's difference from the reference in
// percentage points of unallocated GPUs with its 95% interval, then the
// rule's verdict.
func WriteText(w io.Writer, j *Judgement) error {
	var sb strings.Builder
	writeText(&sb, j)
	_, err := io.WriteString(w, sb.String())
	return err
}

func writeText(w io.Writer, j *Judgement) {
	pp := func(d Paired) string {
		return fmt.Sprintf("%+.2f ±%.2f %-6s", 100*d.Mean, 100*(d.High-d.Mean), d.Verdict())
	}
	fmt.Fprintf(w, "Unallocated GPU share at 100%% arrived demand, %d seeds (%d-%d), paired against %s:\n",
		len(j.Seeds), j.Seeds[0], j.Seeds[len(j.Seeds)-1], j.Ref)
	fmt.Fprintf(w, "candidate − %s in percentage points, ± the 95%% interval's half-width.\n\n", j.Ref)
	for c, name := range j.Candidates {
		fmt.Fprintf(w, "  [%d] %s\n", c+1, name)
	}
	fmt.Fprintf(w, "\n%-22s %-9s %8s", "list", "family", j.Ref)
	for c := range j.Candidates {
		fmt.Fprintf(w, "  %-21s", fmt.Sprintf("[%d]", c+1))
	}
	fmt.Fprintln(w)
	for _, l := range j.Lists {
		fmt.Fprintf(w, "%-22s %-9s %7.2f%%", l.List, l.Family, 100*l.Ref.Mean)
		for _, d := range l.Diffs {
			fmt.Fprintf(w, "  %s", pp(d))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n%-22s %-9s %8s", "family (pooled)", "lists", "")
	for c := range j.Candidates {
		fmt.Fprintf(w, "  %-21s", fmt.Sprintf("[%d] worse/eq/better", c+1))
	}
	fmt.Fprintln(w)
	for _, fr := range j.Families {
		n := fr.Worse[0] + fr.Equal[0] + fr.Better[0]
		fmt.Fprintf(w, "%-22s %-9d %8s", fr.Family, n, "")
		for c, d := range fr.Diffs {
			fmt.Fprintf(w, "  %s %d/%d/%d", pp(d), fr.Worse[c], fr.Equal[c], fr.Better[c])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for c, name := range j.Candidates {
		verdict := "fails the rule"
		if j.Passes[c] {
			verdict = "passes the rule"
		}
		fmt.Fprintf(w, "[%d] %s: mean over families %+.3f points; %s\n", c+1, name, 100*j.Mean[c], verdict)
	}
	if b := j.Best(); b != "" {
		fmt.Fprintf(w, "\nbest passing candidate: %s\n", b)
	} else {
		fmt.Fprintf(w, "\nno candidate passes (no family worse than %s beyond noise, mean over families below it): recommend %s\n", j.Ref, j.Ref)
	}
}
