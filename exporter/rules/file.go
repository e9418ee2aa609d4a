package rules

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/gpufrag/gpufrag/internal/outfile"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// ReadHistoryFile reads the history at path ("-": stdin) in format
// (ReadHistory, which looks at the first bytes before reading on). It
// returns the name its messages use ("<stdin>" for "-") and the format
// read.
func ReadHistoryFile(path string, stdin io.Reader, format string, o ReadOptions) (*History, string, string, error) {
	r, name := stdin, "<stdin>"
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return nil, path, "", err
		}
		defer fh.Close()
		r, name = fh, path
	}
	h, format, err := ReadHistory(name, r, format, o)
	return h, name, format, err
}

// WriteFile writes the rules of ts (WriteRules) to path through a
// temporary file in the same directory, renamed over it, so that a reader
// (Prometheus reloading its rules) never sees half a file, readable by all whatever the mode of the file
// it replaces (internal/outfile).
func WriteFile(path string, ts []Threshold, o RuleOptions) error {
	return outfile.WritePerm(path, 0o644, func(w io.Writer) error { return WriteRules(w, ts, o) })
}

// WriteTable writes the thresholds ts, derived with o, as a table for
// people, and where their rules were written (out), with the command that
// checks them. Names from the history are escaped (untrusted.Printable).
func WriteTable(w io.Writer, ts []Threshold, o Options, out string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "INSTANCE\tMODEL\tSERIES\tPOINTS\tP%g FRAG\tLOW HEALTH\tTHRESHOLD\tNOTE\n", o.Quantile*100)
	for _, t := range ts {
		note := ""
		switch {
		case t.Fallback:
			note = fmt.Sprintf("fewer than %d points: fleet default", o.MinPoints)
		case t.Clamped != "":
			note = "clamped to " + t.Clamped
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%s\n",
			untrusted.Printable(t.Instance), untrusted.Printable(t.Model), t.Series, t.Points, t.FragQuantile, t.LowHealth, t.Threshold, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d alert rules written to %s (check: promtool check rules %s)\n", len(ts), out, out)
	return err
}
