package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// hostile is a name from somebody else's file: an OSC that retitles the
// terminal, one that clears it, NUL, newline, carriage return, DEL, a C1
// CSI, a line separator, a right-to-left override, markup, a byte that is
// not UTF-8.
const hostile = "evil\x1b]0;pwned\x07\x1b[2J\x00\nnl\r\x7f\u009b31m\u2028\u202eRTL<b>&amp;\xff"

// hostilePage puts s in every string a Page holds.
func hostilePage(s string) Page {
	x := []float64{0, 1, 2}
	return Page{Title: s, Subtitle: s, Sections: []Section{
		{Heading: s, Text: s + "\n\n" + s, Pre: s + "\n" + s,
			Charts: []LineChart{{Title: s, XLabel: s, YLabel: s,
				Series:  []Series{{Name: s, X: x, Y: x}, {Name: "other", X: x, Y: []float64{2, 1, 0}}},
				Markers: []Marker{{X: 1, Label: s}, {X: 1.1, Label: s}}}},
			Tables: []Table{{Caption: s, Header: []string{s, s}, Rows: [][]string{{s, s}, {"a:b", s}}, NumericCols: []int{1}}}},
		{Heading: "2"}, {Heading: "3"}, {Heading: "4"}, // a table of contents
	}}
}

// checkPrintable fails unless out is well-formed XML and holds nothing
// untrusted.PrintableText would escape: no control character but newline and
// tab, no DEL, C1, line separator or bidi control, only valid UTF-8.
func checkPrintable(t *testing.T, what string, out []byte) {
	t.Helper()
	parseXML(t, what, out)
	if s := string(out); untrusted.PrintableText(s) != s {
		for i := range s {
			_, size := utf8.DecodeRuneInString(s[i:])
			if p := s[:i+size]; untrusted.PrintableText(p) != p {
				t.Fatalf("%s: unescaped character at byte %d: %q", what, i, s[max(i-30, 0):min(i+10, len(s))])
			}
		}
		t.Fatalf("%s: unescaped character", what)
	}
}

// A page whose every string is hostile renders, is well-formed XML, shows
// the control characters as escapes and holds none of them raw, and its
// markup is text. Without untrusted.Printable in escapeHTML the page failed to
// parse (U+001B is not an XML character) or kept ESC and U+202E.
func TestHostileStrings(t *testing.T) {
	var buf bytes.Buffer
	if err := hostilePage(hostile).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	checkPrintable(t, "page", out)
	// Each piece escaped as untrusted.Printable shows it, then as HTML.
	want := `evil\x1b]0;pwned\a\x1b[2J\x00\nnl\r\x7f\u009b31m\u2028\u202eRTL&lt;b&gt;&amp;amp;\xff`
	for _, where := range []string{"<title>", "<h1>", `<p class="subtitle">`, "<h2>", "<caption>",
		// A data cell carries its header as data-label, escaped alike.
		`<td class="num" data-label="` + want + `">`} {
		if !bytes.Contains(out, []byte(where+want+"<")) {
			t.Errorf("%s does not hold the escaped name %s", where, want)
		}
	}
	if bytes.Contains(out, []byte("<b>")) {
		t.Error("markup from the name reached the page")
	}
	// Text of several lines keeps its line breaks (the name's too: its
	// producer must escape names, as the commands' text reports do) and
	// escapes the rest.
	lines := strings.Replace(want, `\n`, "\n", 1)
	if !bytes.Contains(out, []byte("<pre>"+lines+"\n"+lines+"</pre>")) {
		t.Errorf("<pre> block: %s", out[bytes.Index(out, []byte("<pre>")):][:200])
	}
	for _, c := range hostilePage(hostile).Sections[0].Charts {
		svg, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		checkPrintable(t, "chart", svg)
		if !bytes.Contains(svg, []byte(`\x1b]0;pwned`)) {
			t.Error("the chart does not show the escaped name")
		}
		if err := c.PNG(&bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzHTML renders a page whose every string is the fuzzer's: it must
// render, parse as XML and hold nothing untrusted.PrintableText would escape.
//
//	go test ./report -run '^$' -fuzz FuzzHTML -fuzztime 20s
func FuzzHTML(f *testing.F) {
	for _, s := range []string{"", "gpu-0", hostile, "<script>alert(1)</script>", "]]>", "\u2066x\u2069", "\xed\xa0\x80", "a:b,c/d=e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1000 || strings.TrimSpace(s) == "" && s != "" {
			return
		}
		var buf bytes.Buffer
		if err := hostilePage(s).WriteHTML(&buf); err != nil {
			t.Fatal(err)
		}
		checkPrintable(t, "page", buf.Bytes())
	})
}
