package analysis_test

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestSegmentMapReadable: a layout of 516 segments draws at most
// analysis.SegmentMapRows bars of single segments, on one scale, and sums the rest
// per pool in rows that say how many they stand for.
func TestSegmentMapReadable(t *testing.T) {
	var l mem.Layout
	addr := uint64(1 << 40)
	add := func(size int64, pool string, live int64) {
		s := mem.Segment{Addr: addr, Size: size, Pool: pool}
		if live > 0 {
			s.Blocks = append(s.Blocks, mem.Block{Addr: addr, Size: live, Requested: live - 100, State: mem.Active})
		}
		if size > live {
			s.Blocks = append(s.Blocks, mem.Block{Addr: addr + uint64(live), Size: size - live, State: mem.Free})
		}
		l.Segments = append(l.Segments, s)
		addr += uint64(size)
	}
	for i := range 60 {
		add(int64(64+i)<<20, "large", int64(i+1)<<20)
	}
	for i := range 456 {
		add(2<<20, "small", int64(i%2)<<20)
	}
	svg, note := analysis.SegmentMapSVG(l, analysis.SegmentMapRows, 0, 0)
	s := string(svg)
	if n := strings.Count(s, `stroke="#555" stroke-width="0.5"/>`); n != analysis.SegmentMapRows {
		t.Errorf("%d single-segment bars, want %d", n, analysis.SegmentMapRows)
	}
	for _, want := range []string{"+20 more large, ", "+456 more small, 912MiB", "40 of 516 segments drawn"} {
		if !strings.Contains(s, want) {
			t.Errorf("segment map lacks %q", want)
		}
	}
	if !strings.Contains(note, "on one scale: the full width is 123MiB") || !strings.Contains(note, "The other 476") {
		t.Errorf("note: %s", note)
	}
	// A few segments: all drawn, no summary row.
	l.Segments = l.Segments[:3]
	svg, note = analysis.SegmentMapSVG(l, analysis.SegmentMapRows, 0, 0)
	if strings.Contains(string(svg), "more") || !strings.HasPrefix(note, "3 segments, one bar each") {
		t.Errorf("3 segments: %s\n%s", note, svg)
	}
}

// TestSideBySideSegmentMaps: diff's two maps share one scale (the largest
// segment of either side), each under its side's name, escaped; nothing is
// drawn when neither side has a segment.
func TestSideBySideSegmentMaps(t *testing.T) {
	seg := func(addr uint64, size int64) mem.Segment {
		return mem.Segment{Addr: addr, Size: size, Pool: "large",
			Blocks: []mem.Block{{Addr: addr, Size: size, Requested: size, State: mem.Active}}}
	}
	a := mem.Layout{Segments: []mem.Segment{seg(1<<30, 20<<20)}}
	b := mem.Layout{Segments: []mem.Segment{seg(1<<30, 20<<20), seg(2<<30, 80<<20)}}
	svg, note := analysis.SideBySideSegmentMaps(a, b, "before<1>", "after")
	s := string(svg)
	if strings.Count(note, "the full width is 80MiB") != 2 {
		t.Errorf("the two maps do not share the scale of the largest segment:\n%s", note)
	}
	if !strings.Contains(s, "before&lt;1&gt;") || strings.Contains(s, "before<1>") {
		t.Errorf("side name not escaped:\n%s", s)
	}
	// The 20 MiB segment is a quarter of the 280-unit bar on both sides.
	if n := strings.Count(s, `width="70.00" height="14" fill="none"`); n != 2 {
		t.Errorf("%d outlines of the 20 MiB segment at 70 units, want 2:\n%s", n, s)
	}
	if svg, _ := analysis.SideBySideSegmentMaps(mem.Layout{}, mem.Layout{}, "a", "b"); svg != nil {
		t.Errorf("two empty layouts drew %s", svg)
	}
}
