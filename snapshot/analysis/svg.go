package analysis

import (
	"bytes"
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
)

// SegmentMapRows is the usual cap on a segment map's bars of single
// segments: beyond a few dozen a page gets long without showing more (the
// segments stranding most free memory are kept; the rest are summed per
// pool). analyze's and diff's pages draw this many.
const SegmentMapRows = 40

// segmentMapBlocks: a segment of more than this many blocks is drawn as the
// shares of its bytes rather than block by block, which bounds the SVG
// whatever the snapshot holds (issue 28: 150,000 blocks made a 21.7 MB
// page).
const segmentMapBlocks = 256

// Segment map geometry, in SVG user units (points).
const (
	SegmentMapWidth = 720 // the width of the page's charts (report.DefaultWidth)
	segMapLabel     = 200 // left column: address, size and pool
	segMapRow       = 14
	segMapGap       = 4
	segMapTop       = 24 // the colour key
	segMapFont      = 10
)

// The side-by-side segment maps: two maps of sideMapWidth units with
// sideMapGap between them fill an HTML page's main column (1040 px less its
// padding: 984), so neither is scaled down; each keeps the single map's
// label column, which leaves 280 units of bar.
const (
	sideMapWidth = 480
	sideMapGap   = 24
	sideMapHead  = 18 // the line naming each side
)

// Segment map colours: live bytes, rounding inside live blocks, blocks
// awaiting another stream, free space stranded by a live block, free space
// in a segment empty_cache could release.
var segMapKey = []struct{ col, name string }{
	{"#4e79a7", "live"}, {"#f28e2b", "rounding"}, {"#edc948", "pending free"},
	{"#e15759", "stranded free"}, {"#d9d9d9", "releasable free"},
}

// segBytes sums a segment's bytes by segMapKey's classes.
func segBytes(s mem.Segment) (by [5]int64) {
	live := false
	for _, b := range s.Blocks {
		live = live || b.State != mem.Free
	}
	for _, b := range s.Blocks {
		switch {
		case b.State == mem.PendingFree:
			by[2] += b.Size
		case b.State == mem.Active:
			req := b.Size
			if b.Requested > 0 && b.Requested < b.Size {
				req = b.Requested
			}
			by[0] += req
			by[1] += b.Size - req
		case live:
			by[3] += b.Size
		default:
			by[4] += b.Size
		}
	}
	return by
}

