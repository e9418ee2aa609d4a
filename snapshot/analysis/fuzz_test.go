package analysis_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// FuzzAnalyze feeds arbitrary bytes through the reader and, when they read
// as a snapshot, through the whole analysis (replay and a short what-if):
// nothing may panic, and the report must render.
//
//	go test ./snapshot/analysis -run '^$' -fuzz FuzzAnalyze -fuzztime 60s
func FuzzAnalyze(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "*.pickle"))
	seeds = append(seeds, filepath.Join("..", "testdata", "memory_stats.json"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Small structured snapshots, every integer an 8-byte LONG1 the fuzzer
	// can flip negative or huge (issue 13 case 1 is one byte away).
	for _, spec := range snaptest.Seeds {
		f.Add(snaptest.Encode(snaptest.FromSpec(spec)))
	}
	// A small crafted one (issue 28, item 3): segments over a few streams,
	// tiny blocks, and cycles of segment_alloc/segment_free and oom entries.
	f.Add(snaptest.Encode(snaptest.Crafted{Segments: 8, Streams: 3, Live: 8 << 20, TinyBlocks: 20, Events: 60, OOMEvery: 2}.Doc()))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzAnalyze(t, data)
	})
}

// FuzzAnalyzeSpec runs the analysis over the structured inputs of
// snaptest.FromSpec: each input is a snapshot-shaped pickle whose bytes
// choose devices, addresses, block sizes and states and the trace, so the
// fuzzer explores values (a device of -1, overlapping segments, addresses
// near 2^64) instead of pickle syntax.
//
//	go test ./snapshot/analysis -run '^$' -fuzz FuzzAnalyzeSpec -fuzztime 60s
func FuzzAnalyzeSpec(f *testing.F) {
	for _, spec := range snaptest.Seeds {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		fuzzAnalyze(t, snaptest.Encode(snaptest.FromSpec(spec)))
	})
}

// fuzzAnalyze reads data and, when it reads, analyses it with replay and a
// short what-if and renders the report: nothing may panic.
func fuzzAnalyze(t *testing.T, data []byte) {
	s, err := snapshot.ReadBytes(data, "fuzz")
	if err != nil {
		return
	}
	for _, noReplay := range []bool{true, false} {
		r, err := analysis.Analyze(s, analysis.Options{Capacity: 1 << 30, NoReplay: noReplay,
			WhatIf: []string{"caching:expandable_segments:True", "direct"}})
		if err != nil {
			continue
		}
		if err := r.WriteText(io.Discard, "fuzz"); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(r.Doc("fuzz")); err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Devices {
			_ = analysis.SegmentMapSVG(d.Layout, 50)
		}
	}
}

// The committed fixtures of package snapshot (every format generation) and
// a memory_stats dump all analyse without error.
func TestFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "*.pickle"))
	files = append(files, filepath.Join("..", "testdata", "memory_stats.json"))
	if len(files) < 2 {
		t.Fatal("fixtures missing")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.ReadBytes(b, file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := analysis.Analyze(s, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != s.Format {
				t.Errorf("format %s, snapshot says %s", r.Format, s.Format)
			}
			if s.Format == snapshot.FormatMemoryStats {
				if r.Stats == nil || r.Stats.Reserved != 23068672 || r.Stats.CachedFree != 23068672-12583936 {
					t.Errorf("memory stats summary %+v", r.Stats)
				}
				return
			}
			var segs int
			for _, d := range r.Devices {
				segs += d.Segments
				if d.Classes.Active+d.Classes.CachedFree != d.Classes.Reserved {
					t.Errorf("device %d: classes do not add up: %+v", d.Device, d.Classes)
				}
			}
			if segs != len(s.Segments) {
				t.Errorf("%d segments analysed, file has %d", segs, len(s.Segments))
			}
		})
	}
}
