package snapshot_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
	"github.com/gpufrag/gpufrag/snapshot"
)

func TestMemoryStatsFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "memory_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.ReadBytes(b, "memory_stats.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != snapshot.FormatMemoryStats || len(s.Segments) != 0 || len(s.Stats) != 15 {
		t.Fatalf("format %s, %d segments, %d stats", s.Format, len(s.Segments), len(s.Stats))
	}
	for k, want := range map[string]int64{"reserved_bytes.all.current": 23068672, "max_split_size": -1, "num_ooms": 1} {
		if got, ok := s.Stats.Get(k); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", k, got, ok, want)
		}
	}
}

func TestMemoryStatsJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]int64 // nil: an error is expected
		kind     error
		field    string
		offset   int64
		msg      string // in the error's text
	}{
		{name: "flat", in: `{"num_ooms": 1, "a.b": 1, "c": -2}`, want: map[string]int64{"num_ooms": 1, "a.b": 1, "c": -2}},
		{name: "nested is flattened", in: " \n{\"reserved_bytes\": {\"all\": {\"current\": 5}}, \"num_ooms\": 0}",
			want: map[string]int64{"reserved_bytes.all.current": 5, "num_ooms": 0}},
		{name: "integral float", in: `{"num_ooms": 2.0, "y": null}`, want: map[string]int64{"num_ooms": 2}},
		{name: "bom", in: "\xef\xbb\xbf{\"num_ooms\": 0}", want: map[string]int64{"num_ooms": 0}},
		{name: "string value", in: `{"x": "1"}`, kind: snapshot.ErrField, field: "x", offset: 6,
			msg: "holds integer counters only; this JSON is something else"},
		// gpufrag's own JSON inputs, given to analyze, are named.
		{name: "op trace", in: "{\"op\": \"alloc\", \"id\": \"a\", \"size\": 512}\n{\"op\": \"free\", \"id\": \"a\"}\n", kind: snapshot.ErrField, field: "op",
			msg: "this JSON is something else: an allocation op trace, which gpufrag replay reads"},
		{name: "layout", in: `{"gpufrag_layout": 1, "allocator": "caching", "segments": []}`, kind: snapshot.ErrField, field: "allocator",
			msg: "this JSON is something else: a saved layout, which gpufrag defrag reads"},
		{name: "fraction", in: `{"a": {"x": 1.5}}`, kind: snapshot.ErrField, field: "a.x"},
		{name: "array", in: `{"x": [1]}`, kind: snapshot.ErrField, field: "x"},
		{name: "truncated", in: `{"x": 1`, kind: snapshot.ErrDecode, offset: 7},
		{name: "garbage after", in: `{"x": 1} {}`, kind: snapshot.ErrDecode, offset: 9},
		{name: "too deep", in: strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), kind: snapshot.ErrField},
		{name: "bad syntax", in: `{"x" 1}`, kind: snapshot.ErrDecode, field: "x", offset: 5},
		// Syntax errors name the bad byte's offset and the field they are
		// in: the value being read, or the object between its keys. In the
		// first 4 KiB (untrusted.CheckJSONStart finds them before the rest
		// is read) and past them, the same error.
		{name: "bad literal", in: `{"num_ooms": 0, "a": {"x": tru}}`, kind: snapshot.ErrDecode, field: "a.x", offset: 30,
			msg: `stats.json: offset 30: field "a.x": memory_stats JSON: invalid character '}' in literal true (expecting 'e')`},
		{name: "trailing comma", in: `{"num_ooms": 0, "a": {"x": 1,}}`, kind: snapshot.ErrDecode, field: "a", offset: 29,
			msg: `offset 29: field "a": memory_stats JSON: invalid character '}' looking for beginning of object key string`},
		{name: "leading zero", in: `{"a": {"x": 01}}`, kind: snapshot.ErrDecode, field: "a", offset: 13},
		{name: "truncated nested", in: `{"a": {"x": 1`, kind: snapshot.ErrDecode, field: "a", offset: 13,
			msg: `offset 13: field "a": memory_stats JSON: unexpected end of the document`},
		{name: "truncated key", in: `{"a": {"x": 1, "y`, kind: snapshot.ErrDecode, field: "a", offset: 17},
		{name: "bad literal past 4 KiB", in: `{"num_ooms": 0,` + strings.Repeat(" ", 5000) + `"a": {"x": tru}}`, kind: snapshot.ErrDecode, field: "a.x", offset: 5029,
			msg: `offset 5029: field "a.x": memory_stats JSON: invalid character '}' in literal true (expecting 'e')`},
		{name: "trailing comma past 4 KiB", in: `{"num_ooms": 0,` + strings.Repeat(" ", 5000) + `"a": {"x": 1,}}`, kind: snapshot.ErrDecode, field: "a", offset: 5028},
		{name: "bad literal after a bom", in: "\xef\xbb\xbf" + `{"a": {"x": tru}}`, kind: snapshot.ErrDecode, field: "a.x", offset: 18},
		// Bad values: out of int64's range, and echoed at most 64 bytes
		// long, as are the keys of the field.
		{name: "out of range", in: `{"x": 9223372036854775808}`, kind: snapshot.ErrField, field: "x", offset: 6,
			msg: `field "x": want a 64-bit integer, got 9223372036854775808, out of its range`},
		{name: "out of range float", in: `{"x": 1e19}`, kind: snapshot.ErrField, field: "x", msg: "got 1e19, out of its range"},
		{name: "long number", in: `{"x": 1` + strings.Repeat("0", 300) + `}`, kind: snapshot.ErrField, field: "x",
			msg: `got 1` + strings.Repeat("0", 63) + `… (301 bytes), out of its range`},
		{name: "long key", in: `{"` + strings.Repeat("k", 300) + `": "1"}`, kind: snapshot.ErrField, field: strings.Repeat("k", 64) + "… (300 bytes)"},
		// No key of memory_stats: another JSON document, read as one with no figure.
		{name: "no memory_stats key", in: `{"a": 1, "b": {"current": 2}}`, kind: snapshot.ErrNotSnapshot},
		{name: "empty object", in: `{}`, kind: snapshot.ErrNotSnapshot},
		{name: "nested counter", in: `{"x": {"reserved_bytes": 1}, "active_bytes": {"all": {"peak": 3}}}`,
			want: map[string]int64{"x.reserved_bytes": 1, "active_bytes.all.peak": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := snapshot.ReadBytes([]byte(tc.in), "stats.json")
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Stats) != len(tc.want) {
					t.Fatalf("got %v, want %v", s.Stats, tc.want)
				}
				for k, v := range tc.want {
					if s.Stats[k] != v {
						t.Errorf("%s = %d, want %d", k, s.Stats[k], v)
					}
				}
				return
			}
			var e *snapshot.Error
			if !errors.As(err, &e) || !errors.Is(err, tc.kind) {
				t.Fatalf("got %v, want a *snapshot.Error of kind %v", err, tc.kind)
			}
			if tc.field != "" && e.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", e.Field, tc.field, err)
			}
			if tc.offset != 0 && e.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", e.Offset, tc.offset, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%q\ndoes not contain %q", err, tc.msg)
			}
		})
	}
}

