package loc

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
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
		start := time.Now()
		root, err := CheckYAML([]byte(c.doc))
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %v", c.name, d)
		}
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
