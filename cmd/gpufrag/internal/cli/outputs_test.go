package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputOntoInput: a report written over the file it was made from
// lost the user's data silently (analyze, simulate and advise wrote --html
// or --out over their input). Each is now a usage error that names both
// flags, and the input is left as it was, whatever name reaches it: the
// same path, another spelling of it, or a link.
func TestOutputOntoInput(t *testing.T) {
	dir := t.TempDir()
	copyTo := func(src, name string) string {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snap := copyTo(filepath.Join(snapshotFixtures, "modern_p4.pickle"), "snap.pickle")
	trace := copyTo(adviseTrace, "trace.csv")
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(trace, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "sub", "..", "trace.csv") // the trace by another spelling
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{snap, trace} {
		b, _ := os.ReadFile(p)
		before[p] = b
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"analyze --html onto the snapshot", []string{"analyze", snap, "--html", snap},
			[]string{"--html " + snap, "the input file given to the snapshot argument", "refusing to overwrite"}},
		{"simulate --html onto the trace", []string{"simulate", "--trace", trace, "--rate", "1", "--html", trace},
			[]string{"--html", "the input file given to --trace"}},
		{"simulate --html through a link", []string{"simulate", "--trace", trace, "--rate", "1", "--html", link},
			[]string{"--html " + link, "--trace (" + trace + ")"}},
		{"simulate --html by another spelling", []string{"simulate", "--trace", trace, "--rate", "1", "--html", other},
			[]string{"the input file given to --trace"}},
		{"advise --out onto the trace", []string{"advise", "--trace", trace, "--model", "llama-3-8b", "--gpu", "a100-80g", "--shard", "0/2", "--out", trace},
			[]string{"--out", "the input file given to --trace"}},
	} {
		t.Run(tc.name, func(t *testing.T) { refusesOutput(t, before, tc.args, tc.want) })
	}
}

// TestCheckOutputs covers what the commands above do not: two outputs on
// one new file, "-" and empty paths, and an output that is a new file.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newRoot(nil, nil, nil)
	newFile := filepath.Join(dir, "new.html")
	for _, tc := range []struct {
		name    string
		outputs []fileFlag
		want    string // "" for no error
	}{
		{"new output", []fileFlag{{"--html", newFile}}, ""},
		{"not given and stdout", []fileFlag{{"--html", ""}, {"--out", "-"}}, ""},
		{"two outputs on one new file", []fileFlag{{"--html", newFile}, {"--out", filepath.Join(dir, ".", "new.html")}}, "--html and --out both write"},
		{"onto the input", []fileFlag{{"--out", in}}, "the input file given to --trace"},
		{"in no directory", []fileFlag{{"--html", filepath.Join(dir, "none", "r.html")}}, "--html " + filepath.Join(dir, "none", "r.html") + ": the directory " + filepath.Join(dir, "none") + " does not exist"},
		{"a directory", []fileFlag{{"--html", dir}}, "--html " + dir + ": a directory; give the path of a file to write"},
	} {
		err := checkOutputs(cmd, tc.outputs, []fileFlag{{"--trace", in}, {"--model", "llama-3-8b"}, {"--scenario", "-"}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestOutputOntoStdinFile: with the snapshot on standard input ("-")
// redirected from a file, an output naming that file (by a path to it, or
// as /dev/stdin) replaced the snapshot with the report, exit 0
// (`analyze - --html s.pickle < s.pickle`). It is refused as an output
// onto an input is; a pipe on standard input, or another output file, is
// not refused.
func TestOutputOntoStdinFile(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(snapshotFixtures, "modern_p4.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap.pickle")
	if err := os.WriteFile(snap, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// /dev/stdin is the same file to the os.SameFile check, but in a test
	// it is the test process's standard input, not Main's.
	outs := []string{snap, dir + "/./snap.pickle"}
	for _, cmd := range [][]string{{"analyze", "-"}, {"diff", "-", snap}} {
		for _, out := range outs {
			in, err := os.Open(snap)
			if err != nil {
				t.Fatal(err)
			}
			var o, e bytes.Buffer
			code := Main(append(cmd[:len(cmd):len(cmd)], "--html", out), in, &o, &e)
			in.Close()
			if code != exitUsage || !strings.Contains(e.String(), "--html "+out+" is the file on standard input, given to the snapshot argument as -: refusing to overwrite it") {
				t.Errorf("%v --html %s: exit %d, stderr %q", cmd, out, code, e.String())
			}
			if now, _ := os.ReadFile(snap); !bytes.Equal(now, b) {
				t.Fatalf("%v --html %s: the snapshot changed", cmd, out)
			}
		}
	}
	in, err := os.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var o, e bytes.Buffer
	if code := Main([]string{"analyze", "-", "--html", filepath.Join(dir, "r.html")}, in, &o, &e); code != 0 {
		t.Errorf("--html r.html: exit %d, stderr %q", code, e.String())
	}
}
