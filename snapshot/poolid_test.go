package snapshot_test

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// A trace entry's pool_id, user_metadata and compile_context are decoded
// when present; user_metadata and compile_context may be None.
func TestTraceEntryPoolAndMetadata(t *testing.T) {
	doc := with("device_traces.0.0", od{{"action", "alloc"}, {"addr", 1 << 40}, {"size", 100}, {"stream", 0},
		{"pool_id", tup{3, 0}}, {"user_metadata", "step=7"}, {"compile_context", nil}})
	s, err := snapshot.ReadBytes(encode(doc), "pool.pickle")
	if err != nil {
		t.Fatal(err)
	}
	e := s.DeviceTraces[0][0]
	if !e.HasPoolID || e.PoolID != [2]int64{3, 0} || e.UserMetadata != "step=7" || e.CompileContext != "" {
		t.Errorf("entry %+v, want pool (3, 0) and user_metadata step=7", e)
	}
	s, err = snapshot.ReadBytes(encode(base()), "base")
	if err != nil {
		t.Fatal(err)
	}
	if e := s.DeviceTraces[0][0]; e.HasPoolID || e.PoolID != [2]int64{} {
		t.Errorf("an entry without pool_id decoded as %+v", e)
	}
	for _, c := range []struct {
		doc         od
		field, want string
	}{
		{with("device_traces.0.0.pool_id", tup{1}), "device_traces[0][0].pool_id", "pair of ints"},
		{with("device_traces.0.0.pool_id", tup{1, 2.5}), "device_traces[0][0].pool_id[1]", "want int, got float"},
		{with("device_traces.0.0.user_metadata", 4), "device_traces[0][0].user_metadata", "want str"},
	} {
		_, err := snapshot.ReadBytes(encode(c.doc), "bad.pickle")
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming it (%s)", c.field, err, c.want)
		}
	}
}

// Pinned host memory (host_segments, host_traces) is summarized apart.
func TestPinnedHost(t *testing.T) {
	hostSeg := func(total, allocated int64) od { return od{{"total_size", total}, {"allocated_size", allocated}} }
	doc := base().Set("host_segments", []any{hostSeg(4*mib, 1*mib), hostSeg(2*mib, 2*mib), "odd"}).
		Set("host_traces", []any{[]any{od{{"action", "alloc"}}, od{{"action", "free"}}}})
	s, err := snapshot.ReadBytes(encode(doc), "host.pickle")
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.PinnedHost{Present: true, Segments: 3, Reserved: 6 * mib, Allocated: 3 * mib, Events: 2}
	if got := s.PinnedHost(); got != want {
		t.Errorf("PinnedHost = %+v, want %+v", got, want)
	}
	s, err = snapshot.ReadBytes(encode(base().Set("host_segments", []any{hostSeg(1<<62, 0), hostSeg(1<<62, 0)})), "big.pickle")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.PinnedHost(); got.Reserved != 1<<63-1 {
		t.Errorf("overflowing host sizes summed to %d, want saturation", got.Reserved)
	}
	s, err = snapshot.ReadBytes(encode(base()), "base")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.PinnedHost(); got.Present {
		t.Errorf("a file without host memory: %+v", got)
	}
}

// FuzzReadPools is FuzzRead seeded with the fields of private pools and
// newer writers (a trace entry's pool_id, user_metadata, compile_context;
// host_segments and host_traces), and summarizes the pinned host memory of
// what it accepts.
//
//	go test ./snapshot -run '^$' -fuzz FuzzReadPools -fuzztime 20s
func FuzzReadPools(f *testing.F) {
	entry := od{{"action", "alloc"}, {"addr", 1 << 40}, {"size", 100}, {"stream", 0}, {"time_us", 5},
		{"pool_id", tup{1, 0}}, {"user_metadata", "step=1"}, {"compile_context", "forward"}}
	f.Add(encode(with("device_traces.0.0", entry)))
	f.Add(encode(with("segments.1.segment_pool_id", tup{2, uint64(1 << 63)})))
	f.Add(encode(base().Set("host_segments", []any{od{{"total_size", 4 * mib}, {"allocated_size", mib}}}).
		Set("host_traces", []any{[]any{od{{"action", "alloc"}}}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data)
		if s, err := snapshot.ReadBytes(data, "fuzz"); err == nil {
			if h := s.PinnedHost(); h.Reserved < 0 || h.Allocated < 0 || h.Segments < 0 {
				t.Fatalf("pinned host %+v", h)
			}
		}
	})
}
