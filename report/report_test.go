package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// allowedURLs are the only URLs output may contain: namespace names,
// which are identifiers and never fetched.
var allowedURLs = map[string]bool{
	"http://www.w3.org/2000/svg":   true,
	"http://www.w3.org/1999/xlink": true,
	"http://www.w3.org/1999/xhtml": true,
}

var urlRE = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"'<>)]*`)

func checkNoExternalRefs(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, m := range urlRE.FindAll(b, -1) {
		if !allowedURLs[string(m)] {
			t.Errorf("%s: external URL %q", what, m)
		}
	}
	low := bytes.ToLower(b)
	for _, bad := range []string{"<script", "@font-face", "@import", "url(", "<?xml", "<!doctype svg", "src=", "<link", "<iframe", "<object", "<embed"} {
		if bytes.Contains(low, []byte(bad)) {
			t.Errorf("%s: contains %q", what, bad)
		}
	}
}

// xmlTree parses b strictly and returns its elements in document order
// with their text content.
type elem struct {
	name  string
	attrs map[string]string
	text  string
}

func parseXML(t *testing.T, what string, b []byte) []elem {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var out []elem
	var stack []int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed: %v", what, err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			e := elem{name: v.Name.Local, attrs: map[string]string{}}
			for _, a := range v.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, i := range stack {
				out[i].text += string(v)
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("%s: unclosed elements", what)
	}
	return out
}

func count(es []elem, name string) int {
	n := 0
	for _, e := range es {
		if e.name == name {
			n++
		}
	}
	return n
}

func first(es []elem, name string) (elem, bool) {
	for _, e := range es {
		if e.name == name {
			return e, true
		}
	}
	return elem{}, false
}

func allCharts() []LineChart {
	var cs []LineChart
	for _, s := range samplePage().Sections {
		cs = append(cs, s.Charts...)
	}
	return cs
}

func TestSVGStructure(t *testing.T) {
	for _, c := range allCharts() {
		svg, err := c.SVG()
		if err != nil {
			t.Fatalf("%q: %v", c.Title, err)
		}
		if !bytes.HasPrefix(svg, []byte("<svg")) {
			t.Errorf("%q: SVG does not start with <svg: %q", c.Title, svg[:min(40, len(svg))])
		}
		checkNoExternalRefs(t, c.Title, svg)
		if bytes.Contains(svg, []byte("font-family:Liberation")) || !bytes.Contains(svg, []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")) {
			t.Errorf("%q: text lacks the font fallback stack", c.Title)
		}
		es := parseXML(t, c.Title, svg)
		if es[0].name != "svg" {
			t.Fatalf("%q: root is %q", c.Title, es[0].name)
		}
		if ti, ok := first(es, "title"); !ok || ti.text != c.Title {
			t.Errorf("%q: <title> = %q", c.Title, ti.text)
		}
		if count(es, "text") < 3 {
			t.Errorf("%q: only %d <text> elements", c.Title, count(es, "text"))
		}
		for _, e := range es {
			if _, ok := e.attrs["id"]; ok {
				t.Errorf("%q: element <%s> has an id, which could clash when inlined", c.Title, e.name)
			}
		}
	}
}

func TestSVGEscapesText(t *testing.T) {
	title := `<b onclick="x()">A & B's</b>`
	c := LineChart{
		Title: title, XLabel: "<x>", YLabel: "&y",
		Series:  []Series{{Name: "<s>&", X: []float64{0, 1}, Y: []float64{1, 2}}},
		Markers: []Marker{{X: 0.5, Label: "<OOM>"}},
	}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"<b", "<x>", "<s>", "<OOM>", "& "} {
		if bytes.Contains(svg, []byte(raw)) {
			t.Errorf("SVG contains unescaped %q", raw)
		}
	}
	es := parseXML(t, "escape", svg)
	var texts []string
	for _, e := range es {
		if e.name == "text" || e.name == "title" {
			texts = append(texts, e.text)
		}
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{title, "<x>", "&y", "<s>&", "<OOM>"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q not found in %q", want, all)
		}
	}
	if es[0].attrs["aria-label"] != title {
		t.Errorf("aria-label = %q", es[0].attrs["aria-label"])
	}
}

func TestDeterministic(t *testing.T) {
	for _, c := range allCharts() {
		a, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%q: SVG differs between runs", c.Title)
		}
	}
	c := allCharts()[0]
	var p1, p2 bytes.Buffer
	if err := c.PNG(&p1); err != nil {
		t.Fatal(err)
	}
	if err := c.PNG(&p2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
		t.Error("PNG differs between runs")
	}
	var h1, h2 bytes.Buffer
	if err := samplePage().WriteHTML(&h1); err != nil {
		t.Fatal(err)
	}
	if err := samplePage().WriteHTML(&h2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h1.Bytes(), h2.Bytes()) {
		t.Error("HTML differs between runs")
	}
}

