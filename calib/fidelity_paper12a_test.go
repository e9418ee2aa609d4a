package calib

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// paperFig12aSVG holds the polylines of the paper's Fig. 12a (OPT-13B,
// ShareGPT) as drawn: the "d" attribute of each system's line in
// n1-sharegpt.svg, panel (a), of arXiv 2309.06180v1's HTML version (as
// copied in yanheng01/yanheng01.github.io @ 3f5a0ab4; red, orange, green
// and blue, the legend's Orca (Max), (Pow2), (Oracle) and vLLM), in the
// SVG's own coordinates (y up, under matrix(1,0,0,-1,0,214.43875)). The
// last vertex of each, at y 215.43875, is the line cut at the figure's
// edge on its way to a point past the drawn ones.
var paperFig12aSVG = map[string]string{
	"orca-max":    "106.74907 83.301769 120.883609 83.43407 135.01815 85.76823 149.15267 87.666469 162.03704 215.43875",
	"orca-pow2":   "113.81634 83.345928 149.15267 84.11976 163.2872 84.17057 184.489 90.53569 197.57845 215.43875",
	"orca-oracle": "113.81634 83.33054 149.15267 83.55691 184.489 84.24726 205.69081 87.8771 219.82535 96.814228 233.95987 122.52867 240.80513 215.43875",
	"vllm":        "219.82535 83.90756 255.16168 84.15076 290.49803 84.34775 290.49803 84.86498 325.83436 90.18124 332.9016 91.707729 347.03617 100.74906 361.1707 174.33419 367.62757 215.43875",
}

// The axes of panel (a): the ticks 0.0 and 0.5 req/s at x 78.48 and
// 149.15267, 0.0 and 1.0 s/token at y 80.81875 and 163.97875.
const (
	svgX0, svgXPerRate = 78.48, (149.15267 - 78.48) / 0.5
	svgY0, svgYPerSec  = 80.81875, 163.97875 - 80.81875
	svgEdge            = 215.43875
)

