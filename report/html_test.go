package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestHTMLStructure(t *testing.T) {
	p := samplePage()
	var buf bytes.Buffer
	if err := p.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	if !bytes.HasPrefix(out, []byte("<!DOCTYPE html>\n<html lang=\"en\">")) {
		t.Errorf("bad start: %q", out[:40])
	}
	checkNoExternalRefs(t, "page", out)
	if !bytes.Contains(out, []byte(`http-equiv="Content-Security-Policy" content="default-src 'none';`)) {
		t.Error("no Content-Security-Policy")
	}
	es := parseXML(t, "page", out)
	if n := count(es, "script"); n != 0 {
		t.Errorf("%d <script> elements", n)
	}
	if ti, _ := first(es, "title"); ti.text != p.Title {
		t.Errorf("<title> = %q, want %q", ti.text, p.Title)
	}
	if h1, _ := first(es, "h1"); h1.text != p.Title {
		t.Errorf("<h1> = %q", h1.text)
	}
	if n := count(es, "section"); n != len(p.Sections) {
		t.Errorf("%d sections, want %d", n, len(p.Sections))
	}
	wantFig := 0
	for _, s := range p.Sections {
		wantFig += len(s.Charts) + len(s.RawSVG)
	}
	if n := count(es, "figure"); n != wantFig {
		t.Errorf("%d figures, want %d", n, wantFig)
	}
	if n := count(es, "svg"); n != wantFig {
		t.Errorf("%d svg, want %d", n, wantFig)
	}
	// The hostile cell is text, not markup.
	found := false
	for _, e := range es {
		if e.name == "td" && e.text == "<script>alert(1)</script>" {
			found = true
		}
		if e.name == "td" && e.attrs["class"] == "num" && e.text == "" {
			t.Error("empty numeric cell")
		}
		for k, v := range e.attrs {
			if (k == "href" || k == "src") && !strings.HasPrefix(v, "#") {
				t.Errorf("<%s %s=%q>", e.name, k, v)
			}
		}
	}
	if !found {
		t.Error("escaped table cell not found")
	}
	// Paragraphs and line breaks.
	if !bytes.Contains(out, []byte("<p>Reserved memory tracks allocated memory with a gap of about 4 GiB.<br />\nThe spike at t=310 s is an activation checkpoint.</p>\n<p>An OOM happened at t=420 s.</p>")) {
		t.Error("paragraphs not rendered as expected")
	}
	if bytes.Contains(out, []byte("<?xml")) {
		t.Error("XML prolog inlined")
	}
}

func TestHTMLEscaping(t *testing.T) {
	p := Page{
		Title:    `</title><script>alert("t")</script>`,
		Subtitle: `"quoted" & <b>`,
		Sections: []Section{{
			Heading: `<h1>x</h1>`,
			Text:    "<img src=x onerror=alert(1)>",
			Tables:  []Table{{Caption: "<c>", Header: []string{"<h>"}, Rows: [][]string{{"a", "b", "<c>"}}, NumericCols: []int{2, 7, -1}}},
		}, {Heading: "2"}, {Heading: "3"}, {Heading: "<4>"}},
	}
	var buf bytes.Buffer
	if err := p.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, raw := range []string{"<script", "<img", "<b>", "<h>", "<c>", "<4>", `<h1>x`} {
		if strings.Contains(out, raw) {
			t.Errorf("unescaped %q in output", raw)
		}
	}
	es := parseXML(t, "escaping", buf.Bytes())
	if ti, _ := first(es, "title"); ti.text != p.Title {
		t.Errorf("title %q", ti.text)
	}
	// More than three sections: a table of contents.
	if count(es, "nav") != 1 || count(es, "li") != 4 {
		t.Errorf("nav: %d, li: %d", count(es, "nav"), count(es, "li"))
	}
	// Short rows are padded to the widest row.
	if n := count(es, "th"); n != 3 {
		t.Errorf("%d header cells, want 3", n)
	}
}

func TestRawSVG(t *testing.T) {
	ok := map[string]string{
		"plain":   `<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>`,
		"prolog":  "<?xml version=\"1.0\"?>\n<!DOCTYPE svg>\n<!-- c -->\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
		"fragref": `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><defs><g id="a"/></defs><use xlink:href="#a"/><rect fill="url(#a)"/></svg>`,
	}
	for name, s := range ok {
		got, err := checkRawSVG([]byte(s))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.HasPrefix(got, []byte("<svg")) {
			t.Errorf("%s: got %q", name, got)
		}
	}
	bad := map[string]string{
		"empty":       ``,
		"not svg":     `<div>hi</div>`,
		"html root":   `<html><svg/></html>`,
		"script":      `<svg><script>alert(1)</script></svg>`,
		"onload":      `<svg onload="alert(1)"/>`,
		"ext href":    `<svg><image href="https://example.com/x.png"/></svg>`,
		"ext xlink":   `<svg xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="http://evil/x#a"/></svg>`,
		"css url":     `<svg><rect style="fill:url(https://x/y)"/></svg>`,
		"import":      `<svg><style>@import 'x.css';</style></svg>`,
		"foreign":     `<svg><foreignObject><div/></foreignObject></svg>`,
		"unclosed":    `<svg><g></svg>`,
		"trailing":    `<svg/><script>x</script>`,
		"text after":  `<svg/>hello`,
		"text before": `hello <svg/>`,
	}
	for name, s := range bad {
		if _, err := checkRawSVG([]byte(s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
		err := Page{Sections: []Section{{RawSVG: [][]byte{[]byte(s)}}}}.WriteHTML(&bytes.Buffer{})
		if err == nil {
			t.Errorf("%s: WriteHTML accepted", name)
		}
	}
}

func TestEmptyPage(t *testing.T) {
	var buf bytes.Buffer
	if err := (Page{}).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	parseXML(t, "empty", buf.Bytes())
}
