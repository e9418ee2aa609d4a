package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// hostileShown is how a report shows the start of snaptest.Hostile: the
// control characters as escapes (untrusted.Printable).
const hostileShown = `evil\x1b]0;pwned\a\x1b[2J\x00\nnl\r\x7f\u009b31m\u2028\u202eRTL`

// csvName is snaptest.Hostile without the NUL, CR and newline that a CSV
// line or a file name cannot hold.
var csvName = strings.NewReplacer("\x00", "", "\r", "", "\n", "").Replace(snaptest.Hostile)

// escapeDEL writes the DEL characters of a JSON document as \u007f.
func escapeDEL(doc []byte) []byte { return bytes.ReplaceAll(doc, []byte("\x7f"), []byte(`\u007f`)) }

// hostileFiles writes inputs whose names are snaptest.Hostile into dir: a
// snapshot (frames and segment_type), a saved layout (pool names) and a
// kubectl list (node, pod and namespace names, a GPU model label with a
// newline).
func hostileFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	write := func(name string, data []byte) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = path
	}
	write("snapshot.pickle", snaptest.Encode(snaptest.FromSpec(snaptest.Seeds[3])))
	// Two 2 MiB segments of one pool, each 1.5 MiB live: nothing to gain,
	// and the sentence that says why names the pool.
	type block struct {
		Addr      uint64 `json:"addr"`
		Size      int64  `json:"size"`
		Requested int64  `json:"requested,omitempty"`
		State     string `json:"state"`
	}
	type segment struct {
		Addr   uint64  `json:"addr"`
		Size   int64   `json:"size"`
		Pool   string  `json:"pool"`
		Stream int     `json:"stream"`
		Blocks []block `json:"blocks"`
	}
	const mib = 1 << 20
	var segs []segment
	for i := range uint64(2) {
		a := 0x7f0000000000 + i*4*mib
		segs = append(segs, segment{Addr: a, Size: 2 * mib, Pool: snaptest.Hostile,
			Blocks: []block{{a, 3 * mib / 2, 3 * mib / 2, "active"}, {a + 3*mib/2, mib / 2, 0, "free"}}})
	}
	layout, err := json.Marshal(map[string]any{"gpufrag_layout": 1, "capacity_bytes": 1 << 30, "other_use_bytes": 0,
		"max_allocatable_bytes": 0, "segments": segs})
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json writes DEL raw, which the readers refuse as not text
	// (a file of names holds none raw); its escape decodes to the same name.
	write("layout.json", escapeDEL(layout))
	kube, err := os.ReadFile("../../../../cluster/kube/testdata/hostile.json")
	if err != nil {
		t.Fatal(err)
	}
	write("cluster.json", kube)
	// An op trace whose allocations, named by the hostile string, run out
	// of memory: the first OOM's id is printed.
	var ops bytes.Buffer
	for i := range 2 {
		op, err := json.Marshal(map[string]any{"op": "alloc", "id": snaptest.Hostile + strconv.Itoa(i), "size": 60 << 30, "stream": 0})
		if err != nil {
			t.Fatal(err)
		}
		ops.Write(append(op, '\n'))
	}
	write("ops.jsonl", escapeDEL(ops.Bytes()))
	// A scenario named and described by the hostile string (Go's escapes
	// are YAML's).
	quoted := strconv.QuoteToASCII(snaptest.Hostile)
	write("scenario.yaml", []byte("name: "+quoted+"\nabout: "+quoted+`
model: llama-3.1-8b
gpu: h100-80g
duration: 1m
workload:
  sessions: {rate: 0.5, min_turns: 1, max_turns: 2, system_tokens: 100, min_user: 200, max_user: 1200, min_output: 50, max_output: 100, think_s: 5, max_context: 10000}
runs:
  - {kv: "paged:16", alloc: caching}
`))
	// A scenario whose trace, a file it names, does not exist: the error
	// names it.
	write("missing.yaml", []byte("model: llama-3.1-8b\ngpu: h100-80g\nworkload:\n  trace: {file: "+quoted+", rate: 1}\n"+
		"runs:\n  - {kv: \"paged:16\", alloc: caching}\n"))
	// A health history (Prometheus query_range JSON: a CSV holds no
	// control character, the readers refuse them raw as not text) of an
	// instance and a model named by the hostile string.
	var values [][2]any
	for i := range 10 {
		values = append(values, [2]any{1795996800 + 60*i, "0.5"})
	}
	history, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix",
		"result": []any{map[string]any{"metric": map[string]string{"instance": snaptest.Hostile, "model": "m" + snaptest.Hostile},
			"values": values}}}})
	if err != nil {
		t.Fatal(err)
	}
	write("history.json", escapeDEL(history))
	return files
}

