package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MinTextPx is the smallest text a page lets a chart's labels shrink to, in
// CSS pixels. A chart scales with its column (max-width:100%) down to the
// width where its smallest text is this size; below, on a phone, the
// figure scrolls sideways instead (readableWidth).
const MinTextPx = 10.0

// fontSizeStyle finds a font size in a style attribute ("font-size:9px").
var fontSizeStyle = regexp.MustCompile(`font-size:\s*([0-9.]+)(px)?`)

// readableWidth returns the narrowest width in CSS pixels at which every
// text of svg is at least MinTextPx tall: the root's viewBox width (else
// its width) times MinTextPx over the smallest font size of its elements,
// in the same user units, capped at the width the svg asks for. It
// returns 0 when svg has no text, no size or does not parse: the figure
// then shrinks as it always did.
func readableWidth(svg []byte) float64 {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var userW, cssW float64
	smallest := math.Inf(1)
	root := true
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		for _, a := range el.Attr {
			switch {
			case root && a.Name.Local == "viewBox":
				if f := strings.Fields(strings.ReplaceAll(a.Value, ",", " ")); len(f) == 4 {
					if v, err := strconv.ParseFloat(f[2], 64); err == nil && positive(v) {
						userW = v
					}
				}
			case root && a.Name.Local == "width":
				cssW = cssLength(a.Value)
			case a.Name.Local == "font-size":
				if v, err := strconv.ParseFloat(strings.TrimSuffix(a.Value, "px"), 64); err == nil && positive(v) {
					smallest = min(smallest, v)
				}
			case a.Name.Local == "style":
				for _, m := range fontSizeStyle.FindAllStringSubmatch(a.Value, -1) {
					if v, err := strconv.ParseFloat(m[1], 64); err == nil && positive(v) {
						smallest = min(smallest, v)
					}
				}
			}
		}
		root = false
	}
	if userW == 0 {
		userW = cssW // no viewBox: user units are CSS pixels
	}
	w := math.Ceil(userW * MinTextPx / smallest)
	if cssW > 0 {
		w = min(w, cssW)
	}
	if !positive(w) {
		return 0 // no text, no size
	}
	return w
}

// positive reports whether v is a positive finite number.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// cssLength converts an SVG width ("720pt", "720", "720px") to CSS pixels;
// 0 for a unit it does not know (a percentage).
func cssLength(s string) float64 {
	s = strings.TrimSpace(s)
	scale := 1.0
	switch {
	case strings.HasSuffix(s, "pt"):
		s, scale = strings.TrimSuffix(s, "pt"), 4.0/3
	case strings.HasSuffix(s, "px"):
		s = strings.TrimSuffix(s, "px")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !positive(v*scale) {
		return 0
	}
	return v * scale
}

// openFigure writes a figure's start tag: one whose svg must stay at
// least readableWidth wide carries it as --readable, which the style sheet
// gives the svg as its min-width (the figure scrolls sideways when the
// column is narrower).
func openFigure(b *bytes.Buffer, svg []byte) {
	if w := readableWidth(svg); w > 0 {
		b.WriteString("<figure style=\"--readable:" + strconv.FormatFloat(w, 'f', -1, 64) + "px\">\n")
		return
	}
	b.WriteString("<figure>\n")
}
