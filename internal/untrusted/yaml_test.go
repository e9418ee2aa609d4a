package untrusted

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCheckYAMLAliases: a document is counted at the values it decodes
// into, aliases expanded, before anything decodes it. A scenario of one
// anchor and 150,000 aliases (600 KB) decoded into 150,000 runs (170 s,
// 1.1 GB); aliases of aliases grow exponentially; a 1 MiB list of numbers
// took 3 s to decode. Each is refused at the line that crosses
// MaxYAMLNodes; the few repeats people write pass.
func TestCheckYAML(t *testing.T) {
	var flat strings.Builder
	flat.WriteString("runs:\n  - &r {kv: 'paged:16', alloc: caching}\n")
	for range 150_000 {
		flat.WriteString("  - *r\n")
	}
	var laughs strings.Builder
	laughs.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 20; i++ {
		laughs.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := range 10 {
			if j > 0 {
				laughs.WriteString(", ")
			}
			laughs.WriteString("*a" + strconv.Itoa(i-1))
		}
		laughs.WriteString("]\n")
	}
	for _, c := range []struct {
		name, doc string
		want      string // "" accepts
	}{
		{"150,000 aliases of one run", flat.String(), "line 3278: the aliases up to *r expand the document to more than 16384 values and keys"},
		{"aliases of aliases (10^20 nodes)", laughs.String(), "line 5: the aliases up to *a3 expand the document to more than 16384"},
		{"a long list", "a: [" + strings.Repeat("1, ", MaxYAMLNodes) + "1]\n", "line 1: more than 16384 values and keys"},
		{"an alias inside its own anchor", "&a [*a]\n", "line 1: the alias *a is inside the node it names"},
		{"a nested cycle", "a: &a {b: [1, {c: *a}]}\n", "the alias *a is inside the node it names"},
		{"a merge key repeated", "base: &b {kv: 'paged:16', alloc: caching}\nruns:\n  - {<<: *b, on_oom: fail}\n  - {<<: *b}\n", ""},
		{"an anchor used twice", "p: &p {dist: fixed, min: 5}\nq: *p\nr: *p\n", ""},
		{"no aliases", "a: [1, 2, 3]\n", ""},
	} {
		root, err := CheckYAML([]byte(c.doc))
		switch {
		case c.want == "" && (err != nil || root == nil):
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		case c.want != "":
			var ye *YAMLError
			if !errors.As(err, &ye) || ye.Line < 1 {
				t.Errorf("%s: %T %v, want a *YAMLError with a line", c.name, err, err)
			}
		}
	}
	if _, err := CheckYAML(nil); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
	if _, err := CheckYAML([]byte("a: *nope\n")); err == nil || !strings.Contains(err.Error(), "unknown anchor") {
		t.Errorf("an unknown anchor: %v", err)
	}
}

// TestYAMLDecodeError: yaml's decode errors read as the other readers'
// ("line N: field "F": message"), without "yaml: " and without the Go
// types decoded into, and errors.As still finds yaml's error.
func TestYAMLDecodeError(t *testing.T) {
	type engine struct {
		MaxSeqs int `yaml:"max_seqs"`
	}
	type doc struct {
		Model  string `yaml:"model"`
		Engine engine `yaml:"engine"`
		Runs   []struct {
			KV    string `yaml:"kv"`
			Alloc int    `yaml:"alloc"`
		} `yaml:"runs"`
	}
	for _, tc := range []struct{ in, want string }{
		{"model: x\nmodle: y\n", `line 2: field "modle": unknown field`},
		{"engine:\n  max_seqs: 4\n  max_seq: 4\n", `line 3: field "engine.max_seq": unknown field`},
		{"model: [1]\n", `line 1: field "model": want text, got a list`},
		{"runs:\n  - {kv: 'paged:16', alloc: lots}\n", `line 2: field "runs[0].alloc": want an integer, got text "lots"`},
		{"x\n", `line 1: want a mapping of fields, got text "x"`},
		{"model: [1]\nmodle: y\n", `line 1: field "model": want text, got a list; line 2: field "modle": unknown field`},
	} {
		root, err := CheckYAML([]byte(tc.in))
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		dec := yaml.NewDecoder(strings.NewReader(tc.in))
		dec.KnownFields(true)
		var d doc
		err = YAMLDecodeError(dec.Decode(&d), root)
		var te *yaml.TypeError
		if err.Error() != tc.want || !errors.As(err, &te) {
			t.Errorf("%q: %q (a yaml.TypeError: %v), want %q", tc.in, err, te != nil, tc.want)
		}
	}
	_, err := CheckYAML([]byte("model: \"x\n"))
	if got := YAMLDecodeError(err, nil).Error(); got != "line 2: found unexpected end of stream" {
		t.Errorf("syntax error: %q", got)
	}
}

// FuzzYAMLDecodeError: any document that CheckYAML accepts and a decode
// refuses gets a message, without "yaml: " at its start.
func FuzzYAMLDecodeError(f *testing.F) {
	for _, s := range []string{"a: 1\nb: [x\n", "a: {b: 1, c: x}\n", "- 1\n", "a:\n  - b: c\n    d: [1]\n", "a: &x 1\nb: *x\nzz: 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		root, err := CheckYAML([]byte(s))
		if err != nil {
			_ = YAMLDecodeError(err, nil).Error()
			return
		}
		var d struct {
			A int            `yaml:"a"`
			B []string       `yaml:"b"`
			C map[string]int `yaml:"c"`
		}
		dec := yaml.NewDecoder(strings.NewReader(s))
		dec.KnownFields(true)
		if err := dec.Decode(&d); err != nil {
			if msg := YAMLDecodeError(err, root).Error(); msg == "" || strings.HasPrefix(msg, "yaml: ") {
				t.Errorf("%q: message %q", s, msg)
			}
		}
	})
}
