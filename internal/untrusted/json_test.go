package untrusted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"ok", `{"a": 1, "b": [{"c": "x"}, {"c": "y"}], "A1": null}`, ""},
		{"ok scalar", `"x"`, ""},
		{"duplicate", `{"instance": "a", "instance": "b"}`, `byte 18: $: key "instance" appears twice`},
		{"case variants", `{"instance": "a", "INSTANCE": "b"}`, `byte 18: $: keys "instance" and "INSTANCE" differ only in case`},
		{"nested duplicate", `{"d": [{"x": 1}, {"x": 1, "x": 2}]}`, `$.d[1]: key "x" appears twice`},
		{"invalid utf-8", "{\"a\": \"b\xffc\"}", "byte 8: invalid UTF-8 (byte 0xff)"},
		{"trailing value", `{} {}`, "byte 3: more than one value"},
		{"truncated", `{"a": [1, 2`, "byte 11: $.a: unexpected end of the document"},
		{"truncated key", `{"a": 1, "bc`, "byte 12: $: unexpected end of the document"}, // where it ends, not after the ","
		{"syntax", `{"a" 1}`, "byte 5: $.a: invalid character '1'"},
		// The offset of the bad byte, not one counted from its value's start.
		{"syntax in a value", `{"a": 1, "b": [1, 2, trux]}`, "byte 24: $.b[2]: invalid character 'x' in literal true"},
		{"syntax after a value", "{\"a\": 1,\n \"b\": {\"c\": 12x}}", "byte 23: $.b: invalid character 'x' after object key:value pair"},
		{"surrogate pair", `{"a": "\ud83d\ude00 \\ud800 \u00e9"}`, ""},
		{"lone high surrogate", `{"instance": "x\ud800"}`, `byte 15: "\\ud800" is half of a UTF-16 surrogate pair`},
		{"lone low surrogate", `{"a": "\\\udc80"}`, `byte 9: "\\udc80" is half`},
		{"high then high", `["\uD800\uD800"]`, `byte 2: "\\uD800" is half`},
		{"surrogate in a key", `{"\udfff": 1}`, `byte 2: "\\udfff"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckJSON([]byte(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckJSON(%s) = %v, want nil", tc.doc, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckJSON(%s) = %v, want an error containing %q", tc.doc, err, tc.want)
			}
		})
	}
}

// FuzzCheckJSON: CheckJSON never panics or hangs, and CheckJSONStart never
// refuses a valid JSON document without control characters, whole or cut
// anywhere.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, "[\"\xff\"]", `{"a":{"b":[1,{"c":2,"c":3}]}}`, `1 2`,
		`{"a":"\ud800"}`, `["\ud83d\ude00","\\ud800","\ud83d"]`,
		"{\"a\": \"caf\u00e9\", \"b\": [true, null, -1.5e3]}", "{\x86\xad", `{hello`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || CheckText(data, true) != nil {
			_ = CheckJSONStart(data, true)
		} else {
			for k := 0; k <= len(data); k++ {
				if err := CheckJSONStart(data[:k], k == len(data)); err != nil {
					t.Fatalf("valid %q cut at %d: %v", data, k, err)
				}
			}
		}
		if CheckJSON(data) != nil { // must not panic or hang
			return
		}
		// What it accepts decodes without a U+FFFD the input did not write.
		lower := strings.ToLower(string(data))
		if strings.Contains(lower, "\uFFFD") || strings.Contains(lower, `\ufffd`) {
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return // a type CheckJSON does not look at
		}
		if s := fmt.Sprint(v); strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("accepted %q, which decodes with U+FFFD: %s", data, s)
		}
	})
}

func TestCheckJSONStart(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		atEOF      bool
		want       string // "" for nil
		line       int
	}{
		{"object", `{"a": [1, 2], "b": {"c": null}}`, true, "", 0},
		{"cut value", `{"a": [1, 2], "b": tr`, false, "", 0},
		{"cut string", `{"a": "abc`, false, "", 0},
		{"second value", `{} {`, false, "", 0}, // the reader says "more than one value"
		{"empty", ``, true, "", 0},             // the reader says "empty"
		{"bom", "\uFEFF{\"a\": 1}", true, "", 0},
		{"garbage key", `{hello world`, false, "not JSON: byte 1: invalid character 'h'", 1},
		{"line 3", "{\n\"a\": 1,\n\"b\" 2}", true, "not JSON: byte 14: invalid character '2' after object key", 3},
		{"csv", "ts,instance\n1,a\n", false, "not JSON: byte 1: invalid character 's' in literal true", 1},
		{"binary", "{\x86\xad\x05", false, "not a text file: byte 1 (0x86) is not UTF-8", 1},
		{"control", "{\"a\":\x01}", true, "byte 5 is the control character 0x01", 1},
	} {
		err := CheckJSONStart([]byte(tc.head), tc.atEOF)
		var e *InputError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (!errors.As(err, &e) || !strings.Contains(e.Msg, tc.want) || e.Line != tc.line):
			t.Errorf("%s: %v, want line %d: %q", tc.name, err, tc.line, tc.want)
		}
	}
}

// TestHead: Head returns the first SniffBytes and a reader of the whole
// input; a short input is atEOF.
func TestHead(t *testing.T) {
	long := strings.Repeat("x", 2*SniffBytes)
	for _, in := range []string{"", "abc", long} {
		head, atEOF, r, err := Head(strings.NewReader(in))
		if err != nil || string(head) != in[:min(len(in), SniffBytes)] || atEOF != (len(in) < SniffBytes) {
			t.Errorf("%d bytes: head %d bytes, atEOF %v, %v", len(in), len(head), atEOF, err)
			continue
		}
		if all, err := io.ReadAll(r); err != nil || string(all) != in {
			t.Errorf("%d bytes: the whole reader gave %d bytes, %v", len(in), len(all), err)
		}
	}
	boom := errors.New("boom")
	if _, _, _, err := Head(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("failing reader: %v", err)
	}
}

// TestLocateDecodeError: the offset and field of each kind of error a
// strict encoding/json Decoder gives, the unknown field's included, which
// encoding/json reports without either.
func TestLocateDecodeError(t *testing.T) {
	type inner struct {
		B int `json:"b"`
	}
	type doc struct {
		A []inner `json:"a"`
		S string  `json:"s"`
	}
	for _, c := range []struct {
		in    string
		off   int64
		field string
	}{
		{`{"a": [{"b": 1}, {"b": 2, "backend": 3}]}`, 26, "backend"},
		{`{"s": "backend", "a": [], "backend": 1}`, 26, "backend"}, // a value of that text is not the key
		{`{"a": [{"b": "x"}]}`, 16, "a.b"},
		{`{"a": [{"b": 1}`, -1, ""},       // io.ErrUnexpectedEOF: the caller says the end
		{`{"a": [{"b": 1}] "s"}`, 18, ""}, // encoding/json's offset, after the bad byte
	} {
		dec := json.NewDecoder(strings.NewReader(c.in))
		dec.DisallowUnknownFields()
		var d doc
		err := dec.Decode(&d)
		if err == nil {
			t.Fatalf("%s: no error", c.in)
		}
		off, field := LocateDecodeError([]byte(c.in), err)
		if off != c.off || field != c.field {
			t.Errorf("%s (%v): offset %d, field %q; want %d, %q", c.in, err, off, field, c.off, c.field)
		}
	}
	if off, field := LocateDecodeError(nil, errors.New("other")); off != -1 || field != "" {
		t.Errorf("other error: %d, %q", off, field)
	}
}

// FuzzLocateDecodeError: whatever a strict decoder says of any input, the
// offset found is within the input, and an unknown field's is the
// opening quote of a key of that name.
func FuzzLocateDecodeError(f *testing.F) {
	for _, s := range []string{`{"a": [{"b": 1}, {"b": 2, "backend": 3}]}`, `{"s": "backend", "backend": 1}`, `{"a": [{"b": "x"}]}`,
		`{"a": [{"b": 1}`, `{"\u0062ackend": 1}`, `{"a": {"b": {"c": 1}}, "z": 1}`, "{\"s\": \"\\\"z\\\"\", \"z\": 1}"} {
		f.Add([]byte(s))
	}
	type doc struct {
		A []struct {
			B int `json:"b"`
		} `json:"a"`
		S string `json:"s"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var d doc
		err := dec.Decode(&d)
		off, field := LocateDecodeError(data, err)
		if off < -1 || off > int64(len(data)) {
			t.Fatalf("%q (%v): offset %d outside the input", data, err, off)
		}
		if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") && off >= 0 {
			var key string
			if rest := data[off:]; len(rest) == 0 || rest[0] != '"' || json.NewDecoder(bytes.NewReader(rest)).Decode(&key) != nil || key != field {
				t.Fatalf("%q (%v): offset %d is not the key %q", data, err, off, field)
			}
		}
	})
}

// TestDecodeMessage: a strict decoder's errors worded without Go's type
// and field names.
func TestDecodeMessage(t *testing.T) {
	type doc struct {
		N  int64    `json:"n"`
		F  float64  `json:"f"`
		B  bool     `json:"b"`
		S  string   `json:"s"`
		L  []string `json:"l"`
		O  struct{} `json:"o"`
		U8 uint8    `json:"u8"`
	}
	for _, c := range []struct{ in, want string }{
		{`{"n": "many"}`, "want an integer, got a string"},
		{`{"n": 1.5}`, "want an integer, got the number 1.5"},
		{`{"u8": 300}`, "want an integer, got the number 300"},
		{`{"f": true}`, "want a number, got true or false"},
		{`{"b": 1}`, "want true or false, got a number"},
		{`{"s": [1]}`, "want a string, got a list"},
		{`{"l": {}}`, "want a list, got an object"},
		{`{"o": "x"}`, "want an object, got a string"},
		{`{"zz": 1}`, "unknown field"},
		{`{"n": }`, "invalid character '}' looking for beginning of value"},
	} {
		dec := json.NewDecoder(strings.NewReader(c.in))
		dec.DisallowUnknownFields()
		var d doc
		err := dec.Decode(&d)
		if err == nil {
			t.Fatalf("%s: no error", c.in)
		}
		if got := DecodeMessage(err); got != c.want {
			t.Errorf("%s (%v): %q, want %q", c.in, err, got, c.want)
		}
	}
}
