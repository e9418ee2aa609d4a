package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Default chart size in points, used when LineChart.Width or Height is 0.
const (
	DefaultWidth  = 720.0
	DefaultHeight = 300.0
)

// Series is one line: Y over X (same length; NaN breaks the line).
//
// A point whose X or Y is NaN or ±Inf is not drawn and breaks the line
// there. A run of one finite point between breaks is drawn as a dot.
type Series struct {
	Name string
	X, Y []float64
}

// Marker is a vertical line at X with a short label (OOM, preemption...).
// Count is how many events the marker stands for (0 counts as 1), so a
// caller can bin thousands of events into a few markers and the labels
// still add up: markers close together share one label, "oom ×37".
type Marker struct {
	X     float64
	Label string
	Count int
}

// LineChart is a chart of one or more series over a shared X axis, with
// optional vertical markers. The zero value of every field has a usable
// default; see the package documentation.
type LineChart struct {
	Title, XLabel, YLabel string
	XUnit, YUnit          Unit
	Series                []Series
	Markers               []Marker
	Width, Height         float64 // points; 0 → DefaultWidth×DefaultHeight
}

// SVG renders the chart as a standalone SVG document (no XML prolog, so it
// can also be inlined in HTML as is). The output is deterministic: the same
// chart gives the same bytes. It references no font file or URL; text uses
// the font stack 'Liberation Sans', Arial, Helvetica, sans-serif, whose
// metrics match the ones used for layout.
func (c LineChart) SVG() ([]byte, error) {
	c = c.printable()
	w, h, err := c.size()
	if err != nil {
		return nil, err
	}
	cv := vgsvg.New(vg.Length(w), vg.Length(h))
	if err := c.draw(svgCanvas{cv}); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: writing SVG: %w", err)
	}
	return cleanSVG(buf.Bytes(), c.Title), nil
}

// PNG renders the chart as a PNG image at one pixel per point (72 dpi), so
// a 720×300 chart gives a 720×300 image. Use PNGScaled for high-DPI output.
func (c LineChart) PNG(w io.Writer) error {
	return c.PNGScaled(w, 1)
}

// PNGScaled renders the chart as a PNG image of scale pixels per point:
// scale 2 turns a 720×300 chart into a 1440×600 image with the same layout.
func (c LineChart) PNGScaled(w io.Writer, scale float64) error {
	if !(scale > 0) || math.IsInf(scale, 0) || scale > 16 {
		return fmt.Errorf("report: PNG scale %v out of range (0, 16]", scale)
	}
	c = c.printable()
	cw, ch, err := c.size()
	if err != nil {
		return err
	}
	cv := vgimg.NewWith(
		vgimg.UseWH(vg.Length(cw), vg.Length(ch)),
		vgimg.UseDPI(int(math.Round(72*scale))),
		vgimg.UseBackgroundColor(color.White),
	)
	if err := c.draw(cv); err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(w); err != nil {
		return fmt.Errorf("report: writing PNG: %w", err)
	}
	return nil
}

// printable returns c with every text it draws (title, axis labels, series
// names, marker labels) through untrusted.Printable, so a name read from an input
// file shows its control characters as escapes instead of breaking the SVG's
// XML or the text around it. Slices are copied only when a string changes.
func (c LineChart) printable() LineChart {
	c.Title, c.XLabel, c.YLabel = untrusted.Printable(c.Title), untrusted.Printable(c.XLabel), untrusted.Printable(c.YLabel)
	c.Series = printableField(c.Series, func(s *Series) *string { return &s.Name })
	c.Markers = printableField(c.Markers, func(m *Marker) *string { return &m.Label })
	return c
}

// printableField returns xs, or, when untrusted.Printable changes the string
// field of one of its elements, a copy of xs with that field of every
// element through untrusted.Printable.
func printableField[T any](xs []T, field func(*T) *string) []T {
	for i := range xs {
		if f := field(&xs[i]); untrusted.Printable(*f) != *f {
			out := slices.Clone(xs)
			for j := i; j < len(out); j++ {
				f := field(&out[j])
				*f = untrusted.Printable(*f)
			}
			return out
		}
	}
	return xs
}