func TestPNGSize(t *testing.T) {
	base := LineChart{Title: "t", Series: []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{0, 4, 1}}}}
	for _, tc := range []struct {
		w, h, scale float64
		px, py      int
	}{
		{0, 0, 1, 720, 300},
		{400, 200, 1, 400, 200},
		{400, 200, 2, 800, 400},
	} {
		c := base
		c.Width, c.Height = tc.w, tc.h
		var buf bytes.Buffer
		if err := c.PNGScaled(&buf, tc.scale); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != tc.px || b.Dy() != tc.py {
			t.Errorf("%v×%v@%v: got %v×%v, want %v×%v", tc.w, tc.h, tc.scale, b.Dx(), b.Dy(), tc.px, tc.py)
		}
		// Not blank: the series colour is somewhere.
		found := false
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y && !found; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if r>>8 < 0x60 && g>>8 > 0x60 && g>>8 < 0x90 && bl>>8 > 0x90 {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("%v×%v: no pixel of the first series colour", tc.w, tc.h)
		}
	}
	var buf bytes.Buffer
	if err := base.PNGScaled(&buf, 0); err == nil {
		t.Error("scale 0 accepted")
	}
}

func TestErrors(t *testing.T) {
	ok := []Series{{X: []float64{0, 1}, Y: []float64{0, 1}}}
	for name, c := range map[string]LineChart{
		"mismatch":   {Series: []Series{{Name: "bad", X: []float64{0, 1, 2}, Y: []float64{0, 1}}}},
		"marker NaN": {Series: ok, Markers: []Marker{{X: math.NaN(), Label: "x"}}},
		"marker Inf": {Series: ok, Markers: []Marker{{X: math.Inf(1)}}},
		"XUnit":      {Series: ok, XUnit: Unit(9)},
		"YUnit":      {Series: ok, YUnit: Unit(-1)},
		"negative":   {Series: ok, Width: -5},
		"tiny":       {Series: ok, Width: 10, Height: 10},
		"NaN size":   {Series: ok, Height: math.NaN()},
	} {
		if _, err := c.SVG(); err == nil {
			t.Errorf("%s: SVG: no error", name)
		}
		if err := c.PNG(io.Discard); err == nil {
			t.Errorf("%s: PNG: no error", name)
		}
	}
	c := LineChart{Title: "bad", Series: []Series{{Name: "s", X: []float64{1}, Y: nil}}}
	err := Page{Sections: []Section{{Heading: "h", Charts: []LineChart{c}}}}.WriteHTML(io.Discard)
	if err == nil || !strings.Contains(err.Error(), "len(X)=1 != len(Y)=0") {
		t.Errorf("WriteHTML: err = %v", err)
	}
}

func TestEdgeCases(t *testing.T) {
	nan := math.NaN()
	for name, c := range map[string]LineChart{
		"no series":      {},
		"empty series":   {Series: []Series{{Name: "e"}}},
		"single point":   {Series: []Series{{Name: "p", X: []float64{3}, Y: []float64{7}}}},
		"all equal":      {YUnit: UnitBytes, Series: []Series{{X: []float64{0, 1, 2}, Y: []float64{5, 5, 5}}}},
		"all zero share": {YUnit: UnitShare, Series: []Series{{X: []float64{0, 1}, Y: []float64{0, 0}}}},
		"all NaN":        {Series: []Series{{X: []float64{0, 1}, Y: []float64{nan, nan}}}},
		"Inf":            {Series: []Series{{X: []float64{0, 1, 2}, Y: []float64{1, math.Inf(1), 2}}}},
		"negative":       {YUnit: UnitBytes, Series: []Series{{X: []float64{0, 1, 2}, Y: []float64{-5 << 20, 3 << 20, 1}}}},
		"markers only":   {Markers: []Marker{{X: 5, Label: "OOM"}}},
		"tiny values":    {XUnit: UnitSeconds, Series: []Series{{X: []float64{0, 1e-9, 2e-9}, Y: []float64{1e-12, 2e-12, 0}}}},
		"huge values":    {YUnit: UnitBytes, Series: []Series{{X: []float64{0, 1}, Y: []float64{0, 1 << 62}}}},
		"same X":         {Series: []Series{{X: []float64{2, 2, 2}, Y: []float64{1, 2, 3}}}},
		"unsorted X":     {Series: []Series{{X: []float64{3, 1, 2}, Y: []float64{1, 2, 3}}}},
		"many series":    {Series: manySeries(60), Height: 200},
	} {
		svg, err := c.SVG()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		parseXML(t, name, svg)
		checkNoExternalRefs(t, name, svg)
		if err := c.PNG(io.Discard); err != nil {
			t.Errorf("%s: PNG: %v", name, err)
		}
	}
}

