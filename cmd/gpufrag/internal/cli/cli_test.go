package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/optrace/synth"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// run runs the command line in-process.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/gpufrag/internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended):\n%s", path, got)
	}
}

// needAllocators fails the test at once if one of the named allocators (all
// of them if none is named) cannot be built with default settings.
func needAllocators(t *testing.T, names ...string) {
	t.Helper()
	if len(names) == 0 {
		names = registry.Names()
	}
	for _, n := range names {
		if _, err := registry.New(n, mem.MustDevice(80*mem.GiB, 0)); err != nil {
			t.Fatalf("allocator %s cannot be built: %v", n, err)
		}
	}
}

func TestRootHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}} {
		code, out, errs := run(t, "", args...)
		if code != 0 || errs != "" || !strings.Contains(out, "gpufrag makes GPU memory fragmentation") ||
			!strings.Contains(out, "Available Commands:") {
			t.Errorf("gpufrag %v: code %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
		// The exit statuses are documented where a user looks first.
		if !strings.Contains(out, "Exit status: 0 when") || !strings.Contains(out, "2 for a mistake on\nthe command line") {
			t.Errorf("gpufrag %v: help does not give the exit statuses", args)
		}
		for _, c := range []string{"simulate ", "analyze ", "defrag ", "cluster ", "replay "} {
			if !strings.Contains(out, c) {
				t.Errorf("gpufrag %v: help does not list %q", args, c)
			}
		}
	}
}

func TestReplayHelp(t *testing.T) {
	code, out, errs := run(t, "", "replay", "--help")
	if code != 0 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	// Every allocator kind is listed with its example spec.
	for _, k := range registry.Kinds {
		if !strings.Contains(out, "\n  "+k.Name+" ") || !strings.Contains(out, k.Example) {
			t.Errorf("help lacks allocator %s (%s)", k.Name, k.Example)
		}
	}
	// --alloc's default is every kind (it said "all six" when there were
	// seven).
	if want := "(default: all " + strconv.Itoa(len(registry.Kinds)) + ", as --alloc all)"; !strings.Contains(out, want) {
		t.Errorf("--alloc's help does not say %q", want)
	}
	golden(t, "replay-help.golden", out)
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "gpufrag ") {
		t.Fatalf("code %d, %q", code, out)
	}
	code, out, errs := run(t, "", "version", "--json")
	var v struct{ Version, Go, OS, Arch string }
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); code != 0 || errs != "" || err != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go") || v.OS == "" || v.Arch == "" {
		t.Fatalf("version --json: code %d, stderr %q, %v: %+v from\n%s", code, errs, err, v, out)
	}
	if code, _, errs := run(t, "", "version", "extra"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Fatalf("version extra: code %d, %q", code, errs)
	}
}

