package analysis_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

// TestTextOOMsBounded: the text reports of analyze and diff list at most
// analysis.MaxTextOOMs out-of-memory entries per device and count the
// rest by cause, so a server that logged hundreds of failures does not
// bury the replay, the what-ifs and the recommendation under them (a 2.4
// GB generated file: 712 entries, 2,850 of the report's 2,938 lines); the
// JSON document keeps them all.
func TestTextOOMsBounded(t *testing.T) {
	var buf bytes.Buffer
	st, err := gensnap.Write(&buf, gensnap.Options{Bytes: 300_000, Seed: 4, Layers: 4, OOMEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMs <= analysis.MaxTextOOMs {
		t.Fatalf("%d oom entries generated, want more than %d", st.OOMs, analysis.MaxTextOOMs)
	}
	s, err := snapshot.ReadBytes(buf.Bytes(), "g")
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Devices[0].OOMs); n != st.OOMs {
		t.Fatalf("%d oom entries analysed, %d written", n, st.OOMs)
	}
	var text strings.Builder
	if err := r.WriteText(&text, "g"); err != nil {
		t.Fatal(err)
	}
	more := "more out-of-memory entries not listed"
	if got := strings.Count(text.String(), "\nOut of memory at event"); got != analysis.MaxTextOOMs || !strings.Contains(text.String(), more) {
		t.Errorf("analyze text: %d entries listed (want %d) and %q: %v", got, analysis.MaxTextOOMs, more, strings.Contains(text.String(), more))
	}
	if !strings.Contains(text.String(), "Replay fidelity") {
		t.Error("analyze text lacks the replay after the oom entries")
	}
	c, err := analysis.Compare([]*analysis.Report{r, r}, []string{"a", "b"}, analysis.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"A", "B"} {
		if got := strings.Count(text.String(), "\n"+side+": out of memory at event"); got != analysis.MaxTextOOMs {
			t.Errorf("diff text: side %s lists %d entries, want %d", side, got, analysis.MaxTextOOMs)
		}
	}
	if got := strings.Count(text.String(), more); got != 2 {
		t.Errorf("diff text: %q %d times, want once per side", more, got)
	}
}
