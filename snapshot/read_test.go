package snapshot_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

const mib = 1 << 20

func readFile(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := snapshot.Read(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	s0     uint64 = 0x7F0000000000
	l0     uint64 = 0x7F0000400000
	d1     uint64 = 0x7E0000000000
	f1            = snapshot.Frame{Filename: "train.py", Line: 12, Name: "forward"}
	f2            = snapshot.Frame{Filename: "??", Line: 0, Name: "torch::unwind::unwind()"}
	frames        = []snapshot.Frame{f1, f2}
)

// wantSegments is what testdata/gen.py writes in modern().
func wantSegments() []snapshot.Segment {
	return []snapshot.Segment{
		{Device: 0, Address: l0, TotalSize: 20 * mib, AllocatedSize: 12 * mib, ActiveSize: 12 * mib,
			RequestedSize: 12*mib - 100, SegmentType: "large", Frames: frames,
			Blocks: []snapshot.Block{
				{Address: l0, Size: 12 * mib, RequestedSize: 12*mib - 100, State: snapshot.StateAllocated, Frames: frames},
				{Address: l0 + 12*mib, Size: 8 * mib, RequestedSize: 8 * mib, State: snapshot.StateInactive},
			}},
		{Device: 0, Address: s0, TotalSize: 2 * mib, AllocatedSize: 512, ActiveSize: 1536,
			RequestedSize: 1300, SegmentType: "small", Frames: frames,
			Blocks: []snapshot.Block{
				{Address: s0, Size: 512, RequestedSize: 300, State: snapshot.StateAllocated, Frames: frames},
				{Address: s0 + 512, Size: 1024, RequestedSize: 1000, State: snapshot.StatePendingFree, Frames: frames},
				{Address: s0 + 1536, Size: 2*mib - 1536, RequestedSize: 77, State: snapshot.StateInactive},
			}},
		{Device: 1, Address: d1, TotalSize: 4 * mib, AllocatedSize: 4 * mib, ActiveSize: 4 * mib,
			RequestedSize: 4 * mib, Stream: 93824992235296, SegmentType: "large", PoolID: [2]int64{1, 2},
			IsExpandable: true, Frames: frames,
			Blocks: []snapshot.Block{
				{Address: d1, Size: 4 * mib, RequestedSize: 4 * mib, State: snapshot.StateAllocated, Frames: frames},
			}},
	}
}

func wantTrace(times bool) []snapshot.TraceEntry {
	tr := []snapshot.TraceEntry{
		{Action: "segment_alloc", Addr: l0, Size: 20 * mib, Frames: frames},
		{Action: "alloc", Addr: l0, Size: 12*mib - 100, Frames: frames},
		{Action: "oom", DeviceFree: 3 * mib, Size: 40 * mib},
		{Action: "future_action"},
		{Action: "snapshot", Size: 12*mib + 1536},
	}
	if times {
		for i := range tr {
			tr[i].TimeUS = 1_700_000_000_000_000 + int64(i)
		}
	}
	return tr
}

func TestModern(t *testing.T) {
	for _, name := range []string{"modern_p2.pickle", "modern_p4.pickle", "modern_p5.pickle"} {
		t.Run(name, func(t *testing.T) {
			s := readFile(t, name)
			if s.Format != snapshot.FormatModern || !s.HasTimes {
				t.Errorf("format %q, has times %v", s.Format, s.HasTimes)
			}
			if !reflect.DeepEqual(s.Segments, wantSegments()) {
				t.Errorf("segments\n%+v\nwant\n%+v", s.Segments, wantSegments())
			}
			if len(s.DeviceTraces) != 2 || len(s.DeviceTraces[1]) != 0 {
				t.Fatalf("device traces: %d devices", len(s.DeviceTraces))
			}
			if !reflect.DeepEqual(s.DeviceTraces[0], wantTrace(true)) {
				t.Errorf("trace\n%+v\nwant\n%+v", s.DeviceTraces[0], wantTrace(true))
			}
			want := []snapshot.Annotation{{Stage: "START", Name: "step", TimeUS: 1_700_000_000_000_000}}
			if !reflect.DeepEqual(s.ExternalAnnotations, want) {
				t.Errorf("annotations %+v", s.ExternalAnnotations)
			}
			if _, ok := s.Extra["host_segments"]; !ok || len(s.Extra) != 1 {
				t.Errorf("extra keys %v, want host_segments", s.Extra)
			}
			a := s.AllocatorSettings
			conf, _ := a.Conf()
			ms, _ := a.MaxSplitSize()
			exp, _ := a.ExpandableSegments()
			gc, _ := a.GarbageCollectionThreshold()
			div, _ := a.RoundupPower2Divisions()
			if conf != "expandable_segments:True,max_split_size_mb:128" || ms != 128*mib || !exp || gc != 0.6 {
				t.Errorf("settings: %q %d %v %v", conf, ms, exp, gc)
			}
			wantDiv := []snapshot.Division{{1, 4}, {2, 0}, {1024, 8}, {32768, 0}}
			if !reflect.DeepEqual(div, wantDiv) {
				t.Errorf("roundup_power2_divisions %v", div)
			}
			if a["pinned_num_register_threads"] != int64(1) {
				t.Errorf("pinned_num_register_threads = %#v", a["pinned_num_register_threads"])
			}
			// The fixture lists the large segment first on purpose (Layout
			// sorts); every other invariant holds.
			if err := checkInvariants(s); err == nil || !strings.Contains(err.Error(), "not sorted") {
				t.Errorf("invariants: %v, want only the deliberate unsorted order", err)
			}
			s.Segments[0], s.Segments[1] = s.Segments[1], s.Segments[0]
			if err := checkInvariants(s); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOlderGenerations(t *testing.T) {
	mid := readFile(t, "mid.pickle")
	if mid.Format != snapshot.FormatNoSettings || !mid.HasTimes || mid.AllocatorSettings != nil {
		t.Errorf("mid: format %q times %v settings %v", mid.Format, mid.HasTimes, mid.AllocatorSettings)
	}
	if !reflect.DeepEqual(mid.Segments, wantSegments()) || !reflect.DeepEqual(mid.DeviceTraces[0], wantTrace(true)) {
		t.Error("mid: segments or trace differ from modern")
	}
	pre := readFile(t, "pre_time.pickle")
	if pre.Format != snapshot.FormatNoSettings || pre.HasTimes {
		t.Errorf("pre_time: format %q times %v", pre.Format, pre.HasTimes)
	}
	if !reflect.DeepEqual(pre.DeviceTraces[0], wantTrace(false)) {
		t.Errorf("pre_time trace %+v", pre.DeviceTraces[0])
	}
	list := readFile(t, "segment_list.pickle")
	if list.Format != snapshot.FormatSegmentList || !reflect.DeepEqual(list.Segments, wantSegments()[:2]) {
		t.Errorf("segment list: format %q segments %+v", list.Format, list.Segments)
	}
}

func TestLegacy(t *testing.T) {
	s := readFile(t, "legacy.pickle")
	if s.Format != snapshot.FormatLegacy {
		t.Errorf("format %q", s.Format)
	}
	want := []snapshot.Segment{
		{Address: s0, TotalSize: 2 * mib, AllocatedSize: 512, ActiveSize: 512, RequestedSize: 300, SegmentType: "small",
			Blocks: []snapshot.Block{
				{Address: s0, Size: 512, RequestedSize: 300, State: snapshot.StateAllocated, Frames: frames,
					History: []snapshot.HistoryEntry{{Addr: s0, RealSize: 300, Frames: frames}}},
				{Address: s0 + 512, Size: 2*mib - 512, State: snapshot.StateInactive},
			}},
		{Address: l0, TotalSize: 20 * mib, AllocatedSize: 20 * mib, ActiveSize: 20 * mib, RequestedSize: 20*mib - 4096,
			SegmentType: "large",
			Blocks: []snapshot.Block{
				{Address: l0, Size: 20 * mib, RequestedSize: 20*mib - 4096, State: snapshot.StateAllocated, Frames: frames,
					History: []snapshot.HistoryEntry{{Addr: l0, RealSize: 20*mib - 4096, Frames: frames}}},
			}},
	}
	if !reflect.DeepEqual(s.Segments, want) {
		t.Errorf("segments\n%+v\nwant\n%+v", s.Segments, want)
	}
	if err := checkInvariants(s); err != nil {
		t.Error(err)
	}
}

// legacy_history.pickle keeps every history entry, in file order: the live
// allocation first, then earlier ones merged into the block.
func TestLegacyHistory(t *testing.T) {
	s := readFile(t, "legacy_history.pickle")
	if s.Format != snapshot.FormatLegacy || len(s.Segments) != 2 {
		t.Fatalf("format %q, %d segments", s.Format, len(s.Segments))
	}
	large := s.Segments[1].Blocks
	wantLive := []snapshot.HistoryEntry{{Addr: l0, RealSize: 4*mib - 100, Frames: frames}, {Addr: l0, RealSize: 2 * mib, Frames: frames}}
	wantFree := []snapshot.HistoryEntry{{Addr: l0 + 4*mib, RealSize: 3 * mib, Frames: frames}, {Addr: l0 + 9*mib, RealSize: 2 * mib, Frames: frames}}
	if !reflect.DeepEqual(large[0].History, wantLive) || !reflect.DeepEqual(large[1].History, wantFree) {
		t.Errorf("histories\n%+v\n%+v", large[0].History, large[1].History)
	}
	if large[0].RequestedSize != 4*mib-100 || large[1].History[0].Addr != large[1].Address {
		t.Errorf("blocks %+v", large)
	}
	if h := s.Segments[0].Blocks[1].History; h != nil {
		t.Errorf("a block without history got %+v", h)
	}
	if err := checkInvariants(s); err != nil {
		t.Error(err)
	}
}

func TestLayout(t *testing.T) {
	s := readFile(t, "modern_p4.pickle")
	l := s.Layout(0, 100*mib)
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	if len(l.Segments) != 2 || l.Segments[0].Addr != s0 || l.Segments[1].Addr != l0 {
		t.Fatalf("segments not sorted by address: %+v", l.Segments)
	}
	small := l.Segments[0]
	wantBlocks := []mem.Block{
		{Addr: s0, Size: 512, Requested: 300, State: mem.Active},
		{Addr: s0 + 512, Size: 1024, Requested: 1000, State: mem.PendingFree},
		{Addr: s0 + 1536, Size: 2*mib - 1536, State: mem.Free}, // stale 77 dropped
	}
	if !reflect.DeepEqual(small.Blocks, wantBlocks) || small.Pool != "small" {
		t.Errorf("small segment %+v", small)
	}
	c := l.Classes()
	if c.Reserved() != 22*mib || c.Allocated() != 12*mib+1536 || c.Live != 12*mib-100+1300 || c.DeviceFree != 78*mib {
		t.Errorf("classes %+v", c)
	}
	// The 8 MiB free large block vs 78 MiB of device free memory.
	if l.MaxAllocatable != 78*mib {
		t.Errorf("MaxAllocatable %d", l.MaxAllocatable)
	}
	if l1 := s.Layout(1, 0); l1.Capacity != 4*mib || !l1.Segments[0].Expandable || l1.Check() != nil {
		t.Errorf("device 1 layout %+v", l1)
	}
}

// base is a minimal modern snapshot for the error table.
func base() od {
	block := func(addr, size int64, state string) od {
		return od{{"address", addr}, {"size", size}, {"requested_size", size}, {"state", state},
			{"frames", []any{od{{"filename", "a.py"}, {"line", 1}, {"name", "f"}}}}}
	}
	seg := func(addr int64) od {
		return od{{"device", 0}, {"address", addr}, {"total_size", 2 * mib}, {"allocated_size", 1 * mib},
			{"active_size", 1 * mib}, {"requested_size", 1 * mib}, {"stream", 0}, {"segment_type", "small"},
			{"segment_pool_id", tup{0, 0}}, {"is_expandable", false}, {"frames", []any{}},
			{"blocks", []any{block(addr, 1*mib, "active_allocated"), block(addr+mib, 1*mib, "inactive")}}}
	}
	return od{
		{"segments", []any{seg(1 << 40), seg(1<<40 + 4*mib)}},
		{"device_traces", []any{[]any{od{{"action", "alloc"}, {"addr", 1 << 40}, {"size", 100}, {"stream", 0}, {"time_us", 5}}}}},
		{"allocator_settings", od{{"PYTORCH_CUDA_ALLOC_CONF", ""}, {"max_split_size", -1},
			{"garbage_collection_threshold", 0.0}, {"expandable_segments", false},
			{"roundup_power2_divisions", od{{"1", 0}}}}},
		{"external_annotations", []any{}},
	}
}

// with returns base() with the value at path (keys and list indexes
// separated by dots) replaced by v, or removed when v is del.
func with(path string, v any) od {
	return setPath(base(), strings.Split(path, "."), v).(od)
}

type deleted struct{}

var del = deleted{}

func setPath(node any, path []string, v any) any {
	switch n := node.(type) {
	case od:
		if len(path) == 1 {
			if v == del {
				return n.Del(path[0])
			}
			return n.Set(path[0], v)
		}
		return n.Set(path[0], setPath(n.Get(path[0]), path[1:], v))
	case []any:
		i := 0
		for _, c := range path[0] {
			i = i*10 + int(c-'0')
		}
		out := append([]any(nil), n...)
		if len(path) == 1 {
			out[i] = v
		} else {
			out[i] = setPath(n[i], path[1:], v)
		}
		return out
	}
	panic("setPath: bad path")
}

func TestBaseReads(t *testing.T) {
	s, err := snapshot.ReadBytes(encode(base()), "base")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(s); err != nil {
		t.Error(err)
	}
}

func TestFieldErrors(t *testing.T) {
	cases := []struct {
		doc   any
		field string
		msg   string
	}{
		{with("segments.1.blocks.0.size", "big"), "segments[1].blocks[0].size", "want int, got str"},
		{with("segments.1.blocks.0.size", -512), "segments[1].blocks[0].size", "negative"},
		{with("segments.1.blocks.0.size", del), "segments[1].blocks[0].size", "missing"},
		{with("segments.0.blocks.1.state", "weird"), "segments[0].blocks[1].state", `unknown block state "weird"`},
		{with("segments.0.blocks.1.state", 3), "segments[0].blocks[1].state", "want str, got int"},
		{with("segments.0.blocks.1.address", -1), "segments[0].blocks[1].address", "negative address"},
		{with("segments.0.blocks.1", "x"), "segments[0].blocks[1]", "want dict, got str"},
		{with("segments.0.blocks", od{}), "segments[0].blocks", "want list, got dict"},
		{with("segments.0.blocks.0.frames.0.line", "one"), "segments[0].blocks[0].frames[0].line", "want int, got str"},
		{with("segments.0.blocks.0.frames.0", 7), "segments[0].blocks[0].frames[0]", "want dict, got int"},
		{with("segments.1.address", "0x10"), "segments[1].address", "want int, got str"},
		{with("segments.1.total_size", uint64(1<<63)), "segments[1].total_size", "does not fit"},
		{with("segments.1.total_size", del), "segments[1].total_size", "missing"},
		{with("segments.1.is_expandable", 1), "segments[1].is_expandable", "want bool, got int"},
		{with("segments.1.segment_pool_id", tup{0}), "segments[1].segment_pool_id", "pair of ints"},
		{with("segments.1.segment_pool_id", tup{0, "a"}), "segments[1].segment_pool_id[1]", "want int, got str"},
		{with("segments.1.device", 1.5), "segments[1].device", "want int, got float"},
		{with("segments", od{}), "segments", "want list, got dict"},
		{base().Del("segments"), "segments", "missing"},
		{with("device_traces.0.0.time_us", "now"), "device_traces[0][0].time_us", "want int, got str"},
		{with("device_traces.0.0.action", del), "device_traces[0][0].action", "missing"},
		{with("device_traces.0", 5), "device_traces[0]", "want list, got int"},
		{with("allocator_settings.max_split_size", "128MB"), "allocator_settings.max_split_size", "want int, got str"},
		{with("allocator_settings.expandable_segments", "True"), "allocator_settings.expandable_segments", "want bool"},
		{with("allocator_settings.garbage_collection_threshold", "0.5"), "allocator_settings.garbage_collection_threshold", "want float"},
		{with("allocator_settings.roundup_power2_divisions.1", "x"), `allocator_settings.roundup_power2_divisions["1"]`, "want int"},
		{with("allocator_settings.PYTORCH_CUDA_ALLOC_CONF", 0), "allocator_settings.PYTORCH_CUDA_ALLOC_CONF", "want str"},
		{with("allocator_settings", []any{}), "allocator_settings", "want dict, got list"},
		{with("external_annotations", []any{od{{"time_us", "x"}}}), "external_annotations[0].time_us", "want int"},
		{"just a string", "", "want dict or list of segments, got str"},
	}
	for _, c := range cases {
		t.Run(c.field+"/"+c.msg, func(t *testing.T) {
			data := encode(c.doc)
			_, err := snapshot.ReadBytes(data, "bad.pickle")
			var e *snapshot.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want *snapshot.Error", err, err)
			}
			if !errors.Is(err, snapshot.ErrField) || e.Field != c.field || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v (field %q), want field %q and %q", err, e.Field, c.field, c.msg)
			}
			if e.Offset < 0 || e.Offset >= int64(len(data)) || !strings.HasPrefix(err.Error(), "bad.pickle: offset ") {
				t.Errorf("offset %d outside the %d-byte file, or message %q", e.Offset, len(data), err)
			}
		})
	}
}

// TestFieldOffset checks that a scalar's offset points at its opcode.
func TestFieldOffset(t *testing.T) {
	data := encode(with("segments.1.blocks.0.size", "big"))
	_, err := snapshot.ReadBytes(data, "")
	var e *snapshot.Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if data[e.Offset] != 'X' || string(data[e.Offset+5:e.Offset+8]) != "big" {
		t.Errorf("offset %d points at %q", e.Offset, data[e.Offset:min(len(data), int(e.Offset)+8)])
	}
}

func TestTolerated(t *testing.T) {
	cases := []od{
		with("segments.0.color", "blue"),                                   // unknown segment key
		with("device_traces.0.0.action", "brand_new_action"),               // unknown action
		with("segments.0.blocks.1.state", "active_awaiting_free"),          // docs' spelling
		with("allocator_settings.graph_capture_record_stream_reuse", true), // newer key
		with("segments.0.frames", nil),                                     // None = absent
		base().Del("device_traces").Del("allocator_settings").Del("external_annotations"),
		base().Set("host_traces", []any{}),
	}
	for i, doc := range cases {
		s, err := snapshot.ReadBytes(encode(doc), "ok")
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if i == 2 && s.Segments[0].Blocks[1].State != snapshot.StatePendingFree {
			t.Errorf("active_awaiting_free read as %q", s.Segments[0].Blocks[1].State)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	hostile, err := os.ReadFile(filepath.Join("pickle", "testdata", "hostile_p4.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.ReadBytes(hostile, "evil.pickle")
	if !errors.Is(err, snapshot.ErrDecode) || !errors.Is(err, pickle.ErrForbidden) ||
		!strings.Contains(err.Error(), "evil.pickle: offset 34: STACK_GLOBAL") {
		t.Errorf("hostile: %v", err)
	}
	// Sharing: one segment listed many times expands past MaxBuiltBytes.
	seg := base().Get("segments").([]any)[0]
	many := make([]any, 1000)
	for i := range many {
		many[i] = seg
	}
	data := encode(base().Set("segments", many))
	_, err = snapshot.ReadOptions(strings.NewReader(string(data)), "big", &snapshot.Options{MaxBuiltBytes: 100_000})
	if !errors.Is(err, snapshot.ErrLimit) || !strings.Contains(err.Error(), `field "segments"`) {
		t.Errorf("MaxBuiltBytes: %v", err)
	}
}