func TestNaNBreaksLine(t *testing.T) {
	c := LineChart{Series: []Series{{X: []float64{0, 1, 2, 3, 4, 5}, Y: []float64{1, 2, math.NaN(), 3, 4, 1}}}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	// Two separate polylines in the series colour.
	n := strings.Count(string(svg), "stroke:#4E79A7")
	if n != 2 {
		t.Errorf("got %d paths in the series colour, want 2", n)
	}
}

func TestDownsample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1_000_003
	s := Series{Name: "big", X: make([]float64, n), Y: make([]float64, n)}
	for i := range n {
		s.X[i] = float64(i)
		s.Y[i] = rng.NormFloat64()
	}
	s.Y[123457] = 1e9  // a spike
	s.Y[765431] = -1e9 // a dip
	for i := 500000; i < 500100; i++ {
		s.Y[i] = math.NaN()
	}
	d := Downsample(s, MaxPointsPerSeries)
	if len(d.X) > MaxPointsPerSeries || len(d.X) != len(d.Y) {
		t.Fatalf("len = %d/%d, want ≤ %d", len(d.X), len(d.Y), MaxPointsPerSeries)
	}
	if d.Name != "big" {
		t.Errorf("name %q", d.Name)
	}
	has := func(x, y float64) bool {
		for i := range d.X {
			if d.X[i] == x && (d.Y[i] == y || math.IsNaN(y) && math.IsNaN(d.Y[i])) {
				return true
			}
		}
		return false
	}
	for _, i := range []int{123457, 765431, 0, n - 1, 500000} {
		if !has(s.X[i], s.Y[i]) {
			t.Errorf("point %d (%v, %v) dropped", i, s.X[i], s.Y[i])
		}
	}
	// Output is a subsequence of the input, in order.
	for i := 1; i < len(d.X); i++ {
		if !(d.X[i] > d.X[i-1]) {
			t.Fatalf("X not increasing at %d: %v then %v", i, d.X[i-1], d.X[i])
		}
	}
	d2 := Downsample(s, MaxPointsPerSeries)
	for i := range d.X {
		if d.X[i] != d2.X[i] || !(d.Y[i] == d2.Y[i] || math.IsNaN(d.Y[i]) && math.IsNaN(d2.Y[i])) {
			t.Fatal("Downsample not deterministic")
		}
	}
	// Short series are untouched; tiny limits are raised to 5.
	short := Series{X: []float64{1, 2, 3}, Y: []float64{3, 2, 1}}
	if got := Downsample(short, 2000); len(got.X) != 3 {
		t.Errorf("short series changed: %v", got)
	}
	if got := Downsample(s, 1); len(got.X) > 5 || !slicesContain(got.Y, 1e9) || !slicesContain(got.Y, -1e9) {
		t.Errorf("Downsample(s, 1) = %v", got.Y)
	}
}

func slicesContain(v []float64, x float64) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

func TestLargeSeriesIsCheap(t *testing.T) {
	n := 2_000_000
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range n {
		x[i] = float64(i)
		y[i] = math.Sin(float64(i) / 1000)
	}
	c := LineChart{Series: []Series{{Name: "a", X: x, Y: y}, {Name: "b", X: x, Y: x}}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	if len(svg) > 150_000 {
		t.Errorf("SVG of 2×2M points is %d bytes", len(svg))
	}
}

func TestUnitFormat(t *testing.T) {
	for _, tc := range []struct {
		u    Unit
		v    float64
		want string
	}{
		{UnitBytes, 0, "0 B"},
		{UnitBytes, 512, "512 B"},
		{UnitBytes, 1536, "1.5 KiB"},
		{UnitBytes, 3 << 30, "3 GiB"},
		{UnitBytes, 80 << 30, "80 GiB"},
		{UnitBytes, -(2 << 20), "-2 MiB"},
		{UnitSeconds, 0.0015, "1.5 ms"},
		{UnitSeconds, 2e-7, "200 ns"},
		{UnitSeconds, 90, "90 s"},
		{UnitSeconds, 600, "10 min"},
		{UnitSeconds, 36000, "10 h"},
		{UnitShare, 0.25, "25%"},
		{UnitShare, 0.123, "12.3%"},
		{UnitNone, 42, "42"},
		{UnitNone, 12345, "12.35k"},
		{UnitNone, 3e6, "3M"},
	} {
		if got := tc.u.Format(tc.v); got != tc.want {
			t.Errorf("%v.Format(%v) = %q, want %q", tc.u, tc.v, got, tc.want)
		}
	}
}

func TestTicks(t *testing.T) {
	labels := func(u Unit, n int, lo, hi float64) []string {
		var out []string
		for _, tk := range (unitTicker{u: u, n: n}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		u      Unit
		lo, hi float64
		want   string
	}{
		{UnitBytes, 0, 80 << 30, "0 GiB,20 GiB,40 GiB,60 GiB,80 GiB"},
		{UnitShare, 0, 1, "0%,25%,50%,75%,100%"},
		{UnitSeconds, 0, 0.01, "0.0 ms,2.5 ms,5.0 ms,7.5 ms,10.0 ms"},
		{UnitNone, -1, 1, "-1.0,-0.5,0.0,0.5,1.0"},
	} {
		got := strings.Join(labels(tc.u, 4, tc.lo, tc.hi), ",")
		if got != tc.want {
			t.Errorf("%v [%v, %v]: %s, want %s", tc.u, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestConcurrentRendering(t *testing.T) {
	cs := allCharts()
	done := make(chan error, len(cs)*2)
	for _, c := range cs {
		go func() { _, err := c.SVG(); done <- err }()
		go func() { done <- c.PNG(io.Discard) }()
	}
	for range len(cs) * 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
