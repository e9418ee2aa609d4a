package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestReadableWidth(t *testing.T) {
	for _, tc := range []struct {
		name string
		svg  string
		want float64
	}{
		// A chart: 720 pt (960 px) wide, 8 pt marker labels: 900 px keeps
		// them 10 px high.
		{"chart", `<svg width="720pt" height="300pt" viewBox="0 0 720 300"><text style="font-size:9px">a</text><text style="fill:red;font-size:8px">b</text></svg>`, 900},
		// A segment map: user units are pixels, 10 px text needs no shrink.
		{"segment map", `<svg width="720" height="64" viewBox="0 0 720 64" font-size="10"><text>a</text></svg>`, 720},
		{"no viewBox", `<svg width="400px"><text font-size="5">a</text></svg>`, 400},
		{"capped at its own width", `<svg width="100" viewBox="0 0 200 50"><text font-size="4">a</text></svg>`, 100},
		{"large text", `<svg width="720pt" viewBox="0 0 720 300"><text font-size="20">a</text></svg>`, 360},
		{"comma viewBox", `<svg viewBox="0,0,300,100"><text font-size="6">a</text></svg>`, 500},
		{"no text", `<svg width="720pt" viewBox="0 0 720 300"><path d="M0 0"/></svg>`, 0},
		{"no size", `<svg><text font-size="9">a</text></svg>`, 0},
		{"percent width", `<svg width="100%"><text font-size="9">a</text></svg>`, 0},
		{"not XML", `<svg width="720" <text`, 0},
	} {
		if got := readableWidth([]byte(tc.svg)); got != tc.want {
			t.Errorf("%s: readableWidth = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Every chart of a page gets the width that keeps its smallest text
// MinTextPx high as its figure's --readable, which the style sheet makes
// the svg's min-width; table cells carry their column's header for the
// narrow layout.
func TestPageReadableOnPhone(t *testing.T) {
	var buf bytes.Buffer
	if err := samplePage().WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	readable := 0
	for _, fig := range strings.Split(out, "<figure")[1:] {
		fig, _, _ = strings.Cut(fig, "</figure>")
		has := strings.HasPrefix(fig, ` style="--readable:`)
		if has != strings.Contains(fig, "<text") {
			t.Errorf("a figure with text must carry --readable, one without none: %.120s", fig)
		}
		if has {
			readable++
		}
	}
	if readable == 0 {
		t.Error("no figure carries --readable")
	}
	for _, want := range []string{"min-width:var(--readable,0)", "figure{margin:16px 0;overflow-x:auto}", "@media (max-width:600px)",
		"content:attr(data-label)", `<td data-label="`} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func FuzzReadableWidth(f *testing.F) {
	for _, s := range []string{`<svg width="720pt" viewBox="0 0 720 300"><text style="font-size:8px">a</text></svg>`,
		`<svg width="1e308" viewBox="0 0 1e308 1"><text font-size="1e-308">a</text></svg>`,
		`<svg viewBox="0 0 NaN 1"><text font-size="9">a</text></svg>`, `<svg`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, svg []byte) {
		if w := readableWidth(svg); w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			t.Errorf("readableWidth(%q) = %v", svg, w)
		}
	})
}