// FuzzMemoryStats checks the JSON path: no panic, errors are *snapshot.Error.
//
//	go test ./snapshot -run '^$' -fuzz FuzzMemoryStats -fuzztime 60s
func FuzzMemoryStats(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "memory_stats.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"a": {"b": 1}}`))
	f.Add([]byte(`"a": 1}`)) // no memory_stats key: not a memory snapshot
	// Issue 28 (data follows a "{"): allocated above reserved, a repeated
	// key, keys that differ only in case, random bytes.
	f.Add([]byte(`"allocated_bytes.all.current": 8589934592, "reserved_bytes.all.current": 4194304}`))
	f.Add([]byte(`"num_ooms": 1, "num_ooms": 2}`))
	f.Add([]byte(`"num_ooms": 1, "NUM_OOMS": 2}`))
	f.Add([]byte("\x86\xad\x05\xdc\x98\x7f\x80b0"))
	// Syntax errors in the first 4 KiB and past them, a number past int64.
	f.Add([]byte(`"num_ooms": 0, "a": {"x": tru}}`))
	f.Add([]byte(`"num_ooms": 0,` + strings.Repeat(" ", 5000) + `"a": {"x": 1,}}`))
	f.Add([]byte(`"a": {"x": 99999999999999999999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte("{"), data...)
		s, err := snapshot.ReadBytes(in, "fuzz")
		if err != nil {
			var e *snapshot.Error
			if !errors.As(err, &e) || e.Err == nil {
				t.Fatalf("error %v (%T) is not a *snapshot.Error with a kind", err, err)
			}
			// Every error says where: an offset within the input (its
			// end for one that ends too soon).
			if e.Offset < 0 || e.Offset > int64(len(in)) {
				t.Fatalf("error %v: offset %d outside the input's %d bytes", err, e.Offset, len(in))
			}
			return
		}
		_ = s.Stats.String()
		a, okA := s.Stats.Get("allocated_bytes.all.current")
		r, okR := s.Stats.Get("reserved_bytes.all.current")
		if okA && okR && a > r {
			t.Fatalf("accepted allocated %d above reserved %d", a, r)
		}
	})
}

// TestMemoryStatsInvariants (issue 28, item 5): counters that no real
// memory_stats dump holds, and keys the JSON decoder would have merged
// silently, are refused naming the field and the offset of its value.
func TestMemoryStatsInvariants(t *testing.T) {
	const ok = `"requested_bytes.all.current": 10, "allocated_bytes.all.current": 12, "active_bytes.all.current": 14, ` +
		`"reserved_bytes.all.current": 40, "inactive_split_bytes.all.current": 20, "reserved_bytes.all.peak": 60`
	if _, err := snapshot.ReadBytes([]byte("{"+ok+"}"), "stats.json"); err != nil {
		t.Fatalf("consistent counters: %v", err)
	}
	for _, tc := range []struct {
		name, in string
		kind     error
		field    string
		offset   int64 // of the field's value, or of the key that repeats one
		msg      string
	}{
		{"allocated above reserved", `{"reserved_bytes.all.current": 4294967296, "allocated_bytes.all.current": 8589934592}`,
			snapshot.ErrField, "allocated_bytes.all.current", 74, "8GiB (8589934592) is more than reserved_bytes.all.current 4GiB (4294967296)"},
		{"active above reserved", `{"active_bytes.large_pool.current": 5, "reserved_bytes.large_pool.current": 4}`,
			snapshot.ErrField, "active_bytes.large_pool.current", 36, "is more than reserved_bytes.large_pool.current"},
		{"requested above allocated", `{"requested_bytes.all.peak": 9, "allocated_bytes.all.peak": 8}`,
			snapshot.ErrField, "requested_bytes.all.peak", 29, "is more than allocated_bytes.all.peak"},
		{"split above cached free", `{"reserved_bytes.all.current": 10, "active_bytes.all.current": 8, "inactive_split_bytes.all.current": 3}`,
			snapshot.ErrField, "inactive_split_bytes.all.current", 102, "is more than reserved - active, 2B (2)"},
		{"peak below current", `{"reserved_bytes.all.current": 10, "reserved_bytes.all.peak": 9}`,
			snapshot.ErrField, "reserved_bytes.all.peak", 62, "peak 9B (9) is below the current value 10B (10)"},
		{"negative", `{"allocated_bytes.small_pool.current": -4}`,
			snapshot.ErrField, "allocated_bytes.small_pool.current", 39, "negative byte count -4"},
		{"repeated key", `{"num_ooms": 0, "num_ooms": 3}`, snapshot.ErrField, "", 16, `key "num_ooms" appears twice`},
		{"case variants", `{"a": {"num_ooms": 0, "NUM_OOMS": 3}}`, snapshot.ErrField, "a", 22, `keys "num_ooms" and "NUM_OOMS" differ only in case`},
		// Invalid UTF-8 in the first 4 KiB is no text; later, CheckJSON finds it.
		{"invalid utf-8", "{\"num_\xffooms\": 0}", snapshot.ErrNotSnapshot, "", 6, "not a text file: byte 6 (0xff) is not UTF-8"},
		{"invalid utf-8 later", "{\"num_ooms\": 0," + strings.Repeat(" ", 5000) + "\"num_\xffooms\": 0}", snapshot.ErrDecode, "", 5020, "invalid UTF-8 (byte 0xff)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := snapshot.ReadBytes([]byte(tc.in), "stats.json")
			var e *snapshot.Error
			if !errors.As(err, &e) || !errors.Is(err, tc.kind) || e.Field != tc.field || e.Offset != tc.offset || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %v (%#v)\nwant kind %v, field %q, offset %d, message with %q", err, e, tc.kind, tc.field, tc.offset, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "stats.json: offset ") {
				t.Errorf("%q does not name the file and offset", err)
			}
		})
	}
}

// TestMemoryStatsRandomBytes (issue 28, item 10): random bytes after "{"
// are refused within the first 4 KiB, not read to the 1 GiB input limit
// (100 MB of them took analyze 0.18 s and 136 MB, defrag 0.53 s and
// 380 MB). The pickle branch is the decoder's.
func TestMemoryStatsRandomBytes(t *testing.T) {
	loctest.RefusesEarlyAfter(t, func(r io.Reader, name string) error {
		_, err := snapshot.Read(r, name)
		return err
	}, "{", " \n{", `{"allocated_bytes.all.current": 1, "`)
}

// TestMemoryStatsNoKnownKey: a JSON object of integers none of whose keys
// is memory_stats()'s is not read as a dump with no figure (analyze said
// "format memory-stats, 0 device(s)", the exporter counted it analysed and
// exported nothing): it is not a memory snapshot, and the error names the
// file.
func TestMemoryStatsNoKnownKey(t *testing.T) {
	_, err := snapshot.ReadBytes([]byte(`{"a":1}`+"\n"), "j.json")
	want := "j.json: offset 0: a JSON object with none of torch.cuda.memory_stats()'s keys (allocated_bytes.all.current, " +
		"reserved_bytes.all.current, num_ooms, ...), not a memory snapshot; to make a memory snapshot"
	if !errors.Is(err, snapshot.ErrNotSnapshot) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v\nwant ErrNotSnapshot, %q…", err, want)
	}
}
