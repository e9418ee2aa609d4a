package kube

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/testkit"
)

// The text report lists the GPU nodes with idle GPUs (all of them with
// all), the totals of the Report, and the pending pods that fit nowhere.
func TestWriteText(t *testing.T) {
	r := Inspect(readFixture(t), cluster.DefaultCoverage)
	for _, all := range []bool{false, true} {
		var sb strings.Builder
		if err := r.WriteText(&sb, "saved.json", all); err != nil {
			t.Fatal(err)
		}
		out := sb.String()
		if want := fmt.Sprintf("saved.json: %d nodes, %d with GPUs, %d GPUs;", r.Nodes, r.GPUNodes, r.GPUs); !strings.HasPrefix(out, want) {
			t.Errorf("all=%v: starts %q, want %q", all, strings.SplitN(out, "\n", 2)[0], want)
		}
		for _, n := range r.PerNode {
			idle := int64(n.GPUs)*cluster.MilliGPU > n.RequestedMilli
			if listed := strings.Contains(out, "\n"+n.Name+" "); listed != (all || idle) {
				t.Errorf("all=%v: node %s (idle GPUs %v) listed %v", all, n.Name, idle, listed)
			}
		}
		if want := fmt.Sprintf("whole-free GPU nodes: %d; partly used: %d;", r.WholeFreeNodes, r.PartlyUsedNodes); !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
		if !strings.Contains(out, fmt.Sprintf("pending pods: %d, of which", len(r.Pending))) {
			t.Errorf("no pending count in\n%s", out)
		}
	}
}

// Names from the cluster reach the terminal escaped.
func TestWriteTextHostile(t *testing.T) {
	var sb strings.Builder
	if err := Inspect(readTestdata(t, "hostile.json"), cluster.DefaultCoverage).WriteText(&sb, "from\x1b[31m", true); err != nil {
		t.Fatal(err)
	}
	for _, r := range sb.String() {
		if r != '\n' && unicode.IsControl(r) {
			t.Fatalf("control character %U in\n%q", r, sb.String())
		}
	}
}

// A long node name (Kubernetes allows 253 characters) keeps its end in
// the table instead of widening the node column to its length.
func TestWriteTextLongNodeName(t *testing.T) {
	r := Inspect(readFixture(t), cluster.DefaultCoverage)
	long := strings.Repeat("gke-prod-us-central1-a100-pool-", 6) + "7f3c9d2e-x4k2"
	r.PerNode[0].Name = long
	var sb strings.Builder
	if err := r.WriteText(&sb, "saved.json", true); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	want := "\n…" + long[len(long)-maxNodeName+1:] + "  "
	if !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "  requested  ") && len([]rune(line)) > maxNodeName+80 {
			t.Errorf("table %d columns wide: %q", len([]rune(line)), line)
		}
	}
}

// TestWriteTextWidth: on a terminal of 80 columns the sentences (up to 126
// columns in a pipe) wrap, every name and figure kept, and a model name
// longer than maxModelName keeps its end, so that the table, stacked,
// fits; a pipe or a file (width 0) gets the model whole, and so does a
// terminal as wide as the widest line, which gets WriteText's bytes.
func TestWriteTextWidth(t *testing.T) {
	r := Inspect(readFixture(t), cluster.DefaultCoverage)
	text := func(width int) string {
		var sb strings.Builder
		if err := r.WriteTextWidth(&sb, "saved.json", true, width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var plain strings.Builder
	if err := r.WriteText(&plain, "saved.json", true); err != nil {
		t.Fatal(err)
	}
	full := text(0)
	if full != plain.String() {
		t.Errorf("width 0 is not WriteText:\n%s\nwant:\n%s", full, plain.String())
	}
	n, line := testkit.WidestLine(full)
	if n <= 100 {
		t.Fatalf("the full-width report is %d columns (%q): the test needs one wider than 100", n, line)
	}
	if got := text(n); got != full {
		t.Errorf("on %d columns:\n%s\nwant:\n%s", n, got, full)
	}
	sorted := func(text string) []string {
		w := strings.Fields(text)
		slices.Sort(w)
		return w
	}
	got := text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns a line is %d: %q\n%s", n, line, got)
	}
	if !slices.Equal(sorted(got), sorted(full)) {
		t.Errorf("on 80 columns the words differ from the full-width report's:\n%s", got)
	}

	long := "NVIDIA-A100-SXM4-80GB" + strings.Repeat("-partitioned", 8)
	r.PerNode[0].Model = long
	full = text(0)
	if !strings.Contains(full, "  "+long+"  ") {
		t.Errorf("without a width the model is not whole:\n%s", full)
	}
	if n, _ := testkit.WidestLine(full); text(n) != full {
		t.Errorf("on %d columns, as wide as the table, with a long model:\n%s\nwant:\n%s", n, text(n), full)
	}
	got = text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns with a long model a line is %d: %q\n%s", n, line, got)
	}
	if want := " …" + long[len(long)-maxModelName+1:] + "  "; !strings.Contains(got, want) {
		t.Errorf("on 80 columns no %q in:\n%s", want, got)
	}
}
