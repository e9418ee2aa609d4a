package snapshot_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// SkipTraceFrames drops the stacks of trace entries other than oom, and
// nothing else.
func TestSkipTraceFrames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "modern_p4.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := snapshot.ReadBytes(b, "modern")
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.ReadOptions(bytes.NewReader(b), "modern", &snapshot.Options{SkipTraceFrames: true})
	if err != nil {
		t.Fatal(err)
	}
	framed := 0
	for d, tr := range full.DeviceTraces {
		for i, e := range tr {
			got := s.DeviceTraces[d][i]
			if len(e.Frames) > 0 && e.Action != "oom" {
				framed++
				if got.Frames != nil {
					t.Errorf("device %d entry %d (%s): frames kept", d, i, e.Action)
				}
			}
			if e.Action == "oom" && len(got.Frames) != len(e.Frames) {
				t.Errorf("oom entry lost its frames")
			}
			got.Frames, e.Frames = nil, nil
			if got.Action != e.Action || got.Addr != e.Addr || got.Size != e.Size || got.TimeUS != e.TimeUS {
				t.Errorf("device %d entry %d: %+v, want %+v", d, i, got, e)
			}
		}
	}
	if framed == 0 {
		t.Fatal("the fixture has no framed trace entries: the test checks nothing")
	}
	if len(s.Segments) != len(full.Segments) || len(s.Segments[0].Blocks[0].Frames) == 0 {
		t.Error("block frames must stay")
	}
}