// paperPolyline returns a system's polyline in req/s and s/token, the cut
// vertex last, with a vertex that repeats its predecessor's rate (vLLM's
// two points at 1.5 req/s) kept once, at its second value, as a plotted
// line leaves it.
func paperPolyline(t *testing.T, sys string) (rates, lat []float64) {
	t.Helper()
	f := strings.Fields(paperFig12aSVG[sys])
	if len(f) == 0 || len(f)%2 != 0 {
		t.Fatalf("%s: polyline %q", sys, paperFig12aSVG[sys])
	}
	for i := 0; i < len(f); i += 2 {
		x, err1 := strconv.ParseFloat(f[i], 64)
		y, err2 := strconv.ParseFloat(f[i+1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: vertex %q %q", sys, f[i], f[i+1])
		}
		r, l := (x-svgX0)/svgXPerRate, (y-svgY0)/svgYPerSec
		if n := len(rates); n > 0 && math.Abs(r-rates[n-1]) < 1e-6 {
			lat[n-1] = l
			continue
		}
		rates, lat = append(rates, r), append(lat, l)
	}
	if y, _ := strconv.ParseFloat(f[len(f)-1], 64); y != svgEdge {
		t.Fatalf("%s: the last vertex is at y %g, want the figure's edge %g", sys, y, svgEdge)
	}
	return rates, lat
}

// TestPaperFig12aPolylines checks that the published Fig. 12a rates are
// where the paper's drawn lines cross 0.5 s/token, read by the page's own
// fidPolylineRate, and that paperFig12aGrid and paperFig12aCut are those
// lines' measured rates and cuts, the grid's continuation at its last
// spacing landing on or past the cut.
func TestPaperFig12aPolylines(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, f := range d.Figures {
		if f.Source == paperSource && f.Metric == "request_rate_at_slo" {
			want[f.Setup.System] = f.Value
		}
	}
	if len(want) != len(paperFig12aSVG) || len(paperFig12aGrid) != len(paperFig12aSVG) {
		t.Fatalf("published rates for %v, grids for %d systems, polylines for %d: want the same four", want, len(paperFig12aGrid), len(paperFig12aSVG))
	}
	for sys := range paperFig12aSVG {
		rates, lat := paperPolyline(t, sys)
		f := func(r float64) (float64, error) {
			i := slices.IndexFunc(rates, func(x float64) bool { return math.Abs(x-r) < 1e-9 })
			if i < 0 {
				t.Fatalf("%s: rate %g is not a vertex", sys, r)
			}
			return lat[i], nil
		}
		got, err := fidPolylineRate(rates, fig12aHi, fig12aSLO, 0, f)
		if err != nil {
			t.Fatal(err)
		}
		// The published figures carry two decimals.
		if math.Abs(got-want[sys]) > 0.005 {
			t.Errorf("%s: the drawn line crosses %g s/token at %.4f req/s, published %g", sys, fig12aSLO, got, want[sys])
		}
		measured := rates[:len(rates)-1]
		grid := paperFig12aGrid[sys]
		if len(grid) != len(measured) {
			t.Fatalf("%s: grid %v, the figure's measured rates %v", sys, grid, measured)
		}
		for i := range grid {
			if math.Abs(grid[i]-measured[i]) > 5e-4 {
				t.Errorf("%s: grid %v, the figure's measured rates %v", sys, grid, measured)
				break
			}
		}
		cut := rates[len(rates)-1]
		if math.Abs(paperFig12aCut[sys]-cut) > 5e-4 {
			t.Errorf("%s: cut %g, the figure's %.4f", sys, paperFig12aCut[sys], cut)
		}
		n := len(grid)
		if next := 2*grid[n-1] - grid[n-2]; next < cut-1e-9 {
			t.Errorf("%s: the grid's next rate %g lies before the line's cut at %.4f: the figure has a point there", sys, next, cut)
		}
	}
}

// TestFidPolylineRate checks the read-off: linear between the rates that
// bracket the target, continued at the last spacing, the first rate or hi
// at the ends, evaluated no further than the crossing, and below a convex
// curve's own crossing.
func TestFidPolylineRate(t *testing.T) {
	var calls []float64
	lin := func(r float64) (float64, error) { calls = append(calls, r); return r, nil }
	got, err := fidPolylineRate([]float64{1, 2}, 10, 3.5, 0, lin)
	if err != nil || math.Abs(got-3.5) > 1e-12 {
		t.Errorf("linear curve: %g, %v: want 3.5", got, err)
	}
	if !slices.Equal(calls, []float64{1, 2, 3, 4}) {
		t.Errorf("evaluated at %v: want 1, 2, then the continuation 3, 4", calls)
	}
	step := func(r float64) (float64, error) {
		if r < 0.6 {
			return 0.1, nil
		}
		return 1.5, nil
	}
	if got, _ := fidPolylineRate([]float64{0.2, 0.3, 0.4, 0.5}, 4, 0.5, 0, step); math.Abs(got-(0.5+0.1*0.4/1.4)) > 1e-12 {
		t.Errorf("step curve: %g: want the chord from (0.5, 0.1) to the continuation (0.6, 1.5)", got)
	}
	// Over the level at the first rate already: no crossing on the line,
	// so the curve's own crossing (below), never the first rate, at which
	// the SLO is missed; capped at the first rate.
	if got, _ := fidPolylineRate([]float64{1, 2}, 10, 0.5, 0.5, lin); got != 0.5 {
		t.Errorf("reached at the first rate: %g, want the curve's own crossing 0.5", got)
	}
	if got, _ := fidPolylineRate([]float64{1, 2}, 10, 0.5, 3, lin); got != 1 {
		t.Errorf("reached at the first rate, below 3: %g, want it capped at 1", got)
	}
	if got, _ := fidPolylineRate([]float64{1, 2}, 4.5, 100, 0, lin); got != 4.5 {
		t.Errorf("never reached: %g, want hi 4.5", got)
	}
	for _, g := range [][]float64{nil, {1}, {0, 1}, {1, 1}, {2, 1}} {
		if _, err := fidPolylineRate(g, 4, 0.5, 0, lin); err == nil {
			t.Errorf("grid %v: no error", g)
		}
	}
	// A normalized latency that grows ever faster towards saturation at
	// 0.7 req/s: its chords cross the level before the curve does.
	convex := func(r float64) (float64, error) { return 0.03 + 0.01/(1-math.Min(r, 0.699)/0.7), nil }
	chord, _ := fidPolylineRate([]float64{0.2, 0.3, 0.4, 0.5}, 4, 0.5, 0, convex)
	own, _ := fidBisectRate(0.05, 4, 1e-4, 0.5, convex)
	if !(chord < own-0.005) {
		t.Errorf("convex curve: read-off %g, own crossing %g: want the read-off below", chord, own)
	}
}

// TestPaperRowsReadOff checks that the page's Fig. 12a rate rows carry the
// rate read as the paper's figure reads (PaperReport.ReadOff), not the
// model's own crossing, for a system the grid has.
func TestPaperRowsReadOff(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	var fig *Figure
	for i, f := range d.Figures {
		if f.Source == paperSource && f.Metric == "request_rate_at_slo" && f.Setup.System == "orca-max" {
			fig = &d.Figures[i]
		}
	}
	if fig == nil {
		t.Fatal("no published Fig. 12a rate for orca-max")
	}
	ps := &PaperSetup{Scenario: "test", GPU: "a100-40g", Systems: []PaperSystem{{Name: "orca-max"}},
		Workloads: []PaperWorkload{{Label: "test"}}}
	pr := &PaperReport{Setup: ps, Results: [][][numTimings]PaperResult{{{}}}, MeanIn: []float64{1}, MeanOut: []float64{1},
		Rates: [][numTimings]float64{{0.68, 0.78}}, ReadOff: [][numTimings]float64{{0.64, 0.74}}}
	row := &FidelityRow{Figure: fig}
	fidPaperRows(&FidelityReport{Rows: []*FidelityRow{row}, Paper: pr})
	if row.Skip != "" || row.Value != [numTimings]float64{0.64, 0.74} || !row.OK[TimingProfile] || !row.OK[TimingRoofline] {
		t.Errorf("row %+v (skip %q): want the read-off 0.64 / 0.74", row.Value, row.Skip)
	}
	if !strings.Contains(row.Note, "0.2, 0.3, 0.4, 0.5 req/s") || !strings.Contains(row.Note, "0.68") {
		t.Errorf("note %q: want the paper's rates and the model's own crossing", row.Note)
	}
}

// TestFig12aReadOffOverAtFirstRate: a system whose normalized latency is
// over the SLO already at the grid's first rate has no crossing on the
// figure's line; fig12a reads its bisected rate, not the first rate, at
// which the SLO is missed.
func TestFig12aReadOffOverAtFirstRate(t *testing.T) {
	ps := &PaperSetup{Scenario: "test", Systems: []PaperSystem{{Name: "orca-max"}}}
	rep := &PaperReport{Setup: ps, normAt: func(_ int, _ FidelityTiming, rate float64) (float64, error) {
		return 4 * rate, nil // 0.5 s/token at 0.125 req/s; 0.8 at the grid's first rate, 0.2
	}}
	if err := fig12a(context.Background(), ps, rep, 1); err != nil {
		t.Fatal(err)
	}
	for tm := range numTimings {
		if got, own := rep.ReadOff[0][tm], rep.Rates[0][tm]; math.Abs(own-0.125) > fig12aTol || got != own {
			t.Errorf("timing %d: read-off %g, own crossing %g: want both at 0.125", tm, got, own)
		}
	}
}