func (c LineChart) size() (w, h float64, err error) {
	w, h = c.Width, c.Height
	if w == 0 {
		w = DefaultWidth
	}
	if h == 0 {
		h = DefaultHeight
	}
	// Small enough to lay out axes and a title, large enough to not be a
	// typo for millimetres or pixels at absurd scale.
	if !(w >= 100 && w <= 20000) || !(h >= 80 && h <= 20000) {
		return 0, 0, fmt.Errorf("report: chart %q: size %v×%v pt out of range (width 100..20000, height 80..20000)", c.Title, c.Width, c.Height)
	}
	return w, h, nil
}

// validate checks the chart's inputs.
func (c LineChart) validate() error {
	if !c.XUnit.valid() {
		return fmt.Errorf("report: chart %q: unknown XUnit %d", c.Title, int(c.XUnit))
	}
	if !c.YUnit.valid() {
		return fmt.Errorf("report: chart %q: unknown YUnit %d", c.Title, int(c.YUnit))
	}
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("report: chart %q: series %d (%q): len(X)=%d != len(Y)=%d", c.Title, i, s.Name, len(s.X), len(s.Y))
		}
	}
	for i, m := range c.Markers {
		if math.IsNaN(m.X) || math.IsInf(m.X, 0) {
			return fmt.Errorf("report: chart %q: marker %d (%q): X is %v", c.Title, i, m.Label, m.X)
		}
	}
	return nil
}

// Fonts: Liberation Sans ships with gonum (pure Go, no file access) and is
// metric-compatible with Arial, which the SVG names as a fallback.
var (
	sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	boldFont = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// palette is Tableau 10: distinct hues that stay distinguishable for the
// common forms of colour blindness. Past ten series the colours repeat with
// a dash pattern.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0xba, 0xb0, 0xac, 0xff}, // grey
}

var dashes = [][]vg.Length{nil, {6, 3}, {2, 2}, {8, 3, 2, 3}}

func seriesStyle(i int) draw.LineStyle {
	return draw.LineStyle{
		Color:  palette[i%len(palette)],
		Width:  vg.Points(1.5),
		Dashes: dashes[(i/len(palette))%len(dashes)],
	}
}

var (
	gridColor   = color.Gray{0xe0}
	axisColor   = color.Gray{0x55}
	textColor   = color.Gray{0x22}
	markerColor = color.RGBA{0xb2, 0x18, 0x2b, 0xff}
)

