package analysis_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

// A snapshot read with only its oom entries (what analyze --no-replay and
// the exporter read) diagnoses as the full snapshot does, counting every
// event, and refuses a replay instead of replaying a part.
func TestAnalyzeOOMsOnly(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gensnap.Write(&buf, gensnap.Options{Bytes: 300_000, Seed: 4, Layers: 4, OOMEvery: 3}); err != nil {
		t.Fatal(err)
	}
	read := func(oomsOnly bool) *snapshot.Snapshot {
		s, err := snapshot.ReadOptions(bytes.NewReader(buf.Bytes()), "g", &snapshot.Options{SkipTraceFrames: true, TraceOOMsOnly: oomsOnly})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	full, part := read(false), read(true)
	a, err := analysis.Analyze(full, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := analysis.Analyze(part, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.Devices[0].TraceEvents != len(full.DeviceTraces[0]) {
		t.Errorf("diagnoses differ: %d and %d trace events", a.Devices[0].TraceEvents, b.Devices[0].TraceEvents)
	}
	if _, err := analysis.Analyze(part, analysis.Options{}); err == nil || !strings.Contains(err.Error(), "too few to replay") {
		t.Errorf("replay of a partial trace: %v", err)
	}
}

// ReleaseTraces drops each trace from the snapshot once it is the what-if
// ops, and changes nothing in the report.
func TestAnalyzeReleaseTraces(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gensnap.Write(&buf, gensnap.Options{Bytes: 200_000, Seed: 6, Layers: 4, OOMEvery: 3}); err != nil {
		t.Fatal(err)
	}
	read := func() *snapshot.Snapshot {
		s, err := snapshot.ReadOptions(bytes.NewReader(buf.Bytes()), "g", &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1, s2 := read(), read()
	specs := []string{"caching", "caching:expandable_segments:True"}
	a, err := analysis.Analyze(s1, analysis.Options{WhatIf: specs})
	if err != nil {
		t.Fatal(err)
	}
	b, err := analysis.Analyze(s2, analysis.Options{WhatIf: specs, ReleaseTraces: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.Devices[0].WhatIf == nil {
		t.Error("reports differ")
	}
	if s1.DeviceTraces[0] == nil || s2.DeviceTraces[0] != nil {
		t.Errorf("trace kept: %v without ReleaseTraces, %v with", s1.DeviceTraces[0] != nil, s2.DeviceTraces[0] != nil)
	}
}

// A trace kept packed (snapshot.Options.PackTraces, what analyze reads)
// analyses as the expanded one does, whole report alike, and with
// ReleaseTraces the what-if ops consume it (the snapshot holds none of it
// afterwards).
func TestAnalyzePackedTraces(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gensnap.Write(&buf, gensnap.Options{Bytes: 400_000, Seed: 7, Layers: 4, OOMEvery: 3}); err != nil {
		t.Fatal(err)
	}
	read := func(pack bool) *snapshot.Snapshot {
		s, err := snapshot.ReadOptions(bytes.NewReader(buf.Bytes()), "g", &snapshot.Options{SkipTraceFrames: true, PackTraces: pack})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	specs := []string{"caching", "caching:max_split_size_mb:64", "direct"}
	a, err := analysis.Analyze(read(false), analysis.Options{WhatIf: specs})
	if err != nil {
		t.Fatal(err)
	}
	for _, release := range []bool{false, true} {
		s := read(true)
		b, err := analysis.Analyze(s, analysis.Options{WhatIf: specs, ReleaseTraces: release})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("release=%v: the packed trace's report differs", release)
		}
		if f := b.Devices[0].Replay; f.Allocs == 0 || f.AddressMatches != f.Allocs || len(b.Devices[0].OOMs) == 0 {
			t.Errorf("release=%v: replay %+v, %d ooms", release, *f, len(b.Devices[0].OOMs))
		}
		if left := s.Trace(0).Len(); (left == 0) != release {
			t.Errorf("release=%v: %d entries left in the snapshot", release, left)
		}
	}
}
