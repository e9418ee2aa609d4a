package optrace_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/optrace"
)

func TestReadValid(t *testing.T) {
	in := "\uFEFF" + `{"op":"alloc","id":"a1","size":16777216,"stream":0}

  {"stream": 2, "size": 512, "id": "b\u00e9", "op": "alloc"}  ` + "\r\n" +
		`{"op":"free","id":"a1"}` + "\n\t\n" +
		`{"op":"empty_cache"}
{"op":"sync"}
{"op":"alloc","id":"a1","size":1}
{"op":"free","id":"a1"}
{"op":"alloc","id":"c","size":1125899906842624}`
	want := []optrace.Op{
		{Kind: optrace.Alloc, ID: "a1", Size: 16777216, Line: 1},
		{Kind: optrace.Alloc, ID: "bé", Size: 512, Stream: 2, Line: 3},
		{Kind: optrace.Free, ID: "a1", Line: 4},
		{Kind: optrace.EmptyCache, Line: 6},
		{Kind: optrace.Sync, Line: 7},
		{Kind: optrace.Alloc, ID: "a1", Size: 1, Line: 8},
		{Kind: optrace.Free, ID: "a1", Line: 9},
		{Kind: optrace.Alloc, ID: "c", Size: optrace.MaxSize, Line: 10},
	}
	got, err := optrace.Read(strings.NewReader(in), "ops.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	// Issue 28: an empty or blank trace was "Replayed 0 ops".
	for in, want := range map[string]string{
		"":      `empty: line 1: no ops (empty): want one JSON object per line, such as {"op":"alloc"`,
		"\n \n": `empty: line 2: no ops (blank lines only): want one JSON object per line`,
	} {
		if ops, err := optrace.Read(strings.NewReader(in), "empty"); !errors.Is(err, optrace.ErrNoOps) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("trace %q: %v, %v; want %s", in, ops, err, want)
		}
	}
}