// SegmentMapSVG draws a device's segments, one bar each in address order
// and all on one scale, for at most maxRows segments (maxRows ≤ 0: no cap):
// those stranding the most free memory, then the largest, leaving out any
// smaller than a fiftieth of the largest (a bar a few pixels wide). The
// segments left out are summed per pool, a row each at the end that shows
// the shares of their bytes; a segment of more than 256 blocks is drawn as
// the shares of its bytes too. Live blocks are blue with their rounding
// waste orange, pending frees yellow, free blocks red when a live block
// strands them, grey when the whole segment is free.
//
// The map is width units wide (≤ 0: SegmentMapWidth), on a scale whose
// full bar width is the largest segment drawn or scaleTo bytes if more (so
// that two maps share one scale). It returns the SVG, self-contained,
// deterministic and well-formed XML (a pool name from the file is escaped:
// untrusted.Printable, then as XML text), and a sentence saying what is drawn.
func SegmentMapSVG(l mem.Layout, maxRows, width int, scaleTo int64) (svg []byte, note string) {
	if width <= 0 {
		width = SegmentMapWidth
	}
	if maxRows <= 0 {
		maxRows = len(l.Segments)
	}
	segs := append([]mem.Segment(nil), l.Segments...)
	sort.SliceStable(segs, func(i, j int) bool {
		si, sj := segBytes(segs[i])[3], segBytes(segs[j])[3]
		if si != sj {
			return si > sj
		}
		return segs[i].Size > segs[j].Size
	})
	var largest int64
	for _, s := range segs {
		largest = max(largest, s.Size)
	}
	largest = max(largest, scaleTo)
	var shown, rest []mem.Segment
	for _, s := range segs {
		if len(shown) < maxRows && s.Size*50 >= largest {
			shown = append(shown, s)
		} else {
			rest = append(rest, s)
		}
	}
	sort.Slice(shown, func(i, j int) bool { return shown[i].Addr < shown[j].Addr })
	type agg struct {
		pool  string
		n     int
		total int64
		by    [5]int64
	}
	var aggs []*agg
	byPool := map[string]*agg{}
	for _, s := range rest {
		a := byPool[s.Pool]
		if a == nil {
			a = &agg{pool: s.Pool}
			byPool[s.Pool] = a
			aggs = append(aggs, a)
		}
		a.n++
		a.total += s.Size
		sb := segBytes(s)
		for k := range sb {
			a.by[k] += sb[k]
		}
	}
	sort.SliceStable(aggs, func(i, j int) bool { return aggs[i].pool < aggs[j].pool })

	rows := len(shown) + len(aggs)
	height := segMapTop + rows*(segMapRow+segMapGap) + segMapGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="'Liberation Sans', Arial, Helvetica, sans-serif" font-size="%d">`+"\n",
		width, height, width, height, segMapFont)
	fmt.Fprintf(&b, "<title>segment map: %d of %d segments drawn</title>\n", len(shown), len(l.Segments))
	x := 0
	for _, e := range segMapKey {
		fmt.Fprintf(&b, `<rect x="%d" y="5" width="11" height="11" fill="%s"/><text x="%d" y="14">%s</text>`+"\n", x, e.col, x+15, e.name)
		x += 15 + 6*len(e.name) + 16
	}
	barW := float64(width - segMapLabel)
	scale := barW / float64(max(largest, 1))
	row := func(i int) int { return segMapTop + i*(segMapRow+segMapGap) }
	// shares draws a bar of width w split by the shares of by's classes.
	shares := func(y int, by [5]int64, total int64, w float64) {
		x0 := float64(segMapLabel)
		for k, v := range by {
			if v == 0 {
				continue
			}
			w := w * float64(v) / float64(max(total, 1))
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s %s</title></rect>`+"\n",
				x0, y, w, segMapRow, segMapKey[k].col, mem.FormatBytes(v), segMapKey[k].name)
			x0 += w
		}
	}
	crowded := 0 // bars of more than segmentMapBlocks blocks, drawn as shares
	for i, s := range shown {
		y := row(i)
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text>`+"\n", y+segMapRow-3,
			html.EscapeString(fmt.Sprintf("%#x %s %s", s.Addr, mem.FormatBytes(s.Size), untrusted.Printable(s.Pool))))
		if len(s.Blocks) > segmentMapBlocks {
			crowded++
			shares(y, segBytes(s), s.Size, float64(s.Size)*scale)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.2f" height="%d" fill="none" stroke="#555" stroke-width="0.5"><title>%d blocks: the shares of their bytes</title></rect>`+"\n",
				segMapLabel, y, float64(s.Size)*scale, segMapRow, len(s.Blocks))
			continue
		}
		live := false
		for _, blk := range s.Blocks {
			live = live || blk.State != mem.Free
		}
		for _, blk := range s.Blocks {
			x0 := float64(segMapLabel) + float64(blk.Addr-s.Addr)*scale
			w := float64(blk.Size) * scale
			col := segMapKey[4].col
			switch {
			case blk.State == mem.PendingFree:
				col = segMapKey[2].col
			case blk.State == mem.Active:
				col = segMapKey[0].col
			case live:
				col = segMapKey[3].col
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%#x %s %s</title></rect>`+"\n",
				x0, y, w, segMapRow, col, blk.Addr, mem.FormatBytes(blk.Size), blk.State)
			if blk.State == mem.Active && blk.Requested > 0 && blk.Requested < blk.Size {
				rw := float64(blk.Size-blk.Requested) * scale
				fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>`+"\n", x0+w-rw, y, rw, segMapRow, segMapKey[1].col)
			}
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.2f" height="%d" fill="none" stroke="#555" stroke-width="0.5"/>`+"\n",
			segMapLabel, y, float64(s.Size)*scale, segMapRow)
	}
	for i, a := range aggs {
		y := row(len(shown) + i)
		fmt.Fprintf(&b, `<text x="0" y="%d" font-style="italic">%s</text>`+"\n", y+segMapRow-3,
			html.EscapeString(fmt.Sprintf("+%d more %s, %s", a.n, untrusted.Printable(a.pool), mem.FormatBytes(a.total))))
		shares(y, a.by, a.total, barW)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#555" stroke-width="0.5" stroke-dasharray="3 2"/>`+"\n",
			segMapLabel, y, barW, segMapRow)
	}
	b.WriteString("</svg>\n")

	plural := "s"
	if len(shown) == 1 {
		plural = ""
	}
	note = fmt.Sprintf("%d segment%s, one bar each in address order, on one scale: the full width is %s.",
		len(shown), plural, mem.FormatBytes(largest))
	if len(rest) > 0 {
		rowWord := "rows"
		if len(aggs) == 1 {
			rowWord = "row"
		}
		note = fmt.Sprintf("%d of %d segments (those stranding the most free memory, then the largest), one bar each in address order, "+
			"on one scale: the full width is %s. The other %d, smaller or stranding less, are summed per pool in the last %s, "+
			"each bar the shares of those segments' bytes (dashed outline).",
			len(shown), len(l.Segments), mem.FormatBytes(largest), len(rest), rowWord)
	}
	if crowded > 0 {
		note += fmt.Sprintf(" %d of the bars hold more than %d blocks each and show the shares of their bytes, not the blocks one by one.",
			crowded, segmentMapBlocks)
	}
	note += " Blue: live; orange: rounding inside live blocks; yellow: awaiting another stream; " +
		"red: free but stranded by a live block; grey: free, releasable."
	return []byte(b.String()), note
}

