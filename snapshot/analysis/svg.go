package analysis

import (
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
)

// Segment map geometry, in SVG user units (points).
const (
	mapWidth  = 720 // the width of the page's charts (report.DefaultWidth)
	mapLabel  = 150 // left column: address and size
	mapRow    = 10  // bar height
	mapGap    = 3
	mapLegend = 22
)

// Block colours: live bytes, rounding inside live blocks, blocks awaiting
// another stream, free space stranded by a live block, free space in a
// segment empty_cache could release.
const (
	colLive     = "#4e79a7"
	colRounding = "#f28e2b"
	colPending  = "#edc948"
	colStranded = "#e15759"
	colFree     = "#d9d9d9"
)

// SegmentMapSVG draws a device's segments as one bar each, in address order,
// every bar scaled to its own segment (labels give the size): live blocks
// blue with their rounding waste orange, pending frees yellow, free blocks
// red when a live block strands them, grey when the whole segment is free.
// At most maxRows segments are drawn (the ones with the most stranded free
// bytes first, then the largest, redrawn in address order); maxRows ≤ 0
// draws all. The SVG is self-contained, deterministic and well-formed XML:
// a pool name from the file is escaped (loc.Printable, then as XML text).
func SegmentMapSVG(l mem.Layout, maxRows int) []byte {
	segs := append([]mem.Segment(nil), l.Segments...)
	if maxRows > 0 && len(segs) > maxRows {
		stranded := func(s mem.Segment) int64 {
			var free int64
			live := false
			for _, b := range s.Blocks {
				if b.State == mem.Free {
					free += b.Size
				} else {
					live = true
				}
			}
			if !live {
				return 0
			}
			return free
		}
		sort.SliceStable(segs, func(i, j int) bool {
			si, sj := stranded(segs[i]), stranded(segs[j])
			if si != sj {
				return si > sj
			}
			return segs[i].Size > segs[j].Size
		})
		segs = segs[:maxRows]
		sort.Slice(segs, func(i, j int) bool { return segs[i].Addr < segs[j].Addr })
	}
	height := mapLegend + len(segs)*(mapRow+mapGap) + mapGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="'Liberation Sans', Arial, Helvetica, sans-serif" font-size="8">`+"\n",
		mapWidth, height, mapWidth, height)
	legend := []struct{ col, name string }{{colLive, "live"}, {colRounding, "rounding"}, {colPending, "pending free"},
		{colStranded, "stranded free"}, {colFree, "releasable free"}}
	x := 0
	for _, e := range legend {
		fmt.Fprintf(&b, `<rect x="%d" y="4" width="10" height="10" fill="%s"/><text x="%d" y="12">%s</text>`+"\n", x, e.col, x+13, e.name)
		x += 13 + 6*len(e.name) + 12
	}
	barW := float64(mapWidth - mapLabel)
	for i, s := range segs {
		y := mapLegend + i*(mapRow+mapGap)
		fmt.Fprintf(&b, `<text x="0" y="%d">%#x %s %s</text>`+"\n", y+mapRow-2, s.Addr, mem.FormatBytes(s.Size),
			html.EscapeString(loc.Printable(s.Pool)))
		live := false
		for _, blk := range s.Blocks {
			live = live || blk.State != mem.Free
		}
		scale := barW / float64(max(s.Size, 1))
		for _, blk := range s.Blocks {
			x0 := float64(mapLabel) + float64(blk.Addr-s.Addr)*scale
			w := float64(blk.Size) * scale
			col := colFree
			switch {
			case blk.State == mem.PendingFree:
				col = colPending
			case blk.State == mem.Active:
				col = colLive
			case live:
				col = colStranded
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="#fff" stroke-width="0.4"><title>%#x %s %s</title></rect>`+"\n",
				x0, y, w, mapRow, col, blk.Addr, mem.FormatBytes(blk.Size), blk.State)
			if blk.State == mem.Active && blk.Requested > 0 && blk.Requested < blk.Size {
				rw := float64(blk.Size-blk.Requested) * scale
				fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>`+"\n", x0+w-rw, y, rw, mapRow, colRounding)
			}
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#555" stroke-width="0.5"/>`+"\n", mapLabel, y, barW, mapRow)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