// TestHostileNames runs each command that prints names from its input over
// inputs whose names hold control characters (snaptest.Hostile): an OSC
// that retitles the terminal, ESC [2J that clears it, NUL, a newline, a
// carriage return, a C1 CSI, U+2028, U+202E. Their text output and their
// error output must show the names escaped and hold no control character
// but the newlines and tabs of their own layout (no line may start with
// the part of the name after its newline); an HTML report must be
// well-formed XML holding none either; JSON keeps the exact name. Before
// untrusted.Printable, analyze and defrag printed the names raw and analyze
// --html failed with "RawSVG 0: not well-formed XML ... U+001B".
func TestHostileNames(t *testing.T) {
	dir := t.TempDir()
	f := hostileFiles(t, dir)
	html := filepath.Join(dir, "report.html")
	// diff: a plain snapshot against the hostile one, so that the hostile
	// sites and pools are among what moved.
	pair := writeFile(t, dir, "pair.pickle", pairSnapshot(0))
	for _, c := range []struct {
		name string
		args []string
		html bool // the command writes report.html
		json bool // stdout is JSON
		hide bool // the output need not show the name (a JSON document without it)
		csv  bool // the input holds the name without NUL, CR and newline
		fail bool // the command fails (exit 1), naming the input on stderr
	}{
		{name: "analyze", args: []string{"analyze", f["snapshot.pickle"]}},
		{name: "analyze no-replay", args: []string{"analyze", "--no-replay", f["snapshot.pickle"]}},
		{name: "analyze html", args: []string{"analyze", f["snapshot.pickle"], "--html", html}, html: true},
		{name: "analyze json", args: []string{"analyze", f["snapshot.pickle"], "--json"}, json: true},
		{name: "analyze full stacks", args: []string{"analyze", "--no-replay", "--full-stacks", f["snapshot.pickle"]}},
		{name: "diff", args: []string{"diff", pair, f["snapshot.pickle"], "--no-replay"}},
		{name: "diff html", args: []string{"diff", pair, f["snapshot.pickle"], "--html", html}, html: true},
		{name: "diff json", args: []string{"diff", pair, f["snapshot.pickle"], "--json"}, json: true},
		{name: "defrag layout", args: []string{"defrag", f["layout.json"]}},
		{name: "defrag layout json", args: []string{"defrag", f["layout.json"], "--json"}, json: true, hide: true},
		{name: "cluster inspect", args: []string{"cluster", "inspect", "--from", f["cluster.json"], "--all"}},
		{name: "cluster inspect json", args: []string{"cluster", "inspect", "--from", f["cluster.json"], "--json"}, json: true},
		{name: "replay", args: []string{"replay", f["ops.jsonl"], "--alloc", "caching"}},
		{name: "replay json", args: []string{"replay", f["ops.jsonl"], "--alloc", "caching", "--json"}, json: true},
		{name: "simulate", args: []string{"simulate", "--scenario", f["scenario.yaml"]}},
		{name: "simulate html", args: []string{"simulate", "--scenario", f["scenario.yaml"], "--html", html}, html: true},
		{name: "simulate json", args: []string{"simulate", "--scenario", f["scenario.yaml"], "--json"}, json: true},
		{name: "rules", args: []string{"rules", "--history", f["history.json"], "--out", filepath.Join(dir, "rules.yaml")}},
		{name: "simulate missing trace", args: []string{"simulate", "--scenario", f["missing.yaml"]}, fail: true},
		// A message that names a file raw (the OS's "open NAME: ...") is
		// escaped by Main, the backstop of every error.
		{name: "missing file", args: []string{"cluster", "inspect", "--from", filepath.Join(dir, "no-"+csvName)}, fail: true},
		{name: "rules json", args: []string{"rules", "--history", f["history.json"], "--json"}, json: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(html)
			code, out, errb := run(t, "", c.args...)
			checkTerminal(t, "stderr", errb)
			if c.fail {
				if code != 1 || !strings.Contains(errb, `evil\x1b]0;pwned`) {
					t.Errorf("exit %d, want 1 and an error that shows the name escaped: %s", code, errb)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			if c.json {
				// encoding/json escapes the control characters; the name
				// itself is kept exactly.
				checkTerminal(t, "stdout", out)
				if !json.Valid([]byte(out)) {
					t.Errorf("not JSON:\n%s", out)
				}
				exact := `evil\u001b]0;pwned\u0007\u001b[2J\u0000\nnl\r\u007f\u009b31m\u2028\u202eRTL\u003cb\u003e\u0026amp;`
				if c.csv {
					exact = `evil\u001b]0;pwned\u0007\u001b[2Jnl\u007f\u009b31m\u2028\u202eRTL\u003cb\u003e\u0026amp;`
				}
				if !c.hide && !strings.Contains(out, exact) {
					t.Errorf("JSON does not hold the exact name %s:\n%s", exact, out)
				}
				return
			}
			checkTerminal(t, "stdout", out)
			shown := hostileShown
			if c.csv {
				shown = `evil\x1b]0;pwned\a\x1b[2Jnl\x7f\u009b31m\u2028\u202eRTL`
			}
			if !strings.Contains(out, shown) {
				t.Errorf("stdout does not show the name escaped:\n%s", out)
			}
			if c.html {
				page, err := os.ReadFile(html)
				if err != nil {
					t.Fatal(err)
				}
				checkTerminal(t, "HTML", string(page))
				if err := wellFormedXML(page); err != nil {
					t.Errorf("HTML: %v", err)
				}
				if !bytes.Contains(page, []byte(hostileShown)) {
					t.Errorf("the HTML does not show the name escaped")
				}
			}
		})
	}
}

// checkTerminal fails when out holds a character untrusted.PrintableText would
// escape (a control character but newline and tab, DEL, C1, U+2028/9, a
// bidi control, invalid UTF-8) or a line that starts with what follows the
// newline inside snaptest.Hostile.
func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	if untrusted.PrintableText(out) != out {
		for i := range out {
			_, size := utf8.DecodeRuneInString(out[i:])
			if p := out[:i+size]; untrusted.PrintableText(p) != p {
				t.Fatalf("%s: unescaped character at byte %d: %q", what, i, out[max(i-40, 0):min(i+10, len(out))])
			}
		}
	}
	if i := strings.Index(out, "\nnl"); i >= 0 {
		t.Fatalf("%s: a newline from a name starts a line at byte %d: %q", what, i, out[max(i-40, 0):min(i+10, len(out))])
	}
}

// wellFormedXML parses b as strict XML.
func wellFormedXML(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
