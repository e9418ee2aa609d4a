package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// groupTexts returns the texts inside the chart's <g class="CLASS">.
func groupTexts(t *testing.T, svg []byte, class string) []string {
	t.Helper()
	s := string(svg)
	i := strings.Index(s, `<g class="`+class+`">`)
	if i < 0 {
		return nil
	}
	j := strings.Index(s[i:], "\n</g>")
	if j < 0 {
		t.Fatalf("group %q not closed", class)
	}
	var out []string
	for _, e := range parseXML(t, class, []byte(s[i:i+j]+"\n</g>")) {
		if e.name == "text" {
			out = append(out, e.text)
		}
	}
	return out
}

func TestLegendOnlyDrawnLines(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4}
	same := []float64{1, 2, 3, 4, 5}
	nan := math.NaN()
	c := LineChart{Title: "t", YUnit: UnitBytes, Series: []Series{
		{Name: "reserved", X: x, Y: []float64{6, 7, 8, 9, 10}},
		{Name: "allocated", X: x, Y: same},
		{Name: "requested", X: x, Y: []float64{1, 2, 3.001, 4, 5}}, // within a line's width of allocated
		{Name: "never", X: x, Y: []float64{nan, nan, nan, nan, nan}},
		{Name: "KV held", X: x, Y: []float64{1, 1, 1, 1, 1}},
	}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	got := groupTexts(t, svg, "legend")
	want := []string{"reserved", "requested ≈ allocated", "KV held"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", got, want)
	}
	// A line apart by more than its width keeps its own entry.
	c.Series[2].Y = []float64{1, 2, 3.5, 4, 5}
	svg, _ = c.SVG()
	if got := groupTexts(t, svg, "legend"); len(got) != 4 {
		t.Errorf("legend %q, want 4 entries", got)
	}
	// PNG output has no tags and still renders.
	var b bytes.Buffer
	if err := c.PNG(&b); err != nil || b.Len() == 0 {
		t.Errorf("PNG: %v, %d bytes", err, b.Len())
	}
}

func TestMarkerLabelsMergeAndCount(t *testing.T) {
	x := []float64{0, 100}
	c := LineChart{Title: "m", XUnit: UnitSeconds, Series: []Series{{Name: "a", X: x, Y: []float64{0, 1}}}}
	// 500 OOMs spread over 100 s, and 3 preemptions at 50 s.
	for i := range 500 {
		c.Markers = append(c.Markers, Marker{X: float64(i) / 5, Label: "oom"})
	}
	c.Markers = append(c.Markers, Marker{X: 50, Label: "preempt", Count: 3})
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	labels := groupTexts(t, svg, "marker-labels")
	if len(labels) == 0 || len(labels) > 30 {
		t.Fatalf("%d labels: %q", len(labels), labels)
	}
	total, preempt := 0, false
	for _, l := range labels {
		for _, part := range strings.Split(l, ", ") {
			kind, n, ok := strings.Cut(part, " ×")
			k := 1
			if ok {
				if _, err := fmtSscan(n, &k); err != nil {
					t.Fatalf("label %q", l)
				}
			}
			if kind == "oom" {
				total += k
			}
			if kind == "preempt" && k == 3 {
				preempt = true
			}
		}
	}
	// Labels that fit on no row are left out, so they count at most all.
	if total == 0 || total > 500 {
		t.Errorf("labels count %d OOMs of 500: %q", total, labels)
	}
	if !preempt {
		t.Errorf("no 'preempt ×3' among %q", labels)
	}
}

func TestPreAndWideTables(t *testing.T) {
	p := Page{Title: "t", Sections: []Section{{Heading: "Text report",
		Pre:    "col a   col b\n1       <2>\n",
		Tables: []Table{{Header: []string{"allocator"}, Rows: [][]string{{"caching:expandable_segments:True"}}}}}}}
	var b bytes.Buffer
	if err := p.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "<pre>col a   col b\n1       &lt;2&gt;</pre>") {
		t.Errorf("no <pre> block:\n%s", out)
	}
	if !strings.Contains(out, `<div class="table-wrap">`) || !strings.Contains(out, "caching:<wbr />expandable_segments:<wbr />True") {
		t.Errorf("table not wrapped or not breakable:\n%s", out)
	}
	parseXML(t, "page", b.Bytes())
}

func TestUnitRatio(t *testing.T) {
	if got := UnitRatio.Format(0.975); got != "0.97" && got != "0.98" {
		t.Errorf("UnitRatio.Format(0.975) = %q", got)
	}
	lo, _ := extent{min: 0.2, max: 0.9, n: 2}.axisRange(UnitRatio, true)
	if lo != 0 {
		t.Errorf("ratio axis starts at %v, want 0", lo)
	}
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