// TestErrors pins exit codes and messages: 1 for a bad trace or a failed
// run, 2 for a mistake on the command line. Trace errors name the line.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nope := write("nope.jsonl", `{"op":"free","id":"nope"}`+"\n")
	double := write("double.jsonl", `{"op":"alloc","id":"a","size":1024}`+"\n"+`{"op":"free","id":"a"}`+"\n\n"+`{"op":"free","id":"a"}`+"\n")
	malformed := write("bad.jsonl", `{"op":"alloc","id":"a","size":1024}`+"\n"+`{"op":"alloc","id":"b","size":1024`+"\n")
	negative := write("neg.jsonl", "\n"+`{"op":"alloc","id":"a","size":-5}`+"\n")
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string // stderr, exactly
	}{
		{"unknown id", "", []string{"replay", nope}, 1,
			"gpufrag: " + nope + `: line 1: field "id": free of unknown id "nope" (no earlier line allocates it)` + "\n"},
		{"unknown id, one allocator", "", []string{"replay", nope, "--alloc", "direct"}, 1,
			"gpufrag: " + nope + `: line 1: field "id": free of unknown id "nope" (no earlier line allocates it)` + "\n"},
		{"double free", "", []string{"replay", double}, 1,
			"gpufrag: " + double + `: line 4: field "id": double free of id "a" (already freed at line 2)` + "\n"},
		{"malformed line", "", []string{"replay", malformed}, 1,
			"gpufrag: " + malformed + ": line 2: malformed JSON: the line ends before the object does\n"},
		{"negative size", "", []string{"replay", negative}, 1,
			"gpufrag: " + negative + `: line 2: field "size": must be a positive integer (got -5)` + "\n"},
		{"stdin", `{"op":"sync","id":"x"}`, []string{"replay", "-"}, 1,
			`gpufrag: stdin: line 1: field "id": not allowed for op "sync"` + "\n"},
		{"missing file", "", []string{"replay", filepath.Join(dir, "none.jsonl")}, 1,
			"gpufrag: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory\n"},
		{"bad capacity", "", []string{"replay", "--capacity", "80XB"}, 2,
			`gpufrag: --capacity "80XB": bad size: "80XB" (want a number with an optional unit such as 512MiB or 80GiB)` +
				"\nRun 'gpufrag replay --help' for usage.\n"},
		{"zero capacity", "", []string{"replay", "--capacity", "0"}, 2,
			"gpufrag: --capacity 0B, --other 0B: bad device configuration: capacity 0 must be positive\nRun 'gpufrag replay --help' for usage.\n"},
		{"other over capacity", "", []string{"replay", "--capacity", "1GiB", "--other", "2GiB"}, 2,
			"gpufrag: --capacity 1GiB, --other 2GiB: bad device configuration: other use 2GiB must be between 0 and the capacity 1GiB\nRun 'gpufrag replay --help' for usage.\n"},
		// No --alloc: the flags at fault are --capacity and --other, not an
		// --alloc arena the user never gave.
		{"capacity below a page", "", []string{"replay", "--capacity", "80"}, 2,
			`gpufrag: --capacity 80B, --other 0B leave too little free memory for allocator arena (without --alloc replay runs every allocator; --alloc picks some): ` +
				`allocator "arena": bad allocator spec: arena fraction 0.9 of the 80B free is less than one 2MiB driver page` + "\nRun 'gpufrag replay --help' for usage.\n"},
		{"unknown allocator", "", []string{"replay", "--alloc", "direct", "--alloc", "tlsf"}, 2,
			`gpufrag: --alloc tlsf: bad allocator spec: unknown allocator "tlsf" (known: caching, sizeclass, arena, buddy, async, direct, vmm)` +
				"\nRun 'gpufrag replay --help' for usage.\n"},
		{"empty allocator list", "", []string{"replay", "--alloc", ","}, 2,
			"gpufrag: --alloc: bad allocator spec: empty allocator list\nRun 'gpufrag replay --help' for usage.\n"},
		{"two files", "", []string{"replay", "a", "b"}, 2,
			"gpufrag: replay takes at most one trace file, got 2 arguments (a b)\nRun 'gpufrag replay --help' for usage.\n"},
		{"unknown flag", "", []string{"replay", "--jsn"}, 2,
			"gpufrag: unknown flag: --jsn; did you mean --json?\nRun 'gpufrag replay --help' for usage.\n"},
		{"unknown command", "", []string{"repaly"}, 2,
			"gpufrag: unknown command \"repaly\" for \"gpufrag\"\n\nDid you mean this?\n\treplay\nRun 'gpufrag --help' for usage.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.stdin, tc.args...)
			if code != tc.code || errs != tc.want || out != "" {
				t.Errorf("gpufrag %q:\ncode %d, want %d\nstderr %q\nwant   %q\nstdout %q", tc.args, code, tc.code, errs, tc.want, out)
			}
		})
	}
}

