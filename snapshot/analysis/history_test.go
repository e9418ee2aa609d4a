package analysis_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// legacy turns crafted segments into a PyTorch 2.0 snapshot: no allocator
// settings, a trace holding one snapshot entry, and on every live block a
// history whose only entry is its allocation (the requested size, at the
// block's address), as the 2.0 writer leaves it.
func legacy(segs ...snapshot.Segment) *snapshot.Snapshot {
	for i := range segs {
		for j := range segs[i].Blocks {
			b := &segs[i].Blocks[j]
			if b.State != snapshot.StateInactive {
				b.History = []snapshot.HistoryEntry{{Addr: b.Address, RealSize: b.RequestedSize}}
			}
		}
	}
	return &snapshot.Snapshot{Format: snapshot.FormatLegacy, Segments: segs,
		DeviceTraces: [][]snapshot.TraceEntry{{{Action: "snapshot"}}}}
}

// A layout PyTorch's rules produce in address order is rebuilt exactly,
// without seeding: 20 MiB for a 3 MiB request, a free stretch whose history
// records an earlier allocation, a block kept whole because its remainder
// would be 1 MiB, a small segment with a free tail over 1 MiB, and a
// large request rounded up to whole 2 MiB.
func TestHistoryReplayMatches(t *testing.T) {
	s := legacy(
		seg(segA, "large", live(3*mib, 3*mib-100, "a"), free(5*mib), live(8*mib, 8*mib-100, "b"), free(4*mib)),
		seg(segB, "small", live(512, 300, "c"), live(1024, 1000, "c"), free(2*mib-1536)),
		seg(segC, "large", live(18*mib, 17*mib, "d")),
		seg(segC+32<<20, "large", live(394*mib-1280*1024, 394*mib-1280*1024-100, "e"), free(1280*1024)),
	)
	// The free 5 MiB stretch once held a 2 MiB allocation at its start.
	s.Segments[0].Blocks[1].History = []snapshot.HistoryEntry{{Addr: segA + 3<<20, RealSize: 2 * mib}}
	d := analyze(t, s, analysis.Options{WhatIf: []string{}})
	f := d.Replay
	want := analysis.Fidelity{Source: analysis.SourceHistory, HistorySegments: 4, Placeholders: 5,
		Allocs: 7, AddressMatches: 7, SegmentAllocs: 4, SegmentSizeMatches: 4, FinalBlocks: 10, FinalBlockMatches: 10}
	if !reflect.DeepEqual(*f, want) {
		t.Errorf("history replay\n got %+v\nwant %+v\nmismatches %v", *f, want, f.Mismatches)
	}
	if f.SeededSegments != 0 {
		t.Errorf("a history replay seeded %d segments", f.SeededSegments)
	}
	var text strings.Builder
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&text, "legacy"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"from block histories", "ORDER IS RECONSTRUCTED, NOT RECORDED", "does not test best fit",
		"history allocs at recorded address      7 / 7"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report lacks %q:\n%s", line, text.String())
		}
	}
	if rd := r.Doc("legacy").Devices[0].Replay; rd.Source != "history" || rd.Allocs != 7 || rd.AddressMatches != 7 {
		t.Errorf("JSON replay %+v", rd)
	}
}

// A layout the model cannot produce from this order is reported, not
// hidden: a 4 MiB request in a 6 MiB block (rounding our settings do not
// do), which moves the next block, and a 20 MiB segment whose first block
// holds a 12 MiB request (it was cut from a segment an earlier, smaller
// request obtained: the model asks for 12 MiB).
func TestHistoryReplayMismatch(t *testing.T) {
	s := legacy(
		seg(segA, "large", live(6*mib, 4*mib, "b"), live(14*mib, 14*mib, "c")),
		seg(segB, "large", live(12*mib, 12*mib, "a"), free(8*mib)),
	)
	d := analyze(t, s, analysis.Options{WhatIf: []string{}})
	f := d.Replay
	if f.Source != analysis.SourceHistory || f.Allocs != 3 || f.AddressMatches != 2 {
		t.Errorf("allocs %d, address matches %d (want 3, 2), source %q", f.Allocs, f.AddressMatches, f.Source)
	}
	// segA: the right 20 MiB. segB: the model asks for 12 MiB, and the 8 MiB
	// placeholder after it needs another segment.
	if f.SegmentAllocs != 3 || f.SegmentSizeMatches != 1 || f.ExtraSegments != 1 {
		t.Errorf("segment allocs %d, size matches %d, extra %d (want 3, 1, 1)", f.SegmentAllocs, f.SegmentSizeMatches, f.ExtraSegments)
	}
	if f.FinalBlockMatches >= f.FinalBlocks {
		t.Errorf("final blocks %d of %d match", f.FinalBlockMatches, f.FinalBlocks)
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := r.WriteText(&text, "legacy"); err != nil || !strings.Contains(text.String(), "  mismatch: segment 0x7f0040000000: segment_alloc") {
		t.Errorf("text report hides the mismatches (%v):\n%s", err, text.String())
	}
	var all []string
	for _, m := range f.Mismatches {
		all = append(all, m.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		"segment 0x7f0000000000 block 1: alloc of 14680064 bytes at 0x7f0000600000, model chose 0x7f0000400000",
		"segment 0x7f0040000000: segment_alloc of 20971520 bytes, model asked for 12582912 bytes",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("mismatches lack %q:\n%s", want, joined)
		}
	}
}

// A device whose trace has alloc events is replayed from the trace even if
// its blocks carry histories; one with neither has nothing to compare.
func TestHistoryReplaySource(t *testing.T) {
	s := legacy(seg(segA, "large", live(20*mib, 20*mib, "a")))
	s.DeviceTraces = [][]snapshot.TraceEntry{{segAlloc(segA, 20*mib), alloc(segA, 20*mib)}}
	if d := analyze(t, s, analysis.Options{WhatIf: []string{}}); d.Replay.Source != analysis.SourceTrace || d.Replay.Allocs != 1 {
		t.Errorf("trace-bearing file: %+v", *d.Replay)
	}
	plain := snap(nil, seg(segA, "large", live(20*mib, 20*mib, "a")))
	if d := analyze(t, plain, analysis.Options{WhatIf: []string{}}); d.Replay.Source != analysis.SourceTrace || d.Replay.Allocs != 0 {
		t.Errorf("no trace, no history: %+v", *d.Replay)
	}
}
