package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// TestReadMultiplied: sizes a document multiplies are bounded before the
// document is decoded (issue 28, item 2). A 600 KB scenario whose runs
// were one anchor and 150,000 aliases ran 170 s and 1.1 GB, and 20,000
// literal runs 17 s; both are refused by Read, naming the file and the
// line (and the field, for runs), before they are decoded.
func TestReadMultiplied(t *testing.T) {
	head := "model: llama-3.1-8b\ngpu: h100-80g\nworkload:\n  requests: {rate: 1, count: 1, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\nruns:\n"
	var aliased, literal strings.Builder
	aliased.WriteString(head + "  [&r {kv: 'paged:16', alloc: caching}")
	literal.WriteString(head)
	for range 150_000 {
		aliased.WriteString(", *r")
	}
	aliased.WriteString("]\n")
	for range 20_000 {
		literal.WriteString("  - {kv: 'paged:16', alloc: caching}\n")
	}
	for _, c := range []struct{ name, doc, want string }{
		{"150,000 aliases of one run", aliased.String(), "test.yaml: line 6: the aliases up to *r expand the document to more than 16384 values and keys"},
		{"20,000 literal runs", literal.String(), `test.yaml: line 3277: more than 16384 values and keys (untrusted.MaxYAMLNodes)`},
		{"2,000 literal runs", head + strings.Repeat("  - {kv: 'paged:16', alloc: caching}\n", 2000), `test.yaml: line 5: field "runs": 2000 runs, more than 64 (scenario.MaxRuns)`},
		{"65 runs", head + strings.Repeat("  - {kv: 'paged:16', alloc: caching}\n", MaxRuns+1), `line 5: field "runs": 65 runs`},
		{"aliases of aliases", "a: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n", "line 5: the aliases up to *d expand the document"},
		{"an alias inside its anchor", "runs: &r [*r]\n", "line 1: the alias *r is inside the node it names"},
		{"aliases in a second document", "name: a\n---\nb: &b [1, 2]\nc: [*b, *b]\n", "more than one YAML document"},
	} {
		if len(c.doc) > MaxScenarioBytes {
			t.Fatalf("%s: %d bytes, over the file limit", c.name, len(c.doc))
		}
		_, err := Read(strings.NewReader(c.doc), "test.yaml")
		if !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrBadScenario naming %q", c.name, err, c.want)
		}
	}
	// A scenario built in code (experiments, flags) is held to MaxRuns too.
	s := read(t, head+"  - {kv: 'paged:16', alloc: caching}\n")
	s.Runs = make([]Run, MaxRuns+1)
	for i := range s.Runs {
		s.Runs[i] = Run{KV: KVSpec{strategy.PagedSpec(16)}, Alloc: AllocSpec{registry.Default()}}
	}
	s.Override("runs")
	if _, err := Build(s, nil); !errors.Is(err, ErrBadScenario) || !strings.Contains(err.Error(), "65 runs, more than 64") {
		t.Errorf("Build of %d runs: %v", MaxRuns+1, err)
	}
	// Anchors people write still work.
	ok := read(t, "model: llama-3.1-8b\ngpu: h100-80g\nworkload:\n  requests: {rate: 1, count: 2, prompt: &p {dist: fixed, min: 10}, output: *p}\n"+
		"runs:\n  - &r {kv: 'paged:16', alloc: caching}\n  - {<<: *r, on_oom: fail}\n")
	if len(ok.Runs) != 2 || ok.Runs[1].OnOOM != "fail" || ok.Workload.Requests.Output.Min != 10 {
		t.Errorf("anchors: %+v", ok)
	}
}

// TestBuildErrorsNameFileAndLine: a field's error names the scenario file
// and the line of the field (issue 28, item 8: "runs[1].on_oom: ..."
// named neither); a field the file lacks names the file; a field a flag
// set (Override) names neither, as the flag is not in the file.
func TestBuildErrorsNameFileAndLine(t *testing.T) {
	yaml := base + "  - {kv: contiguous-grow, alloc: caching, on_oom: retry}\n" +
		"workload:\n  requests: {rate: 1, count: 3, prompt: {dist: normal, min: 10, max: 20}, output: {dist: fixed, min: 5}}\n"
	_, err := Build(read(t, yaml), nil)
	if want := `bad scenario: test.yaml: line 6: field "runs[1].on_oom": `; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
	s := read(t, strings.Replace(yaml, ", on_oom: retry", "", 1))
	_, err = Build(s, nil)
	if want := `bad scenario: test.yaml: line 8: field "workload.requests.prompt.dist": "normal"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
	s.Override("workload")
	if _, err = Build(s, nil); err == nil || !strings.HasPrefix(err.Error(), `bad scenario: workload.requests.prompt.dist: "normal"`) {
		t.Errorf("overridden: %v", err)
	}
	_, err = Build(read(t, "gpu: h100-80g\n"), nil)
	if want := `bad scenario: test.yaml: field "model": missing`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
	// The embedded default names no file.
	d := Default()
	d.Runs[0].OnOOM = "retry"
	if _, err := Build(d, nil); err == nil || !strings.HasPrefix(err.Error(), `bad scenario: runs[0].on_oom: `) {
		t.Errorf("default: %v", err)
	}
}

// TestFiles: the files a scenario names, as Build opens them, so that an
// output is checked against them (issue 28, item 1: simulate --html X
// replaced the profile or model file X the scenario named).
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := read(t, fmt.Sprintf("model: %s\nprofile: p.yaml\nworkload:\n  trace: {file: t.csv}\n", dir))
	s.Dir = "studies"
	want := []NamedFile{{"model", filepath.Join(dir, "config.json")}, {"profile", filepath.Join("studies", "p.yaml")}, {"workload.trace.file", "t.csv"}}
	if got := s.Files(); !reflect.DeepEqual(got, want) {
		t.Errorf("Files() = %v, want %v", got, want)
	}
	if got := Default().Files(); len(got) != 0 {
		t.Errorf("the default scenario names %v", got)
	}
}