// SideBySideSegmentMaps draws two devices' segment maps (SegmentMapSVG, at
// most SegmentMapRows bars each) on one scale, next to each other, each
// under the name of its side, and a note of two lines, one a side; nil when
// neither has a segment. Names from files are escaped as SegmentMapSVG's
// pools are.
func SideBySideSegmentMaps(a, b mem.Layout, nameA, nameB string) (svg []byte, note string) {
	if len(a.Segments)+len(b.Segments) == 0 {
		return nil, ""
	}
	var largest int64
	for _, l := range []mem.Layout{a, b} {
		for _, s := range l.Segments {
			largest = max(largest, s.Size)
		}
	}
	svgA, noteA := SegmentMapSVG(a, SegmentMapRows, sideMapWidth, largest)
	svgB, noteB := SegmentMapSVG(b, SegmentMapRows, sideMapWidth, largest)
	h := max(svgHeight(svgA), svgHeight(svgB)) + sideMapHead
	w := 2*sideMapWidth + sideMapGap
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="'Liberation Sans', Arial, Helvetica, sans-serif" font-size="%d">`+"\n",
		w, h, w, h, segMapFont+2)
	fmt.Fprintf(&out, "<title>segment maps side by side</title>\n")
	for i, x := range []struct {
		name string
		svg  []byte
	}{{nameA, svgA}, {nameB, svgB}} {
		x0 := i * (sideMapWidth + sideMapGap)
		fmt.Fprintf(&out, `<text x="%d" y="13" font-weight="bold">%s</text>`+"\n", x0, html.EscapeString(untrusted.Printable(x.name)))
		out.WriteString(strings.Replace(string(x.svg), "<svg ", fmt.Sprintf(`<svg x="%d" y="%d" `, x0, sideMapHead), 1))
	}
	out.WriteString("</svg>\n")
	return []byte(out.String()), fmt.Sprintf("%s: %s\n%s: %s", nameA, noteA, nameB, noteB)
}

// svgHeight reads the height attribute SegmentMapSVG wrote.
func svgHeight(svg []byte) int {
	var w, h int
	i := bytes.Index(svg, []byte(`width="`))
	if i < 0 {
		return 0
	}
	fmt.Sscanf(string(svg[i:]), `width="%d" height="%d"`, &w, &h)
	return h
}
