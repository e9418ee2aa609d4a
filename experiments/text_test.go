package experiments

import (
	"strings"
	"testing"
	"unicode/utf8"
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

// TestWriteTextWidth: on a terminal narrower than its lines the verdict
// wraps 2 further in, a claim and a setup under their text (column 11), a
// rule under its rule, a reason under itself; width 0, and a terminal wide
// enough, get WriteText's bytes.
func TestWriteTextWidth(t *testing.T) {
	outs := []*Outcome{
		{Name: "paged-vs-contiguous", Verdict: "holds in part", Reduced: true,
			Claim:  "Paged KV caches cut fragmentation from 20-35% to single digits (below 8%) and raise throughput 2-3x.",
			Setup:  "opt-13b on a100-40g, 366 generated requests, 3m simulated, seed 42",
			Checks: []CheckResult{{Rule: "output_tokens_per_s of paged ÷ contiguous in [2, 3]", Value: 2.257, Pass: true}}},
		{Name: "b", Claim: "B.", Verdict: "skipped", Skipped: "no data: ../shared/data/traces/AzureLLMInferenceTrace_conv.csv is absent"},
	}
	text := func(width int) string {
		var sb strings.Builder
		if err := WriteTextWidth(&sb, outs, width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var plain strings.Builder
	if err := WriteText(&plain, outs); err != nil {
		t.Fatal(err)
	}
	if got := text(0); got != plain.String() {
		t.Errorf("width 0:\n%s\nwant WriteText's:\n%s", got, plain.String())
	}
	widest := 0
	for _, line := range strings.Split(plain.String(), "\n") {
		widest = max(widest, utf8.RuneCountInString(line))
	}
	if got := text(widest); got != plain.String() {
		t.Errorf("width %d, the widest line's:\n%s\nwant WriteText's:\n%s", widest, got, plain.String())
	}
	want := `paged-vs-contiguous: HOLDS IN PART (reduced size: may
  differ from the full-size verdict in docs/findings.md)
  claim:   Paged KV caches cut fragmentation from 20-35% to
           single digits (below 8%) and raise throughput
           2-3x.
  setup:   opt-13b on a100-40g, 366 generated requests, 3m
           simulated, seed 42
  pass  output_tokens_per_s of paged ÷ contiguous in [2, 3]:
        2.257

b: SKIPPED
  claim:   B.
  skipped: no data:
           ../shared/data/traces/AzureLLMInferenceTrace_conv.csv
           is absent
`
	if got := text(60); got != want {
		t.Errorf("width 60:\n%s\nwant:\n%s", got, want)
	}
}

// TestWriteListTextWidth: where a line is longer than the terminal, each
// experiment's name and kind go on a line and its claim under them,
// wrapped; width 0, and a terminal wide enough, keep one line each.
func TestWriteListTextWidth(t *testing.T) {
	entries := []ListEntry{
		{Name: "paged", Kind: "scenario", Claim: "Paged is better."},
		{Name: "expandable-segments", Kind: "scenario",
			Claim: "PyTorch's expandable_segments lowers fragmentation markedly, but does not remove it while blocks stay live across phases."},
	}
	text := func(width int) string {
		var sb strings.Builder
		if err := WriteListTextWidth(&sb, entries, width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	full := "paged                        scenario   Paged is better.\n" +
		"expandable-segments          scenario   PyTorch's expandable_segments lowers fragmentation markedly, but does not remove it while blocks stay live across phases.\n"
	for _, width := range []int{0, 161} {
		if got := text(width); got != full {
			t.Errorf("width %d:\n%s\nwant:\n%s", width, got, full)
		}
	}
	want := "paged                        scenario\n" +
		"    Paged is better.\n" +
		"expandable-segments          scenario\n" +
		"    PyTorch's expandable_segments lowers fragmentation markedly, but does not\n" +
		"    remove it while blocks stay live across phases.\n"
	if got := text(80); got != want {
		t.Errorf("width 80:\n%s\nwant:\n%s", got, want)
	}
}

// TestFindingsFiles: the page, then a plot per experiment that draws one.
func TestFindingsFiles(t *testing.T) {
	got := FindingsFiles([]*Experiment{{Name: "a", Plot: &Plot{}}, {Name: "b"}})
	if strings.Join(got, " ") != "docs/findings.md docs/findings/a.png" {
		t.Errorf("FindingsFiles = %q", got)
	}
}