// TestReadErrors pins the message of every kind of bad line: each names
// the file, the line and (where there is one) the field.
func TestReadErrors(t *testing.T) {
	const a1 = `{"op":"alloc","id":"a1","size":16}` + "\n"
	for _, tc := range []struct {
		in   string
		kind error
		want string
	}{
		// Id semantics.
		{`{"op":"free","id":"nope"}`, optrace.ErrUnknownID,
			`ops.jsonl: line 1: field "id": free of unknown id "nope" (no earlier line allocates it)`},
		{a1 + `{"op":"free","id":"a1"}` + "\n\n" + `{"op":"free","id":"a1"}`, optrace.ErrDoubleFree,
			`ops.jsonl: line 4: field "id": double free of id "a1" (already freed at line 2)`},
		{a1 + a1, optrace.ErrLiveID,
			`ops.jsonl: line 2: field "id": alloc of id "a1", which is still live (allocated at line 1 and not freed since)`},
		// Sizes.
		{`{"op":"alloc","id":"a","size":-5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got -5)`},
		{`{"op":"alloc","id":"a","size":0}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got 0)`},
		{`{"op":"alloc","id":"a","size":1.5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got 1.5)`},
		{`{"op":"alloc","id":"a","size":16777216.0}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got 16777216.0)`},
		{`{"op":"alloc","id":"a","size":1e6}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got 1e6)`},
		{`{"op":"alloc","id":"a","size":"16"}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got "16")`},
		{`{"op":"alloc","id":"a","size":null}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got null)`},
		{`{"op":"alloc","id":"a","size":99999999999999999999}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be a positive integer (got 99999999999999999999)`},
		{`{"op":"alloc","id":"a","size":1125899906842625}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": must be at most 1125899906842624 (got 1125899906842625)`},
		{`{"op":"alloc","id":"a"}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": missing (bytes, a positive integer)`},
		// Other fields.
		{`{"op":"alloc","size":5}`, optrace.ErrField, `ops.jsonl: line 1: field "id": missing`},
		{`{"op":"alloc","id":"","size":5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "id": must be a non-empty string (got "")`},
		{`{"op":"free","id":7}`, optrace.ErrField,
			`ops.jsonl: line 1: field "id": must be a non-empty string (got 7)`},
		{`{"op":"alloc","id":"a","size":5,"stream":-1}`, optrace.ErrField,
			`ops.jsonl: line 1: field "stream": must be an integer from 0 to 2147483647 (got -1)`},
		{`{"op":"alloc","id":"a","size":5,"Stream":1}`, optrace.ErrField,
			`ops.jsonl: line 1: field "Stream": unknown field (known: op, id, size, stream, pool)`},
		{`{"op":"alloc","id":"a","size":5,"tag":"kv"}`, optrace.ErrField,
			`ops.jsonl: line 1: field "tag": unknown field (known: op, id, size, stream, pool)`},
		{`{"op":"alloc","id":"a","size":5,"size":6}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": appears twice`},
		{`{"op":"free","id":"a","size":5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "size": not allowed for op "free"`},
		{`{"op":"empty_cache","id":"a"}`, optrace.ErrField,
			`ops.jsonl: line 1: field "id": not allowed for op "empty_cache"`},
		{`{"op":"sync","stream":1}`, optrace.ErrField,
			`ops.jsonl: line 1: field "stream": not allowed for op "sync"`},
		{`{"op":"malloc","id":"a","size":5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "op": unknown op "malloc" (want alloc, free, empty_cache or sync)`},
		{`{"op":1}`, optrace.ErrField, `ops.jsonl: line 1: field "op": must be a string (got 1)`},
		{`{"id":"a","size":5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "op": missing (want alloc, free, empty_cache or sync)`},
		{`{"op":"alloc","id":"` + strings.Repeat("x", optrace.MaxIDBytes+1) + `","size":5}`, optrace.ErrField,
			`ops.jsonl: line 1: field "id": longer than 4096 bytes`},
		// Syntax.
		{`{"op":"empty_cache"} {"op":"sync"}`, optrace.ErrSyntax,
			`ops.jsonl: line 1: unexpected text after the JSON object (one op per line)`},
		{`{"op":"empty_cache"}x`, optrace.ErrSyntax,
			`ops.jsonl: line 1: unexpected text after the JSON object (one op per line)`},
		{`{"op":"alloc",}`, optrace.ErrSyntax,
			`ops.jsonl: line 1: malformed JSON: invalid character '}' looking for beginning of object key string (at byte 14)`},
		{`{"op":"alloc"`, optrace.ErrSyntax, `ops.jsonl: line 1: malformed JSON: the line ends before the object does`},
		{`["alloc"]`, optrace.ErrSyntax,
			`ops.jsonl: line 1: want a JSON object such as {"op":"alloc","id":"a1","size":16777216,"stream":0}, got "[\"alloc\"]"`},
		{"\u00a0", optrace.ErrSyntax, `ops.jsonl: line 1: malformed JSON: invalid character 'Â' looking for beginning of value (at byte 1)`},
		{a1 + strings.Repeat(" ", optrace.MaxLineBytes+1) + "\n", optrace.ErrSyntax,
			`ops.jsonl: line 2: longer than 1 MiB (optrace.MaxLineBytes): not a text file of lines, or its line breaks are missing`},
		{a1 + strings.Repeat("x", 3*optrace.MaxLineBytes), optrace.ErrSyntax,
			`ops.jsonl: line 2: longer than 1 MiB (optrace.MaxLineBytes): not a text file of lines, or its line breaks are missing`},
	} {
		_, err := optrace.Read(strings.NewReader(tc.in), "ops.jsonl")
		var e *optrace.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.kind) || err.Error() != tc.want {
			t.Errorf("Read(%.60q):\n got %v\nwant %s (%v)", tc.in, err, tc.want, tc.kind)
		}
	}
}

