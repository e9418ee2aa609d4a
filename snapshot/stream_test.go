package snapshot_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

// onlyReader hides a reader's size, as a pipe does.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestReadStreamed: the trace streams through the converter as it is
// decoded; a file read from a stream of unknown size, with and without
// trace stacks, reads as the same snapshot, every entry in order.
func TestReadStreamed(t *testing.T) {
	var buf bytes.Buffer
	st, err := gensnap.Write(&buf, gensnap.Options{Bytes: 600_000, Seed: 5, Layers: 4, OOMEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for _, skip := range []bool{false, true} {
		o := &snapshot.Options{SkipTraceFrames: skip}
		a, err := snapshot.ReadOptions(bytes.NewReader(data), "sized", o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := snapshot.ReadOptions(onlyReader{bytes.NewReader(data)}, "stream", o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("skip=%v: a sized input and a stream read differently", skip)
		}
		tr := a.DeviceTraces[0]
		if len(tr) != st.Events || !a.HasTimes {
			t.Fatalf("skip=%v: %d entries (times %v), %d written", skip, len(tr), a.HasTimes, st.Events)
		}
		framed := 0
		for i, e := range tr {
			if i > 0 && e.TimeUS <= tr[i-1].TimeUS {
				t.Fatalf("entry %d out of order", i)
			}
			if len(e.Frames) > 0 {
				framed++
				if skip && e.Action != "oom" {
					t.Fatalf("skip: entry %d (%s) has frames", i, e.Action)
				}
			}
		}
		if want := st.Events - st.Segments; !skip && framed < want {
			t.Errorf("%d entries with frames, want at least %d", framed, want)
		}
		if skip && framed != st.OOMs {
			t.Errorf("skip: %d entries with frames, want the %d oom entries", framed, st.OOMs)
		}
	}
}

// A trace entry referred to again through the memo after it streamed is
// an error naming the field, not a silent copy or a panic.
func TestReadStreamedEntryReferredAgain(t *testing.T) {
	entry := &snaptest.Shared{V: snaptest.Dict{{"action", "alloc"}, {"addr", snaptest.Int(0)}, {"size", snaptest.Int(512)}}}
	doc := snaptest.Dict{
		{"segments", []any{}},
		{"device_traces", []any{[]any{entry}}},
		{"external_annotations", []any{entry}},
	}
	_, err := snapshot.ReadBytes(snaptest.Encode(doc), "x")
	var e *snapshot.Error
	if !errors.As(err, &e) || e.Field != "external_annotations[0]" || !errors.Is(err, snapshot.ErrField) {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}

// TestReadOOMsOnly: with TraceOOMsOnly every entry is counted and only the
// oom entries kept, in order; the rest of the snapshot is as a full read
// makes it.
func TestReadOOMsOnly(t *testing.T) {
	var buf bytes.Buffer
	st, err := gensnap.Write(&buf, gensnap.Options{Bytes: 300_000, Seed: 9, Layers: 4, OOMEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	full, err := snapshot.ReadOptions(bytes.NewReader(buf.Bytes()), "full", &snapshot.Options{SkipTraceFrames: true})
	if err != nil {
		t.Fatal(err)
	}
	part, err := snapshot.ReadOptions(onlyReader{bytes.NewReader(buf.Bytes())}, "part", &snapshot.Options{SkipTraceFrames: true, TraceOOMsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var ooms []snapshot.TraceEntry
	for _, e := range full.DeviceTraces[0] {
		if e.Action == "oom" {
			ooms = append(ooms, e)
		}
	}
	if len(ooms) != st.OOMs || !reflect.DeepEqual(part.DeviceTraces[0], ooms) {
		t.Errorf("kept %d entries, want the %d oom entries", len(part.DeviceTraces[0]), st.OOMs)
	}
	if part.TraceEvents(0) != st.Events || full.TraceEvents(0) != st.Events || part.TraceComplete(0) || !full.TraceComplete(0) {
		t.Errorf("events: part %d (complete %v), full %d (complete %v); %d written",
			part.TraceEvents(0), part.TraceComplete(0), full.TraceEvents(0), full.TraceComplete(0), st.Events)
	}
	part.DeviceTraces, full.DeviceTraces = nil, nil
	if !reflect.DeepEqual(part.Segments, full.Segments) || part.HasTimes != full.HasTimes {
		t.Error("segments or times differ")
	}
}

// BenchmarkReadGenerated reads a generated 10 MB snapshot (gensnap, the
// LLM-serving pattern) as analyze does with and without a replay:
//
//	go test ./snapshot -run '^$' -bench ReadGenerated -benchmem
func BenchmarkReadGenerated(b *testing.B) {
	var buf bytes.Buffer
	if _, err := gensnap.Write(&buf, gensnap.Options{Bytes: 10_000_000, Seed: 1, OOMEvery: 50}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	for _, c := range []struct {
		name string
		o    snapshot.Options
	}{
		{"trace=all", snapshot.Options{}},
		{"trace=all/frames=skip", snapshot.Options{SkipTraceFrames: true}},
		{"trace=ooms/frames=skip", snapshot.Options{SkipTraceFrames: true, TraceOOMsOnly: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := snapshot.ReadOptions(bytes.NewReader(data), "gen", &c.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
