package gensnap

import (
	"bytes"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestConsistent: a generated snapshot reads, passes Validate, comes out
// near the size asked for, and our caching model replays its history
// address for address, ending in the segments the file lists.
func TestConsistent(t *testing.T) {
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Bytes: 400_000, Seed: 3, OOMEvery: 4, Layers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != st.Bytes {
		t.Fatalf("Stats.Bytes %d, wrote %d", st.Bytes, buf.Len())
	}
	if st.Bytes < 400_000 || st.Bytes > 600_000 {
		t.Errorf("asked for 400,000 bytes, got %d", st.Bytes)
	}
	s, err := snapshot.ReadBytes(buf.Bytes(), "gen")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.DeviceTraces[0]); got != st.Events {
		t.Errorf("%d trace entries read, %d written", got, st.Events)
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Devices[0].Replay
	if f == nil || f.Allocs != st.Allocs || f.AddressMatches != f.Allocs || f.SegmentSizeMatches != f.SegmentAllocs || len(f.Mismatches) > 0 {
		t.Fatalf("replay not exact: %+v", f)
	}
	if n := len(r.Devices[0].OOMs); n != st.OOMs || n == 0 {
		t.Errorf("%d oom entries explained, %d written", n, st.OOMs)
	}
	if len(s.Segments) != st.Segments || st.Segments == 0 {
		t.Errorf("%d segments read, %d written", len(s.Segments), st.Segments)
	}
}