// replayJSON runs replay --json and decodes the document.
func replayJSON(t *testing.T, stdin string, args ...string) optrace.Report {
	t.Helper()
	code, out, errs := run(t, stdin, append([]string{"replay", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	var doc optrace.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	return doc
}

// TestReplayJSONShape checks the names of the JSON schema (docs/json.md)
// against a generic decoding, and the numbers of the direct allocator on
// the replay contract's trace (../shared/checks/contracts, area replay): it
// frees what is freed, so it peaks at 128 MiB.
func TestReplayJSONShape(t *testing.T) {
	needAllocators(t, "direct")
	code, out, errs := run(t, "", "replay", "testdata/contract.jsonl", "--alloc", "direct", "--json")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		return ks
	}
	has := func(m map[string]any, names ...string) {
		t.Helper()
		for _, n := range names {
			if _, ok := m[n]; !ok {
				t.Errorf("JSON object lacks %q (has %v)", n, keys(m))
			}
		}
	}
	has(doc, "trace", "capacity_bytes", "other_use_bytes", "results")
	rs := doc["results"].([]any)
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0].(map[string]any)
	has(r, "allocator", "ops", "peak_reserved_bytes", "peak_allocated_bytes", "end_reserved_bytes",
		"end_allocated_bytes", "ooms", "skipped_ops", "peak_line", "peak", "end")
	if _, ok := r["first_oom"]; ok {
		t.Error("first_oom present without an OOM")
	}
	metrics := []string{"health", "frag_rate", "largest_free_block_bytes", "max_allocatable_bytes",
		"unallocated_reserved_share", "reserved_bytes", "allocated_bytes"}
	has(r["peak"].(map[string]any), metrics...)
	has(r["end"].(map[string]any), metrics...)

	d := replayJSON(t, "", "testdata/contract.jsonl", "--alloc", "direct")
	got := d.Results[0]
	if d.Trace != "testdata/contract.jsonl" || d.CapacityBytes != 80*mem.GiB || got.Allocator != "direct" ||
		got.Ops != 20 || got.PeakReservedBytes != 128*mem.MiB || got.PeakLine != 8 || got.OOMs != 0 ||
		got.EndReservedBytes != 128*mem.MiB || got.End.Health != 1 {
		t.Fatalf("%+v", d)
	}
}

// TestContractCaching is the replay contract (../shared/checks/contracts,
// area replay): 8 allocs of 16 MiB, 8 frees, then 4 allocs of 32 MiB. PyTorch's allocator keeps the eight 16 MiB
// segments cached and cannot merge them, so it peaks at 256 MiB; with
// expandable segments the freed pages are remapped and it peaks at 140 MiB.
func TestContractCaching(t *testing.T) {
	needAllocators(t, "caching")
	for _, tc := range []struct {
		spec string
		peak int64
	}{
		{"caching", 268435456},
		{"caching:expandable_segments:True", 146800640},
	} {
		d := replayJSON(t, "", "testdata/contract.jsonl", "--alloc", tc.spec)
		if r := d.Results[0]; r.Allocator != tc.spec || r.PeakReservedBytes != tc.peak {
			t.Errorf("%s: allocator %q, peak_reserved_bytes %d, want %d", tc.spec, r.Allocator, r.PeakReservedBytes, tc.peak)
		}
	}
	// The same through one run with both, read from stdin.
	trace, err := os.ReadFile("testdata/contract.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	d := replayJSON(t, string(trace), "-", "--alloc", "caching,caching:expandable_segments:True")
	if len(d.Results) != 2 || d.Trace != "stdin" || d.Results[0].PeakReservedBytes != 268435456 || d.Results[1].PeakReservedBytes != 146800640 {
		t.Fatalf("%+v", d)
	}
}

// TestReplayReport pins the human output on a small device where direct
// runs out of memory: 4 of the 16 MiB allocs fit in 64 MiB, the other 4
// fail and their frees are skipped; 2 of the 32 MiB allocs fit.
func TestReplayReport(t *testing.T) {
	needAllocators(t, "direct", "vmm")
	code, out, errs := run(t, "", "replay", "testdata/contract.jsonl", "--alloc", "direct", "--alloc", "vmm:2MiB", "--capacity", "64MiB")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	golden(t, "replay-small.golden", out)
	d := replayJSON(t, "", "testdata/contract.jsonl", "--alloc", "direct", "--capacity", "64MiB")
	r := d.Results[0]
	if r.OOMs != 6 || r.SkippedOps != 4 || r.FirstOOM == nil || r.FirstOOM.Line != 5 || r.FirstOOM.ID != "s5" {
		t.Fatalf("%+v", r)
	}
}

// TestReplayExample runs the README's first command: the embedded example
// through all seven allocators.
func TestReplayExample(t *testing.T) {
	if testkit.SlowBuild && testing.Short() {
		t.Skip("5,000 ops through seven allocators with every self-check on takes minutes under -race -short; the other CI steps run it")
	}
	needAllocators(t)
	code, out, errs := run(t, "", "replay")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	for _, want := range append([]string{"Replayed 5,000 ops of the embedded example", "max allocatable"}, registry.Names()...) {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	d := replayJSON(t, "")
	if len(d.Results) != len(registry.Kinds) || d.Trace != exampleName {
		t.Fatalf("%d results for trace %q", len(d.Results), d.Trace)
	}
	for i, r := range d.Results {
		if r.Allocator != registry.Kinds[i].Name || r.Ops != 5000 || r.PeakReservedBytes < r.PeakAllocatedBytes {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}

// TestExampleUpToDate fails when examples/serving.jsonl is not what package
// synth generates now; fix it with `go generate ./cmd/gpufrag/internal/cli`.
func TestExampleUpToDate(t *testing.T) {
	ops, err := synth.GenerateServing(synth.Example())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := optrace.Write(&buf, ops); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), exampleTrace) {
		t.Fatal("examples/serving.jsonl is stale: run go generate ./cmd/gpufrag/internal/cli")
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.00KiB", 3 * mem.GiB / 2: "1.50GiB", 512 * mem.MiB: "512.00MiB", 2 * mem.TiB: "2.00TiB"} {
		if got := human.Bytes(n); got != want {
			t.Errorf("human.Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -5000: "-5,000"} {
		if got := human.Thousands(n); got != want {
			t.Errorf("human.Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := human.Wrap("aa bb cc dd", 5); got != "aa bb\ncc dd" {
		t.Errorf("wrap: %q", got)
	}
}

// TestReadmeTable keeps the README honest: the results table it quotes must
// be what `gpufrag replay` prints now.
func TestReadmeTable(t *testing.T) {
	needAllocators(t)
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	_, out, _ := run(t, "", "replay")
	n := 0
	for _, line := range strings.Split(out, "\n") {
		for _, name := range registry.Names() {
			if strings.HasPrefix(line, name+" ") {
				n++
				if !strings.Contains(string(readme), line) {
					t.Errorf("README.md does not quote the current replay output line:\n%s\n(update the table from `go run ./cmd/gpufrag replay`)", line)
				}
			}
		}
	}
	if n != len(registry.Names()) {
		t.Fatalf("found %d allocator rows in the replay output, want %d:\n%s", n, len(registry.Names()), out)
	}
}

// TestDirectoryArguments: a directory given where replay, defrag or
// calibrate want a file fails (status 1) saying so and what was wanted, as
// analyze's does ("examples: is a directory, not a snapshot file"); they
// said "reading d: read d: is a directory" or "d: read d: is a directory".
func TestDirectoryArguments(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", dir}, dir + ": is a directory, not an op trace file"},
		{[]string{"defrag", dir}, dir + ": is a directory, not a snapshot or a saved layout"},
		{[]string{"calibrate", dir, "--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8"}, dir + ": is a directory, not a benchmark result file"},
	} {
		code, _, errs := run(t, "", c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 1 with %q", c.args, code, errs, c.want)
		}
	}
}
