package experiments

import (
	"strings"
	"testing"
)

// TestWriteText prints outcomes that take every branch: a reduced verdict,
// a setup, passing and failing rules, a skipped and a not simulated one.
func TestWriteText(t *testing.T) {
	outs := []*Outcome{
		{Name: "a", Claim: "A holds.", Verdict: "holds", Reduced: true, Setup: "two runs",
			Checks: []CheckResult{{Rule: "x < 0.08", Value: 0.0412345, Pass: true}, {Rule: "y > 1", Value: 0.5}}},
		{Name: "b", Claim: "B.", Verdict: "skipped", Skipped: "no data"},
		{Name: "c", Claim: "C.", Verdict: "cannot be tested", CannotSimulate: "needs a GPU"},
	}
	var sb strings.Builder
	if err := WriteText(&sb, outs); err != nil {
		t.Fatal(err)
	}
	want := `a: HOLDS (reduced size: may differ from the full-size verdict in docs/findings.md)
  claim:   A holds.
  setup:   two runs
  pass  x < 0.08: 0.04123
  FAIL  y > 1: 0.5

b: SKIPPED
  claim:   B.
  skipped: no data

c: CANNOT BE TESTED
  claim:   C.
  not simulated: needs a GPU
`
	if got := sb.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestWriteListText: one aligned line per experiment.
func TestWriteListText(t *testing.T) {
	var sb strings.Builder
	if err := WriteListText(&sb, []ListEntry{{Name: "paged", Kind: "simulate", Claim: "Paged is better."}}); err != nil {
		t.Fatal(err)
	}
	if got, want := sb.String(), "paged                        simulate   Paged is better.\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFindingsFiles: the page, then a plot per experiment that draws one.
func TestFindingsFiles(t *testing.T) {
	got := FindingsFiles([]*Experiment{{Name: "a", Plot: &Plot{}}, {Name: "b"}})
	if strings.Join(got, " ") != "docs/findings.md docs/findings/a.png" {
		t.Errorf("FindingsFiles = %q", got)
	}
}
