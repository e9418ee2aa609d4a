package experiments

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints outcomes for people (`gpufrag experiments run`): per
// experiment its verdict (marked when run at reduced size), claim, setup,
// each decision rule with its value and whether it passed, and why it was
// skipped or not simulated; a blank line between experiments.
func WriteText(w io.Writer, outs []*Outcome) error {
	var sb strings.Builder
	for i, o := range outs {
		if i > 0 {
			sb.WriteString("\n")
		}
		verdict := strings.ToUpper(o.Verdict)
		if o.Reduced {
			// A reduced run is shorter, with fewer seeds and small fixtures:
			// its verdict may differ from docs/findings.md's full-size one.
			verdict += " (reduced size: may differ from the full-size verdict in docs/findings.md)"
		}
		fmt.Fprintf(&sb, "%s: %s\n  claim:   %s\n", o.Name, verdict, o.Claim)
		if o.Setup != "" {
			fmt.Fprintf(&sb, "  setup:   %s\n", o.Setup)
		}
		for _, c := range o.Checks {
			mark := "FAIL"
			if c.Pass {
				mark = "pass"
			}
			fmt.Fprintf(&sb, "  %s  %s: %.4g\n", mark, c.Rule, c.Value)
		}
		if o.Skipped != "" {
			fmt.Fprintf(&sb, "  skipped: %s\n", o.Skipped)
		}
		if o.CannotSimulate != "" {
			fmt.Fprintf(&sb, "  not simulated: %s\n", o.CannotSimulate)
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// WriteListText prints the list for people (`gpufrag experiments list`):
// one line per experiment, its name, kind and claim.
func WriteListText(w io.Writer, entries []ListEntry) error {
	var sb strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&sb, "%-28s %-10s %s\n", e.Name, e.Kind, e.Claim)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// FindingsFiles are the files WriteFindings writes for exps, as paths
// relative to the repository root with slashes: docs/findings.md and one
// plot per experiment that draws one.
func FindingsFiles(exps []*Experiment) []string {
	out := []string{FindingsPath}
	for _, e := range exps {
		if e.Plot != nil {
			out = append(out, PlotsDir+"/"+e.Name+".png")
		}
	}
	return out
}
