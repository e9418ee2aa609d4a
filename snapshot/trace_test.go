package snapshot_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

// TestPackTraces: a file read with Options.PackTraces keeps its trace
// packed (DeviceTraces[0] nil) and Snapshot.Trace gives back every entry
// of the expanded read, in order (All), by index (At) and once more while
// forgetting it (Consume), with the private-pool, metadata and oom fields;
// with TraceOOMsOnly the packed trace holds the oom entries and TraceLen
// still counts them all.
func TestPackTraces(t *testing.T) {
	var buf bytes.Buffer
	st, err := gensnap.Write(&buf, gensnap.Options{Bytes: 900_000, Seed: 3, Layers: 4, OOMEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for _, skip := range []bool{false, true} {
		flat, err := snapshot.ReadOptions(bytes.NewReader(data), "flat", &snapshot.Options{SkipTraceFrames: skip})
		if err != nil {
			t.Fatal(err)
		}
		packed, err := snapshot.ReadOptions(bytes.NewReader(data), "packed", &snapshot.Options{SkipTraceFrames: skip, PackTraces: true})
		if err != nil {
			t.Fatal(err)
		}
		want := flat.DeviceTraces[0]
		if len(want) != st.Events || len(want) < 10_000 {
			t.Fatalf("%d entries, %d written; want enough for several chunks", len(want), st.Events)
		}
		if packed.DeviceTraces[0] != nil || packed.TraceEvents(0) != st.Events || !packed.TraceComplete(0) {
			t.Fatalf("skip=%v: packed read: %d expanded entries, %d events, complete %v",
				skip, len(packed.DeviceTraces[0]), packed.TraceEvents(0), packed.TraceComplete(0))
		}
		tr := packed.Trace(0)
		if tr.Len() != len(want) {
			t.Fatalf("skip=%v: Len %d, want %d", skip, tr.Len(), len(want))
		}
		n := 0
		for i, e := range tr.All() {
			if i != n || !reflect.DeepEqual(e, want[i]) {
				t.Fatalf("skip=%v: All: entry %d (index %d)\n got %+v\nwant %+v", skip, n, i, e, want[n])
			}
			n++
		}
		for _, i := range []int{0, 1, 63, 64, 65, 127, 128, 1000, 8191, len(want) - 1} {
			if e := tr.At(i); !reflect.DeepEqual(e, want[i]) {
				t.Fatalf("skip=%v: At(%d)\n got %+v\nwant %+v", skip, i, e, want[i])
			}
		}
		n = 0
		for i, e := range tr.Consume() {
			if i != n || !reflect.DeepEqual(e, want[i]) {
				t.Fatalf("skip=%v: Consume: entry %d differs", skip, i)
			}
			n++
		}
		if n != len(want) || tr.Len() != 0 {
			t.Errorf("skip=%v: Consume yielded %d of %d entries and left %d", skip, n, len(want), tr.Len())
		}
		packed.DropTrace(0)
		if packed.Trace(0).Len() != 0 || packed.TraceEvents(0) != st.Events {
			t.Errorf("DropTrace: %d entries left, %d events", packed.Trace(0).Len(), packed.TraceEvents(0))
		}
	}

	o, err := snapshot.ReadOptions(bytes.NewReader(data), "ooms", &snapshot.Options{TraceOOMsOnly: true, PackTraces: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Trace(0).Len(); got != st.OOMs || o.TraceEvents(0) != st.Events || o.TraceComplete(0) {
		t.Errorf("oom entries only: %d kept (want %d), %d events (want %d), complete %v", got, st.OOMs, o.TraceEvents(0), st.Events, o.TraceComplete(0))
	}
	for _, e := range o.Trace(0).All() {
		if e.Action != "oom" || e.DeviceFree == 0 {
			t.Fatalf("oom entries only: kept %+v", e)
		}
	}
}

// A packed trace that breaks a rule of Validate is refused as the expanded
// one is: Validate reads packed traces too.
func TestPackTracesValidated(t *testing.T) {
	const a, mib = 1 << 40, 1 << 20
	data := snaptest.Encode(snaptest.Dict{
		{"segments", []any{snaptest.Dict{{"device", 0}, {"address", uint64(a)}, {"total_size", 2 * mib},
			{"allocated_size", 0}, {"active_size", 0}, {"requested_size", 0}, {"stream", 0}, {"segment_type", "small"},
			{"blocks", []any{snaptest.Dict{{"address", uint64(a)}, {"size", 2 * mib}, {"requested_size", 0}, {"state", "inactive"}}}}}}},
		{"device_traces", []any{[]any{snaptest.Dict{{"action", "alloc"}, {"addr", uint64(a + 4*mib)}, {"size", 512}, {"stream", 0}}}}},
	})
	for _, pack := range []bool{false, true} {
		_, err := snapshot.ReadOptions(bytes.NewReader(data), "outside.pickle", &snapshot.Options{PackTraces: pack})
		if err == nil || !strings.Contains(err.Error(), "lies in no segment") {
			t.Errorf("pack=%v: an alloc outside every segment: %v", pack, err)
		}
	}
}
