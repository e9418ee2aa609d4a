package snapshot_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	}{
		{name: "flat", in: `{"a.b": 1, "c": -2}`, want: map[string]int64{"a.b": 1, "c": -2}},
		{name: "nested is flattened", in: " \n{\"reserved_bytes\": {\"all\": {\"current\": 5}}, \"num_ooms\": 0}",
			want: map[string]int64{"reserved_bytes.all.current": 5, "num_ooms": 0}},
		{name: "integral float", in: `{"x": 2.0, "y": null}`, want: map[string]int64{"x": 2}},
		{name: "bom", in: "\xef\xbb\xbf{}", want: map[string]int64{}},
		{name: "string value", in: `{"x": "1"}`, kind: snapshot.ErrField, field: "x", offset: 6},
		{name: "fraction", in: `{"a": {"x": 1.5}}`, kind: snapshot.ErrField, field: "a.x"},
		{name: "array", in: `{"x": [1]}`, kind: snapshot.ErrField, field: "x"},
		{name: "truncated", in: `{"x": 1`, kind: snapshot.ErrDecode, offset: 7},
		{name: "garbage after", in: `{"x": 1} {}`, kind: snapshot.ErrDecode},
		{name: "too deep", in: strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), kind: snapshot.ErrField},
		{name: "bad syntax", in: `{"x" 1}`, kind: snapshot.ErrDecode},
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
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := snapshot.ReadBytes(append([]byte("{"), data...), "fuzz")
		if err != nil {
			var e *snapshot.Error
			if !errors.As(err, &e) || e.Err == nil {
				t.Fatalf("error %v (%T) is not a *snapshot.Error with a kind", err, err)
			}
			return
		}
		_ = s.Stats.String()
	})
}
