package experiments

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/human"
)

// WriteText prints outcomes for people (`gpufrag experiments run`): per
// experiment its verdict (marked when run at reduced size), claim, setup,
// each decision rule with its value and whether it passed, and why it was
// skipped or not simulated; a blank line between experiments.
func WriteText(w io.Writer, outs []*Outcome) error {
	return WriteTextWidth(w, outs, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): a line longer than width wraps at its
// spaces, a claim, a setup, a rule or a reason under its own text (hang),
// the verdict's line 2 further in.
func WriteTextWidth(w io.Writer, outs []*Outcome, width int) error {
	var sb strings.Builder
	line := func(prefix, text string) { sb.WriteString(hang(prefix, text, width) + "\n") }
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
		sb.WriteString(human.WrapLong(fmt.Sprintf("%s: %s\n", o.Name, verdict), width))
		line("  claim:   ", o.Claim)
		if o.Setup != "" {
			line("  setup:   ", o.Setup)
		}
		for _, c := range o.Checks {
			mark := "FAIL"
			if c.Pass {
				mark = "pass"
			}
			line("  "+mark+"  ", fmt.Sprintf("%s: %.4g", c.Rule, c.Value))
		}
		if o.Skipped != "" {
			line("  skipped: ", o.Skipped)
		}
		if o.CannotSimulate != "" {
			line("  not simulated: ", o.CannotSimulate)
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// hang is prefix and text on a line; where that is longer than width (0:
// no limit), text wraps at its spaces, its further lines under its first.
func hang(prefix, text string, width int) string {
	if width <= 0 || utf8.RuneCountInString(prefix+text) <= width {
		return prefix + text
	}
	n := utf8.RuneCountInString(prefix)
	return prefix + strings.ReplaceAll(human.Wrap(text, max(width-n, minHang)), "\n", "\n"+strings.Repeat(" ", n))
}

// minHang is the narrowest column hang wraps text to, however narrow the
// terminal.
const minHang = 20

// WriteListText prints the list for people (`gpufrag experiments list`):
// one line per experiment, its name, kind and claim.
func WriteListText(w io.Writer, entries []ListEntry) error {
	return WriteListTextWidth(w, entries, 0)
}

// WriteListTextWidth is WriteListText for a terminal width columns wide
// (0: no limit, the layout of WriteListText): where a line is longer than
// width, each experiment's name and kind go on a line and its claim under
// them, indented by 4 and wrapped at its spaces, as a stacked table prints
// a row's name over its figures.
func WriteListTextWidth(w io.Writer, entries []ListEntry, width int) error {
	var sb strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&sb, "%-28s %-10s %s\n", e.Name, e.Kind, e.Claim)
	}
	if width > 0 && human.Widest(sb.String()) > width {
		sb.Reset()
		for _, e := range entries {
			fmt.Fprintf(&sb, "%s\n%s\n", strings.TrimRight(fmt.Sprintf("%-28s %s", e.Name, e.Kind), " "), hang("    ", e.Claim, width))
		}
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
