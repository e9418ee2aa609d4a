package optrace_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
)

// TestReportWriteText replays a trace whose second alloc does not fit a
// 1 GiB device on two allocators and checks what the text report says:
// the header (ops, the trace's name through untrusted.Printable, the device with
// its other use), one table row per allocator, the range of peaks, the
// verdicts, and the first OOM with its line, id and the ops skipped.
func TestReportWriteText(t *testing.T) {
	trace := `{"op":"alloc","id":"a","size":268435456}
{"op":"alloc","id":"big\u0007","size":2147483648}
{"op":"free","id":"big\u0007"}
{"op":"alloc","id":"c","size":1048576}
`
	ops, err := optrace.Read(strings.NewReader(trace), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	newAlloc := func(s string) (alloc.Allocator, error) {
		return registry.New(s, mem.MustDevice(mem.GiB, 64*mem.MiB))
	}
	results, err := optrace.ReplayAllWorkers(ops, []string{"caching", "direct", "buddy"}, newAlloc, 1)
	if err != nil {
		t.Fatal(err)
	}
	rep := optrace.Report{Trace: "t.jsonl", CapacityBytes: mem.GiB, OtherUseBytes: 64 * mem.MiB, Results: results}
	var sb strings.Builder
	if err := rep.WriteText(&sb, "dir/t\x1b.jsonl", len(ops)); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"Replayed 4 ops of dir/t\\x1b.jsonl through 3 allocators on a device of 1GiB\n(64MiB of it in other use).\n",
		"\ncaching ", "\ndirect ", "\nbuddy ",
		"peak reserved: from ",
		"At the end, weighed by the memory at stake:\n  caching: ",
		"Out of memory:\n  caching: 1 alloc failed, 1 later op on their ids skipped\n    first on line 2 (big\\a, 2.00GiB): ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("a control character from the input reached the report:\n%q", out)
	}

	// One allocator: "allocator", no range of peaks.
	rep.Results = results[:1]
	sb.Reset()
	if err := rep.WriteText(&sb, "t.jsonl", len(ops)); err != nil {
		t.Fatal(err)
	}
	if out := sb.String(); !strings.Contains(out, "through 1 allocator on") || strings.Contains(out, "peak reserved: from") {
		t.Errorf("one allocator's report:\n%s", out)
	}
}

// TestReportWriteTextWidth: replay's table, 118 columns with a long
// allocator name, fits a terminal of 80 and of 100 (WriteTextWidth: human.Table's
// Width, the peak reserved sentence wrapped), every name and figure kept;
// with no limit, or one it fits, the text is WriteText's byte for byte.
func TestReportWriteTextWidth(t *testing.T) {
	ops, err := optrace.Read(strings.NewReader(`{"op":"alloc","id":"a","size":268435456}
{"op":"alloc","id":"b","size":2147483648}
{"op":"free","id":"a"}
`), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	newAlloc := func(s string) (alloc.Allocator, error) { return registry.New(s, mem.MustDevice(mem.GiB, 0)) }
	results, err := optrace.ReplayAllWorkers(ops, []string{"caching", "caching:expandable_segments:True", "direct"}, newAlloc, 1)
	if err != nil {
		t.Fatal(err)
	}
	rep := optrace.Report{Trace: "t.jsonl", CapacityBytes: mem.GiB, Results: results}
	text := func(width int) string {
		var sb strings.Builder
		if err := rep.WriteTextWidth(&sb, "t.jsonl", len(ops), width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var plain strings.Builder
	if err := rep.WriteText(&plain, "t.jsonl", len(ops)); err != nil {
		t.Fatal(err)
	}
	full := plain.String()
	if n := human.Widest(full); n <= 80 {
		t.Fatalf("the full-width report is %d columns: the test needs one wider than 80", n)
	}
	for _, width := range []int{0, human.Widest(full), 200} {
		if got := text(width); got != full {
			t.Errorf("width %d:\n%s\nwant WriteText's:\n%s", width, got, full)
		}
	}
	// The other sentences wrap at 80 in every layout: a narrower terminal
	// than that is not tried.
	for _, width := range []int{80, 100} {
		got := text(width)
		if n := human.Widest(got); n > width {
			t.Errorf("width %d: %d columns:\n%s", width, n, got)
		}
		if !slices.Equal(testkit.Words(got), testkit.Words(full)) {
			t.Errorf("width %d: the names and figures differ from the full-width report's:\n%s", width, got)
		}
		for _, name := range []string{"caching", "caching:expandable_segments:True", "direct"} {
			if !strings.Contains(got, "\n"+name+" ") && !strings.Contains(got, "\n"+name+"\n") {
				t.Errorf("width %d: no line starts with %s:\n%s", width, name, got)
			}
		}
	}
}
