package snapshot_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestAnalyzeShared runs the analysis on every shared real snapshot: the
// totals must equal the manifest's, and on every trace with alloc events the
// replay must reproduce every recorded alloc address and segment_alloc size
// and the final block layout. A legacy file (no alloc event, block
// histories) is replayed from its histories in a reconstructed order: every
// history entry of a live block must land at its recorded address, every
// segment the model obtains must have the recorded size, and the final
// layout must be the recorded one.
func TestAnalyzeShared(t *testing.T) {
	for file, want := range sharedSnapshots(t) {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(sharedDir, file))
			if err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.ReadBytes(b, file)
			if err != nil {
				t.Fatal(err)
			}
			opts := analysis.Options{}
			if testing.Short() {
				// -race and -tags invariants check every allocator after
				// every op: keep one alternative.
				opts.WhatIf = []string{"caching:expandable_segments:True"}
			}
			r, err := analysis.Analyze(s, opts)
			if err != nil {
				t.Fatal(err)
			}
			var segs, blocks, allocs, histAllocs int
			var reserved, allocated int64
			for _, d := range r.Devices {
				segs += d.Segments
				blocks += d.Blocks
				reserved += d.Classes.Reserved
				allocated += d.Classes.Allocated
				if d.Classes.Active+d.Classes.CachedFree != d.Classes.Reserved {
					t.Errorf("device %d: active + cached free != reserved: %+v", d.Device, d.Classes)
				}
				f := d.Replay
				if f == nil {
					t.Fatalf("device %d: no replay", d.Device)
				}
				if f.Source == analysis.SourceHistory {
					histAllocs += f.Allocs
				} else {
					allocs += f.Allocs
				}
				if f.Allocs == 0 {
					continue
				}
				if f.Skipped != "" || f.AddressMatches != f.Allocs || f.SegmentSizeMatches != f.SegmentAllocs ||
					f.FinalBlockMatches != f.FinalBlocks || f.ExtraSegments != 0 || f.UnknownFrees != 0 ||
					f.SegmentFreeMatches != f.SegmentFrees {
					t.Errorf("device %d: replay %+v", d.Device, *f)
				}
				if d.WhatIf == nil || len(d.WhatIf.Results) < 2 {
					t.Errorf("device %d: what-if missing or short", d.Device)
				}
			}
			if segs != want.NSegments || blocks != want.NBlocks || reserved != want.SumTotalSize || allocated != want.SumAllocatedSize {
				t.Errorf("segments %d blocks %d reserved %d allocated %d; manifest %d %d %d %d",
					segs, blocks, reserved, allocated, want.NSegments, want.NBlocks, want.SumTotalSize, want.SumAllocatedSize)
			}
			if allocs != want.TraceActions["alloc"] {
				t.Errorf("replayed %d allocs, manifest lists %d alloc events", allocs, want.TraceActions["alloc"])
			}
			if n := liveHistories(s); histAllocs < n {
				t.Errorf("replayed %d history entries; the file's live blocks alone have %d", histAllocs, n)
			}
			if _, err := json.Marshal(r.Doc(file)); err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := r.WriteText(&text, file); err != nil || text.Len() == 0 {
				t.Fatalf("text report: %v", err)
			}
			if histAllocs > 0 && !bytes.Contains(text.Bytes(), []byte("ORDER IS RECONSTRUCTED, NOT RECORDED")) {
				t.Errorf("the text report of a history replay does not say its order is reconstructed")
			}
			// Read as analyze reads it (the trace packed, consumed by the
			// what-if ops), the report is the same.
			p, err := snapshot.ReadOptions(bytes.NewReader(b), file, &snapshot.Options{PackTraces: true})
			if err != nil {
				t.Fatal(err)
			}
			opts.ReleaseTraces = true
			if rp, err := analysis.Analyze(p, opts); err != nil || !reflect.DeepEqual(rp, r) {
				t.Errorf("read with packed traces, the report differs (%v)", err)
			}
		})
	}
}

// liveHistories counts the history entries that describe the allocation
// living in a block (history[0] at the block's address), the ones a history
// replay must place.
func liveHistories(s *snapshot.Snapshot) int {
	n := 0
	for _, seg := range s.Segments {
		for _, b := range seg.Blocks {
			if b.State != snapshot.StateInactive && len(b.History) > 0 && b.History[0].Addr == b.Address {
				n++
			}
		}
	}
	return n
}

// largestTrace returns the shared snapshot with the most trace events.
func largestTrace(b *testing.B) []byte {
	m := sharedSnapshots(b)
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	best, events := "", 0
	for _, n := range names {
		e := 0
		for _, k := range m[n].TraceEventsPerDevice {
			e += k
		}
		if e > events {
			best, events = n, e
		}
	}
	if best == "" {
		b.Skip("no shared snapshot has a trace")
	}
	data, err := os.ReadFile(filepath.Join(sharedDir, best))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkAnalyze times the stages of `gpufrag analyze` on the largest
// shared trace (1 MB, 4,657 events). The command reads with
// SkipTraceFrames; "all" is diagnosis, replay and the default what-if list:
//
//	go test ./snapshot -run '^$' -bench BenchmarkAnalyze -benchmem
func BenchmarkAnalyze(b *testing.B) {
	data := largestTrace(b)
	s, err := snapshot.ReadBytes(data, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		f    func() error
	}{
		{"stage=parse/trace-frames=read", func() error { _, err := snapshot.ReadBytes(data, "bench"); return err }},
		{"stage=parse/trace-frames=skip", func() error {
			_, err := snapshot.ReadOptions(bytes.NewReader(data), "bench", &snapshot.Options{SkipTraceFrames: true})
			return err
		}},
		{"stage=diagnose", func() error {
			_, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
			return err
		}},
		{"stage=diagnose+replay", func() error {
			_, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
			return err
		}},
		{"stage=all", func() error { _, err := analysis.Analyze(s, analysis.Options{}); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := bc.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
