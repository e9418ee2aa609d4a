package analysis_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

var craftedDir = flag.String("crafted", "", "write the crafted snapshots of issue 28 (item 3) to `DIR` as *.pickle, "+
	"for timing the command: go test ./snapshot/analysis -run TestWriteCrafted -crafted DIR")

// craftedFiles are snapshots small on disk and large in work (issue 28,
// item 3), each under 5 MB: 45,000 and 30,000 segments with a 4,000-event
// trace (one with an oom entry every cycle, one spread over 30,000
// streams), and 150,000 tiny blocks.
var craftedFiles = map[string]snaptest.Crafted{
	"segments45k": {Segments: 45_000, Events: 4_000, OOMEvery: 1},
	"segments30k": {Segments: 30_000, Events: 4_000, OOMEvery: 10},
	"streams30k":  {Segments: 30_000, Streams: 30_000, Events: 4_000, OOMEvery: 10},
	"blocks150k":  {TinyBlocks: 150_000, Events: 4_000, OOMEvery: 1},
	"streams1k":   {Segments: 45_000, Streams: 1_024, Live: 8 << 20, Events: 4_000, OOMEvery: 1},
	"tails45k":    {Segments: 45_000, Live: 8 << 20, Events: 4_000, OOMEvery: 10},
	"devices1k":   {Segments: 45_000, Devices: 1_024, Events: 4_000, OOMEvery: 1},
}

// TestWriteCrafted writes craftedFiles to -crafted DIR; without the flag it
// only checks that each stays under 5 MB.
func TestWriteCrafted(t *testing.T) {
	for name, c := range craftedFiles {
		b := snaptest.Encode(c.Doc())
		if len(b) >= 5<<20 {
			t.Errorf("%s: %d bytes, want under 5 MB", name, len(b))
		}
		if *craftedDir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(*craftedDir, name+".pickle"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeCrafted times Analyze (diagnosis, replay, timeline, OOMs
// and the default what-if list) on the crafted snapshots, decoded once:
//
//	go test ./snapshot/analysis -run '^$' -bench BenchmarkAnalyzeCrafted -benchmem
func BenchmarkAnalyzeCrafted(b *testing.B) {
	for _, name := range []string{"segments45k", "segments30k", "streams30k", "blocks150k", "streams1k", "tails45k", "devices1k"} {
		data := snaptest.Encode(craftedFiles[name].Doc())
		s, err := snapshot.ReadOptions(bytes.NewReader(data), name, &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("file="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := analysis.Analyze(s, analysis.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The work of Analyze grows as n log n in segments and events, not as their
// product: a snapshot with 4× the segments and 4× the events (an oom entry
// every cycle, allocations that fail on a small device, empty_cache often)
// must not take more than 5× the allocations (6× the bytes) of the smaller
// one. A Layout per oom entry made it 16× (issue 28, item 3).
// Allocations, not time: they are exact, and the test may run anywhere.
func TestAnalyzeWorkGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes two crafted snapshots of 3,000 and 12,000 segments")
	}
	const n = 3_000
	work := func(k int) (mallocs, bytes uint64) {
		c := snaptest.Crafted{Segments: k * n, Streams: 8, Live: 8 << 20, TinyBlocks: k * n, Events: k * n, OOMEvery: 1}
		s, err := snapshot.ReadOptions(bytesReader(snaptest.Encode(c.Doc())), "crafted", &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			t.Fatal(err)
		}
		// 24 GiB per n segments: above the 23.44 GiB their live blocks
		// hold (a capacity below is a CapacityError), below the 58.60 GiB
		// they reserved and the 25.2 GiB allocated at their peak, so that what-if
		// allocations fail.
		opts := analysis.Options{Capacity: int64(k) * 24 << 30, Parallel: 1,
			WhatIf: []string{"caching", "caching:garbage_collection_threshold:0.8,per_process_memory_fraction:1.0",
				"caching:expandable_segments:True", "caching:max_split_size_mb:64"}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := analysis.Analyze(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if w := r.Devices[0].WhatIf; w == nil || !slices.ContainsFunc(w.Results, func(a analysis.Alternative) bool { return a.OOMs > 0 }) {
			t.Fatalf("%d segments: no what-if ran out of memory on %d GiB: %+v", k*n, k*24, w)
		}
		return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
	}
	m1, b1 := work(1)
	m4, b4 := work(4)
	t.Logf("n=%d: %d allocations, %d bytes; 4n: %d allocations (%.2f×), %d bytes (%.2f×)",
		n, m1, b1, m4, float64(m4)/float64(m1), b4, float64(b4)/float64(b1))
	// Linear work gives 4× give or take what doubling slices and maps
	// round to; quadratic work, 16×.
	if float64(m4) > 5*float64(m1) || float64(b4) > 6*float64(b1) {
		t.Errorf("4× the segments and events took %.2f× the allocations and %.2f× the bytes, want at most 5× and 6×",
			float64(m4)/float64(m1), float64(b4)/float64(b1))
	}
}

// A device whose segments and trace name more than MaxReplayStreams streams
// is diagnosed but not replayed, and says why: the model keeps an index per
// stream, and 30,000 streams made a 3 MB file cost 680 MB. At the bound it
// is replayed; a legacy file (replayed from block histories) is bounded too.
func TestReplayStreamsBound(t *testing.T) {
	for _, tc := range []struct {
		streams int
		skipped bool
	}{{analysis.MaxReplayStreams, false}, {analysis.MaxReplayStreams + 1, true}} {
		c := snaptest.Crafted{Segments: tc.streams, Streams: tc.streams, Events: 200, OOMEvery: 1}
		s, err := snapshot.ReadOptions(bytesReader(snaptest.Encode(c.Doc())), "crafted", &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{"caching"}})
		if err != nil {
			t.Fatal(err)
		}
		d := r.Devices[0]
		want := fmt.Sprintf("%d streams, more than the %d a replay models", tc.streams, analysis.MaxReplayStreams)
		switch {
		case tc.skipped && (!strings.HasPrefix(d.Replay.Skipped, want) || d.WhatIf != nil || d.OOMs[0].Cause != "unknown"):
			t.Errorf("%d streams: skipped %q, what-if %v, oom cause %q; want skipped %q, no what-if", tc.streams,
				d.Replay.Skipped, d.WhatIf != nil, d.OOMs[0].Cause, want)
		case !tc.skipped && (d.Replay.Skipped != "" || d.WhatIf == nil || d.Replay.AddressMatches != d.Replay.Allocs):
			t.Errorf("%d streams: not replayed: %+v", tc.streams, *d.Replay)
		}
	}
	var segs []snapshot.Segment
	for i := range analysis.MaxReplayStreams + 1 {
		sg := seg(segA+uint64(i)<<25, "large", live(4*mib, 4*mib, "a"), free(16*mib))
		sg.Stream = int64(i)
		segs = append(segs, sg)
	}
	r, err := analysis.Analyze(legacy(segs...), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Devices[0].Replay; f.Source != analysis.SourceHistory || !strings.Contains(f.Skipped, "streams, more than the") {
		t.Errorf("legacy file over the bound: %+v", *f)
	}
}
