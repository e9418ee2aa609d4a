package untrusted

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds every kind of character Printable escapes, between
// characters it keeps.
const hostile = "a\x1b]0;pwned\x07\x1b[2J\x00b\nc\td\re\x7ff\u0085\u009bg\u2028h\u2029i\u202ej\u2066k\u061cl\u200em\xffn\xc3"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want, text string }{
		{"", "", ""},
		{"model.py", "model.py", "model.py"},
		{`C:\torch\nn.py`, `C:\torch\nn.py`, `C:\torch\nn.py`},
		{"héllo 日本 🚀 \ufffd", "héllo 日本 🚀 \ufffd", "héllo 日本 🚀 \ufffd"},
		{hostile,
			`a\x1b]0;pwned\a\x1b[2J\x00b\nc\td\re\x7ff\u0085\u009bg\u2028h\u2029i\u202ej\u2066k\u061cl\u200em\xffn\xc3`,
			"a\\x1b]0;pwned\\a\\x1b[2J\\x00b\nc\td\\re\\x7ff\\u0085\\u009bg\\u2028h\\u2029i\\u202ej\\u2066k\\u061cl\\u200em\\xffn\\xc3"},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := PrintableText(c.in); got != c.text {
			t.Errorf("PrintableText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// TestPrintableSafe checks checkSafe's properties for every byte value and
// for each rune near the ranges Printable escapes.
func TestPrintableSafe(t *testing.T) {
	var inputs []string
	for b := range 256 {
		inputs = append(inputs, "x"+string([]byte{byte(b)})+"y")
	}
	for r := rune(0x60); r < 0x3000; r++ {
		inputs = append(inputs, "x"+string(r)+"y")
	}
	for _, in := range append(inputs, hostile) {
		checkSafe(t, in)
	}
}

// checkSafe checks what every caller of Printable and PrintableText relies
// on: the result is valid UTF-8 and holds no C0 or C1 control, DEL, line
// separator or bidi control (PrintableText: no control but '\n' and '\t');
// firstUnprintable finds the first character to escape; an input with
// nothing to escape comes back as it is; and the kept characters stay in
// order (the result without its escapes is the input without the escaped
// characters). In JSON, PrintableJSON leaves nothing to escape and the
// document reads back as the same string.
func checkSafe(t *testing.T, in string) {
	t.Helper()
	doc, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := PrintableJSON(doc)
	var want, back string
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &back); err != nil || back != want {
		t.Fatalf("PrintableJSON(%s) = %s reads back as %q (%v), want %q", doc, got, back, err, want)
	}
	if PrintableText(string(got)) != string(got) {
		t.Fatalf("PrintableJSON(%s) = %s: still holds a character to escape", doc, got)
	}
	for _, lines := range []bool{false, true} {
		got := printable(in, lines)
		if !utf8.ValidString(got) {
			t.Fatalf("printable(%q, %v) = %q: invalid UTF-8", in, lines, got)
		}
		for _, r := range got {
			if mustEscape(r, lines) {
				t.Fatalf("printable(%q, %v) = %q keeps %U", in, lines, got, r)
			}
		}
		first := len(in)
		var kept strings.Builder
		for i, r := range in {
			if r == utf8.RuneError && !strings.HasPrefix(in[i:], "\ufffd") || mustEscape(r, lines) {
				first = min(first, i)
			} else {
				kept.WriteRune(r)
			}
		}
		if f := firstUnprintable(in, lines); f != first {
			t.Fatalf("firstUnprintable(%q, %v) = %d, want %d", in, lines, f, first)
		}
		if first == len(in) && got != in {
			t.Fatalf("printable(%q, %v) = %q changed a printable string", in, lines, got)
		}
		if unescaped := escapes.ReplaceAllString(got, ""); !strings.Contains(in, `\`) && unescaped != kept.String() {
			t.Fatalf("printable(%q, %v) = %q: without its escapes %q, want %q", in, lines, got, unescaped, kept.String())
		}
	}
}

var escapes = regexp.MustCompile(`\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[abfnrtv])`)

func TestClipPrintable(t *testing.T) {
	if got := Clip("node\n1\x1b"); got != `node\n1\x1b` {
		t.Errorf("Clip = %q", got)
	}
	long := strings.Repeat("\x1b", 100)
	if got := Clip(long); got != strings.Repeat(`\x1b`, QuoteBytes)+"… (100 bytes)" {
		t.Errorf("Clip of 100 ESC = %q", got)
	}
}

// BenchmarkPrintable measures the common case, a name with nothing to
// escape (no allocation), and a hostile one.
func BenchmarkPrintable(b *testing.B) {
	for _, s := range []string{"/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", hostile} {
		b.Run(map[bool]string{true: "clean", false: "hostile"}[s[0] == '/'], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Printable(s)
			}
		})
	}
}

// FuzzPrintable is checkSafe on any input.
//
//	go test ./internal/untrusted -run '^$' -fuzz FuzzPrintable -fuzztime 20s
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "model.py", hostile, "\xed\xa0\x80", "\u202e\u2066", "\x1b]8;;http://x\x07"} {
		f.Add(s)
	}
	f.Fuzz(checkSafe)
}

// PrintableJSON escapes what encoding/json leaves raw (checkSafe checks the
// rest) and returns a document with nothing to escape as it is.
func TestPrintableJSON(t *testing.T) {
	doc := []byte(`{"name":"\u001b model.py"}`)
	if got := PrintableJSON(doc); &got[0] != &doc[0] {
		t.Errorf("PrintableJSON(%s) copied a document with nothing to escape", doc)
	}
	doc = []byte("{\"name\":\"\x7f\u0085\u009b\u202e\u2066x\u2069\u061c\u200e\"}")
	want := `{"name":"\u007f\u0085\u009b\u202e\u2066x\u2069\u061c\u200e"}`
	if got := string(PrintableJSON(doc)); got != want {
		t.Errorf("PrintableJSON(%s) = %s, want %s", doc, got, want)
	}
}