// A line of exactly MaxLineBytes is accepted, with either line ending.
func TestReadLongestLine(t *testing.T) {
	line := `{"op":"empty_cache"}`
	line += strings.Repeat(" ", optrace.MaxLineBytes-len(line))
	for _, end := range []string{"\n", "\r\n"} {
		// The last line has no line ending.
		ops, err := optrace.Read(strings.NewReader(line+end+line), "x")
		if err != nil || len(ops) != 2 {
			t.Fatalf("ending %q: %d ops, %v", end, len(ops), err)
		}
	}
}

func TestReadNoName(t *testing.T) {
	_, err := optrace.Read(strings.NewReader(`{"op":"free","id":"x"}`), "")
	if want := `line 1: field "id": free of unknown id "x" (no earlier line allocates it)`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestValidate(t *testing.T) {
	ok := []optrace.Op{
		{Kind: optrace.Alloc, ID: "a", Size: 5},
		{Kind: optrace.Free, ID: "a"},
		{Kind: optrace.Alloc, ID: "a", Size: 7, Stream: 1},
		{Kind: optrace.Sync},
	}
	if err := optrace.Validate(ok, "t"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ops  []optrace.Op
		want string
	}{
		{[]optrace.Op{{Kind: optrace.Alloc, ID: "a", Size: 5}, {Kind: optrace.Free, ID: "b"}},
			`t: line 2: field "id": free of unknown id "b" (no earlier line allocates it)`},
		{[]optrace.Op{{Kind: optrace.Alloc, ID: "a", Size: 5, Line: 10}, {Kind: optrace.Alloc, ID: "a", Size: 5, Line: 12}},
			`t: line 12: field "id": alloc of id "a", which is still live (allocated at line 10 and not freed since)`},
		{[]optrace.Op{{Kind: optrace.Alloc, ID: "a"}}, `t: line 1: field "size": must be a positive integer (got 0)`},
		{[]optrace.Op{{}}, `t: line 1: field "op": unknown op Kind(0)`},
		{[]optrace.Op{{Kind: optrace.Free, ID: "a", Stream: 1}}, `t: line 1: field "stream": not allowed for op "free"`},
		{[]optrace.Op{{Kind: optrace.Sync, Size: 1}}, `t: line 1: field "size": not allowed for op "sync"`},
	} {
		if err := optrace.Validate(tc.ops, "t"); err == nil || err.Error() != tc.want {
			t.Errorf("Validate(%v):\n got %v\nwant %s", tc.ops, err, tc.want)
		}
	}
}

func TestWriteRoundTrip(t *testing.T) {
	ops := []optrace.Op{
		{Kind: optrace.Alloc, ID: "a1", Size: 16777216},
		{Kind: optrace.Alloc, ID: "x\"<&>\u2028\x00é", Size: 3, Stream: 7},
		{Kind: optrace.Free, ID: "a1"},
		{Kind: optrace.EmptyCache},
		{Kind: optrace.Sync},
	}
	var buf bytes.Buffer
	if err := optrace.Write(&buf, ops); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"alloc","id":"a1","size":16777216,"stream":0}
{"op":"alloc","id":"x\"\u003c\u0026\u003e\u2028\u0000é","size":3,"stream":7}
{"op":"free","id":"a1"}
{"op":"empty_cache"}
{"op":"sync"}
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	got, err := optrace.Read(&buf, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Line = 0
	}
	if !reflect.DeepEqual(got, ops) {
		t.Fatalf("round trip: got %v, want %v", got, ops)
	}
	if err := optrace.Write(&buf, []optrace.Op{{Kind: optrace.Alloc, ID: "a", Size: -1}}); err == nil ||
		err.Error() != `line 1: field "size": must be a positive integer (got -1)` {
		t.Fatalf("Write of a bad op: %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[optrace.Kind]string{optrace.Alloc: "alloc", optrace.Free: "free",
		optrace.EmptyCache: "empty_cache", optrace.Sync: "sync", 0: "Kind(0)", 9: "Kind(9)"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), k.String(), want)
		}
	}
}
