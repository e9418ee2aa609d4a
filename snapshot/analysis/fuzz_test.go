package analysis_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/untrusted"
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
	// Issue 28: an oom after a free the model cannot place, and one of
	// 2^63-1 bytes.
	f.Add(oomSeed(1<<30, true))
	f.Add(oomSeed(1<<63-1, false))
	// A small crafted one (issue 28, item 3): segments over a few streams,
	// tiny blocks, and cycles of segment_alloc/segment_free and oom entries.
	f.Add(snaptest.Encode(snaptest.Crafted{Segments: 8, Streams: 3, Live: 8 << 20, TinyBlocks: 20, Events: 60, OOMEvery: 2}.Doc()))
	// Issue 25: a CUDA graph's private pool, routed by pool_id and by the
	// final segment's segment_pool_id, in the replay and the what-ifs.
	f.Add(poolSeed())
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
// short what-if and renders the report: nothing may panic, the text holds
// no control character but newlines and tabs (a name from the file is
// escaped, untrusted.PrintableText leaves the text as it is) and the segment map
// is well-formed XML.
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
		var text strings.Builder
		if err := r.WriteText(&text, "fuzz"); err != nil {
			t.Fatal(err)
		}
		if i := firstChange(text.String(), untrusted.PrintableText(text.String())); i >= 0 {
			t.Fatalf("text report holds an unescaped control character at byte %d: %q", i, text.String()[max(i-20, 0):min(i+20, text.Len())])
		}
		if _, err := json.Marshal(r.Doc("fuzz")); err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Devices {
			svg, _ := analysis.SegmentMapSVG(d.Layout, 50, 0, 0)
			if err := wellFormed(svg); err != nil {
				t.Fatalf("segment map: %v", err)
			}
			if i := firstChange(string(svg), untrusted.PrintableText(string(svg))); i >= 0 {
				t.Fatalf("segment map holds an unescaped control character at byte %d", i)
			}
		}
	}
	// Read as analyze reads it (each trace kept packed, then consumed by
	// the what-if ops), the report is the same, text and JSON.
	p, err := snapshot.ReadOptions(bytes.NewReader(data), "fuzz", &snapshot.Options{PackTraces: true})
	if err != nil {
		t.Fatalf("read with packed traces: %v; read expanded, it was accepted", err)
	}
	opts := analysis.Options{Capacity: 1 << 30, WhatIf: []string{"caching", "direct"}}
	want, werr := analysis.Analyze(s, opts)
	opts.ReleaseTraces = true
	got, gerr := analysis.Analyze(p, opts)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("analysis of the packed read: %v; of the expanded one: %v", gerr, werr)
	}
	if werr == nil && reportText(t, got) != reportText(t, want) {
		t.Fatalf("the packed read's report differs:\n%s\nwant\n%s", reportText(t, got), reportText(t, want))
	}
}

// reportText is r's text report and JSON document.
func reportText(t *testing.T, r *analysis.Report) string {
	var text strings.Builder
	if err := r.WriteText(&text, "fuzz"); err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(r.Doc("fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	return text.String() + string(doc)
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

// firstChange is the first byte where a and b differ, -1 when they are equal.
func firstChange(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// wellFormed parses b as strict XML.
func wellFormed(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		if _, err := dec.Token(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// oomSeed is a snapshot pickle of one 20 MiB segment (3 and 9 MiB live, 8
// MiB free) whose trace builds it and ends with an oom entry for size
// bytes, after a free_completed of an address the model never held when
// unknownFree is set.
func oomSeed(size int64, unknownFree bool) []byte {
	const a, mib = 1 << 40, 1 << 20
	ev := func(action string, addr uint64, n int64) snaptest.Dict {
		return snaptest.Dict{{"action", action}, {"addr", addr}, {"size", n}, {"stream", 0}}
	}
	trace := []any{ev("segment_alloc", a, 20*mib), ev("alloc", a, 3*mib), ev("alloc", a+3*mib, 9*mib)}
	if unknownFree {
		trace = append(trace, ev("free_completed", a+12*mib, 512))
	}
	trace = append(trace, snaptest.Dict{{"action", "oom"}, {"size", size}, {"device_free", 4 * mib}})
	block := func(addr uint64, n int64, state string) snaptest.Dict {
		return snaptest.Dict{{"address", addr}, {"size", n}, {"requested_size", n}, {"state", state}}
	}
	return snaptest.Encode(snaptest.Dict{
		{"segments", []any{snaptest.Dict{{"device", 0}, {"address", uint64(a)}, {"total_size", 20 * mib},
			{"allocated_size", 12 * mib}, {"active_size", 12 * mib}, {"requested_size", 12 * mib}, {"stream", 0},
			{"segment_type", "large"}, {"blocks", []any{block(a, 3*mib, "active_allocated"),
				block(a+3*mib, 9*mib, "active_allocated"), block(a+12*mib, 8*mib, "inactive")}}}}},
		{"device_traces", []any{trace}},
	})
}

// poolSeed is a snapshot pickle with a CUDA graph's private pool: the
// graph's 20 MiB segment (segment_pool_id (1, 0); a 2 MiB block live) and
// a default one (4 MiB live), whose trace routes the graph's first
// requests by pool_id and its last by the final segment's pool
// (TestWhatIfRoutesPrivatePools).
func poolSeed() []byte {
	const a, b, mib = 1 << 40, 1<<40 + 1<<30, 1 << 20
	graph := snaptest.Tuple{1, 0}
	ev := func(action string, addr uint64, n int64, pool bool) snaptest.Dict {
		e := snaptest.Dict{{"action", action}, {"addr", addr}, {"size", n}, {"stream", 0}}
		if pool {
			e = append(e, snaptest.KV{"pool_id", graph})
		}
		return e
	}
	trace := []any{ev("segment_alloc", a, 20*mib, true), ev("alloc", a, 4*mib, true), ev("free_completed", a, 4*mib, true),
		ev("segment_alloc", b, 20*mib, false), ev("alloc", b, 4*mib, false), ev("alloc", a, 2*mib, false)}
	block := func(addr uint64, n int64, state string) snaptest.Dict {
		return snaptest.Dict{{"address", addr}, {"size", n}, {"requested_size", n}, {"state", state}}
	}
	segment := func(addr uint64, live int64, pool snaptest.Tuple) snaptest.Dict {
		return snaptest.Dict{{"device", 0}, {"address", addr}, {"total_size", 20 * mib},
			{"allocated_size", live}, {"active_size", live}, {"requested_size", live}, {"stream", 0},
			{"segment_type", "large"}, {"segment_pool_id", pool}, {"blocks", []any{block(addr, live, "active_allocated"),
				block(addr+uint64(live), 20*mib-live, "inactive")}}}
	}
	return snaptest.Encode(snaptest.Dict{
		{"segments", []any{segment(a, 2*mib, graph), segment(b, 4*mib, snaptest.Tuple{0, 0})}},
		{"device_traces", []any{trace}},
	})
}