func textStyle(f font.Font, size vg.Length) text.Style {
	return text.Style{
		Color:   textColor,
		Font:    font.From(f, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

// draw lays the chart out on cv.
func (c LineChart) draw(cv vg.CanvasSizer) error {
	if err := c.validate(); err != nil {
		return err
	}
	series := make([]Series, len(c.Series))
	for i, s := range c.Series {
		series[i] = Downsample(s, MaxPointsPerSeries)
	}

	p := plot.New()
	p.BackgroundColor = color.White
	p.Title.Text = c.Title
	p.Title.TextStyle.Font = font.From(boldFont, 13)
	p.Title.TextStyle.Color = textColor
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansFont, 10)
		ax.Label.TextStyle.Color = textColor
		ax.Tick.Label.Font = font.From(sansFont, 9)
		ax.Tick.Label.Color = textColor
		ax.Tick.Color = axisColor
		ax.LineStyle.Color = axisColor
		ax.Padding = vg.Points(2)
	}
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	w, h, err := c.size()
	if err != nil {
		return err
	}
	p.X.Tick.Marker = unitTicker{u: c.XUnit, n: max(3, int(w/110))}
	p.Y.Tick.Marker = unitTicker{u: c.YUnit, n: max(3, int(h/60))}

	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	grid.Vertical.Width = vg.Points(0.5)
	grid.Horizontal.Width = vg.Points(0.5)
	p.Add(grid)

	var ex, ey extent
	drawn := make([]bool, len(series))
	for i, s := range series {
		st := seriesStyle(i)
		for _, seg := range segments(s) {
			drawn[i] = true
			for _, pt := range seg {
				ex.add(pt.X)
				ey.add(pt.Y)
			}
			if len(seg) == 1 {
				sc, err := plotter.NewScatter(seg)
				if err != nil {
					return fmt.Errorf("report: chart %q: series %q: %w", c.Title, s.Name, err)
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: st.Color, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
				p.Add(sc)
				continue
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return fmt.Errorf("report: chart %q: series %q: %w", c.Title, s.Name, err)
			}
			l.LineStyle = st
			p.Add(l)
		}
	}
	entries := legendEntries(c.Series, drawn, ey, h)
	if len(c.Markers) > 0 {
		for _, m := range c.Markers {
			ex.add(m.X)
		}
		p.Add(markers{ms: c.Markers, text: textStyle(sansFont, 8), tag: tagOf(cv)})
	}
	if !ey.ok() {
		// Nothing to draw: an empty frame with a note.
		p.Add(noData{text: textStyle(sansFont, 11)})
	}
	p.X.Min, p.X.Max = ex.axisRange(c.XUnit, false)
	p.Y.Min, p.Y.Max = ey.axisRange(c.YUnit, true)
	if labelled(c.Markers) && ey.ok() {
		// Room above the data for the three rows of marker labels
		// (about 33 points of a plot some 70% of the chart's height).
		p.Y.Max += (p.Y.Max - p.Y.Min) * 33 / (0.7*h - 33)
	}

	dc := draw.New(cv)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	dc = draw.Crop(dc, vg.Points(6), -vg.Points(12), vg.Points(4), -vg.Points(6))
	lg := legendLayout(entries, textStyle(sansFont, 9), dc.Max.X-dc.Min.X, (dc.Max.Y-dc.Min.Y)*0.4)
	p.Draw(draw.Crop(dc, 0, 0, lg.height, 0))
	tag := tagOf(cv)
	tag(dc, "legend")
	lg.draw(draw.Crop(dc, 0, 0, 0, -(dc.Max.Y - dc.Min.Y - lg.height)))
	tag(dc, "")
	return nil
}

// segments splits s at non-finite points into runs of finite points.
func segments(s Series) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range s.X {
		x, y := s.X[i], s.Y[i]
		if !finite(x) || !finite(y) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: x, Y: y})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// extent is the range of finite values seen.
type extent struct {
	min, max float64
	n        int
}

func (e *extent) add(v float64) {
	if !finite(v) {
		return
	}
	if e.n == 0 || v < e.min {
		e.min = v
	}
	if e.n == 0 || v > e.max {
		e.max = v
	}
	e.n++
}

func (e extent) ok() bool { return e.n > 0 }

// axisRange picks the axis range for the data: bytes and shares start at
// zero when all values are non-negative; a constant value gets some room
// around it; Y gets 5% headroom so a line at its maximum is not drawn on
// the frame.
func (e extent) axisRange(u Unit, isY bool) (lo, hi float64) {
	if !e.ok() {
		return 0, 1
	}
	lo, hi = e.min, e.max
	if u.fromZero() && isY && lo >= 0 {
		lo = 0
	}
	if lo == hi {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		if lo == 0 && u.fromZero() && isY {
			return 0, pad
		}
		return lo - pad, hi + pad
	}
	if isY {
		span := hi - lo
		hi += span * 0.05
		if lo != 0 {
			lo -= span * 0.05
		}
	}
	return lo, hi
}

// markers draws vertical lines with labels. Markers closer together than
// markerCluster share one label that counts them by kind ("oom ×37,
// preempt ×2"); labels are placed on the first of three rows where they
// overlap no other label, and a label that fits on none is left out (its
// lines stay). Where markers are denser than one per markerDense the lines
// are thin and translucent, so the series under them stay visible.
type markers struct {
	ms   []Marker
	text text.Style
	tag  func(draw.Canvas, string)
}

const (
	markerCluster  = vg.Length(40) // points: markers within this of a label's first share it
	markerDense    = vg.Length(4)  // points per marker below which lines are drawn faint
	markerLabelGap = vg.Length(3)  // points between labels on one row
)

// labelled reports whether any marker has a label.
func labelled(ms []Marker) bool {
	for _, m := range ms {
		if m.Label != "" {
			return true
		}
	}
	return false
}

// markerCount is a marker's Count, at least 1.
func markerCount(m Marker) int { return max(m.Count, 1) }

func (m markers) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	type placed struct {
		x  vg.Length
		mk Marker
	}
	var vis []placed
	for _, mk := range m.ms {
		x := trX(mk.X)
		if x < c.Min.X-0.5 || x > c.Max.X+0.5 {
			continue
		}
		vis = append(vis, placed{x, mk})
	}
	sort.SliceStable(vis, func(i, j int) bool { return vis[i].x < vis[j].x })
	ls := draw.LineStyle{Color: markerColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	if len(vis) > 0 && (c.Max.X-c.Min.X)/vg.Length(len(vis)) < markerDense {
		ls = draw.LineStyle{Color: color.NRGBA{markerColor.R, markerColor.G, markerColor.B, 0x50}, Width: vg.Points(0.6)}
	}
	for _, v := range vis {
		c.StrokeLine2(ls, v.x, c.Min.Y, v.x, c.Max.Y)
	}
	st := m.text
	st.Color = markerColor
	st.YAlign = draw.YTop
	// A browser's text box is the font's ascent plus descent, a little
	// taller than gonum's line height: a point more keeps rows apart.
	rowH := st.Height("Mg") + vg.Points(1)
	var rows [3][][2]vg.Length // the spans taken on each row
	if m.tag != nil {
		m.tag(c, "marker-labels")
		defer m.tag(c, "")
	}
	for i := 0; i < len(vis); {
		if vis[i].mk.Label == "" {
			i++
			continue
		}
		// The cluster: labelled markers from vis[i] to within markerCluster.
		x0 := vis[i].x
		var kinds []string
		counts := map[string]int{}
		j := i
		for ; j < len(vis) && vis[j].x-x0 <= markerCluster; j++ {
			l := vis[j].mk.Label
			if l == "" {
				continue
			}
			if counts[l] == 0 {
				kinds = append(kinds, l)
			}
			counts[l] += markerCount(vis[j].mk)
		}
		i = j
		parts := make([]string, len(kinds))
		for k, l := range kinds {
			parts[k] = l
			if counts[l] > 1 {
				parts[k] = fmt.Sprintf("%s ×%d", l, counts[l])
			}
		}
		label := strings.Join(parts, ", ")
		s := st
		w := s.Width(label)
		lo := x0 + vg.Points(2)
		if lo+w > c.Max.X {
			s.XAlign = draw.XRight
			lo = max(c.Min.X, x0-vg.Points(2)-w)
		}
		hi := lo + w
		for r := range rows {
			free := true
			for _, sp := range rows[r] {
				if lo < sp[1]+markerLabelGap && sp[0] < hi+markerLabelGap {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			rows[r] = append(rows[r], [2]vg.Length{lo, hi})
			tx := lo
			if s.XAlign == draw.XRight {
				tx = hi
			}
			y := c.Max.Y - vg.Length(r)*rowH - vg.Points(1)
			// A white ground so that marker lines do not cross the text.
			var ground vg.Path
			ground.Move(vg.Point{X: lo - 1, Y: y})
			ground.Line(vg.Point{X: hi + 1, Y: y})
			ground.Line(vg.Point{X: hi + 1, Y: y - rowH})
			ground.Line(vg.Point{X: lo - 1, Y: y - rowH})
			ground.Close()
			c.SetColor(color.White)
			c.Fill(ground)
			c.FillText(s, vg.Point{X: tx, Y: y}, label)
			break
		}
	}
}

// noData writes "no data" in the middle of an empty chart.
type noData struct{ text text.Style }

func (n noData) Plot(c draw.Canvas, _ *plot.Plot) {
	st := n.text
	st.Color = color.Gray{0x88}
	st.XAlign = draw.XCenter
	st.YAlign = draw.YCenter
	c.FillText(st, c.Center(), "no data")
}

// legendEntry is one series in the legend.
type legendEntry struct {
	name  string
	style draw.LineStyle
}

// legend is a horizontal, wrapping legend drawn under the plot.
type legend struct {
	text   text.Style
	rows   [][]legendEntry
	more   int // entries left out for lack of room
	rowH   vg.Length
	height vg.Length
}

const (
	legendSwatch = vg.Length(18)
	legendGap    = vg.Length(4)
	legendSep    = vg.Length(14)
)

func (l legend) entryWidth(e legendEntry) vg.Length {
	return legendSwatch + legendGap + l.text.Width(e.name)
}

// legendLayout flows entries into rows of at most width, using at most
// maxH of height; entries that do not fit are summarised as "+N more".
func legendLayout(entries []legendEntry, st text.Style, width, maxH vg.Length) legend {
	l := legend{text: st, rowH: st.Height("Mg") + vg.Points(3)}
	if len(entries) == 0 {
		return l
	}
	maxRows := int((maxH - vg.Points(6)) / l.rowH)
	if maxRows < 1 {
		maxRows = 1
	}
	var row []legendEntry
	var used vg.Length
	for i, e := range entries {
		ew := l.entryWidth(e)
		if len(row) > 0 && used+legendSep+ew > width {
			if len(l.rows)+1 == maxRows {
				l.more = len(entries) - i
				break
			}
			l.rows = append(l.rows, row)
			row, used = nil, 0
		}
		if len(row) > 0 {
			used += legendSep
		}
		row = append(row, e)
		used += ew
	}
	if len(row) > 0 {
		l.rows = append(l.rows, row)
	}
	l.height = vg.Length(len(l.rows))*l.rowH + vg.Points(6)
	return l
}

func (l legend) draw(c draw.Canvas) {
	if len(l.rows) == 0 {
		return
	}
	st := l.text
	st.YAlign = draw.YCenter
	for r, row := range l.rows {
		y := c.Max.Y - vg.Points(6) - vg.Length(r)*l.rowH - l.rowH/2
		x := c.Min.X
		for _, e := range row {
			c.StrokeLine2(e.style, x, y, x+legendSwatch, y)
			c.FillText(st, vg.Point{X: x + legendSwatch + legendGap, Y: y}, e.name)
			x += l.entryWidth(e) + legendSep
		}
		if r == len(l.rows)-1 && l.more > 0 {
			c.FillText(st, vg.Point{X: x, Y: y}, fmt.Sprintf("+%d more", l.more))
		}
	}
}

// cleanSVG makes gonum's SVG self-contained and embeddable: it drops the
// XML prolog and generator comment (invalid or noise inside HTML), gives
// text a font stack of locally installed fonts instead of a bare family
// name, and adds a <title> for accessibility.
func cleanSVG(b []byte, title string) []byte {
	s := string(b)
	if strings.HasPrefix(s, "<?xml") {
		if i := strings.Index(s, "?>"); i >= 0 {
			s = strings.TrimLeft(s[i+2:], "\r\n")
		}
	}
	s = strings.Replace(s, "<!-- Generated by SVGo and Plotinum VG -->\n", "", 1)
	s = untag(s)
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	if i := strings.Index(s, "<svg"); i >= 0 {
		if j := strings.IndexByte(s[i:], '>'); j >= 0 {
			at := i + j
			attrs := ` role="img"`
			var t string
			if title != "" {
				attrs += ` aria-label="` + escapeHTML(title) + `"`
				t = "\n<title>" + escapeHTML(title) + "</title>"
			}
			s = s[:at] + attrs + ">" + t + s[at+1:]
		}
	}
	return []byte(s)
}

// legendEntries returns the legend: one entry per named series that is
// drawn (has a finite point), in drawing order. A series that a later one
// covers everywhere (same X, Y within a line's width on a chart h points
// tall, whose Y values span ey) cannot be seen, so it gets no entry of its
// own: the covering series' entry names it, "requested ≈ allocated".
func legendEntries(series []Series, drawn []bool, ey extent, h float64) []legendEntry {
	tol := 0.0
	if ey.ok() {
		tol = (ey.max - ey.min) * 1.5 / (0.75 * h)
	}
	coveredBy := make([]int, len(series))
	for i := range series {
		coveredBy[i] = -1
		if !drawn[i] {
			continue
		}
		for j := len(series) - 1; j > i; j-- {
			if drawn[j] && covers(series[j], series[i], tol) {
				coveredBy[i] = j
				break
			}
		}
	}
	// Follow chains (a under b under c) to the series on top.
	top := func(i int) int {
		for coveredBy[i] >= 0 {
			i = coveredBy[i]
		}
		return i
	}
	hidden := make([][]string, len(series))
	for i, s := range series {
		if coveredBy[i] >= 0 && s.Name != "" {
			t := top(i)
			hidden[t] = append(hidden[t], s.Name)
		}
	}
	var entries []legendEntry
	for i, s := range series {
		if !drawn[i] || coveredBy[i] >= 0 {
			continue
		}
		name := s.Name
		if len(hidden[i]) > 0 {
			if name == "" {
				name = "(unnamed)"
			}
			name += " ≈ " + strings.Join(hidden[i], " ≈ ")
		}
		if name != "" {
			entries = append(entries, legendEntry{name: name, style: seriesStyle(i)})
		}
	}
	return entries
}

// covers reports whether top, drawn over under, hides it: the same X, and
// wherever under has a finite point top has one within tol.
func covers(top, under Series, tol float64) bool {
	if len(top.X) != len(under.X) || len(top.Y) != len(under.Y) || len(top.X) != len(top.Y) {
		return false
	}
	for k := range under.X {
		if !finite(under.X[k]) || !finite(under.Y[k]) {
			continue
		}
		if top.X[k] != under.X[k] || !finite(top.Y[k]) || math.Abs(top.Y[k]-under.Y[k]) > tol {
			return false
		}
	}
	return true
}

// svgCanvas marks the canvas of LineChart.SVG, on which the legend and the
// marker labels are tagged (see tagOf).
type svgCanvas struct{ *vgsvg.Canvas }

// Sentinel fill colours that tagOf draws and cleanSVG turns into
// <g class="..."> and </g>; no chart draws them otherwise.
var tagColors = map[string]color.RGBA{
	"":              {0xfe, 0x01, 0x00, 0xff},
	"legend":        {0xfe, 0x01, 0x01, 0xff},
	"marker-labels": {0xfe, 0x01, 0x02, 0xff},
}

// tagOf returns a function that opens a group of the given class (closes
// it for "") in an SVG, so that a reader or a test can find the legend and
// the marker labels; on other canvases it does nothing.
func tagOf(cv vg.CanvasSizer) func(draw.Canvas, string) {
	if _, ok := cv.(svgCanvas); !ok {
		return func(draw.Canvas, string) {}
	}
	return func(c draw.Canvas, class string) {
		c.SetColor(tagColors[class])
		var p vg.Path
		p.Move(c.Min)
		p.Line(vg.Point{X: c.Min.X + 0.01, Y: c.Min.Y})
		p.Line(vg.Point{X: c.Min.X + 0.01, Y: c.Min.Y + 0.01})
		p.Close()
		c.Fill(p)
	}
}

// untag replaces the sentinel paths drawn by tagOf with group tags.
func untag(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "<path ") {
			continue
		}
		for class, col := range tagColors {
			if strings.Contains(l, fmt.Sprintf(`style="fill:#%02X%02X%02X"`, col.R, col.G, col.B)) {
				if class == "" {
					lines[i] = "</g>\n"
				} else {
					lines[i] = `<g class="` + class + `">` + "\n"
				}
			}
		}
	}
	return strings.Join(lines, "")
}
