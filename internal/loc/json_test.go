package loc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
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
		{"truncated", `{"a": [1, 2`, "unexpected end of the document"},
		{"syntax", `{"a" 1}`, "invalid character '1'"},
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

func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, "[\"\xff\"]", `{"a":{"b":[1,{"c":2,"c":3}]}}`, `1 2`,
		`{"a":"\ud800"}`, `["\ud83d\ude00","\\ud800","\ud83d"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
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
