package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// defragLayoutFile writes a caching layout with three 20 MiB segments holding
// one, two and four 4 MiB blocks, and returns its path.
func defragLayoutFile(t *testing.T) string {
	return cachingLayoutFile(t, 15, []int{0, 2, 3, 4, 6, 8, 9, 12})
}

// cachingLayoutFile writes the layout of a caching allocator after n 4 MiB
// allocations and the frees of those indexed by free, and returns its path.
func cachingLayoutFile(t *testing.T, n int, free []int) string {
	t.Helper()
	a, err := registry.New("caching", mem.MustDevice(mem.GiB, 0))
	if err != nil {
		t.Fatal(err)
	}
	var hs []alloc.Handle
	for range n {
		b, err := a.Alloc(4*mem.MiB, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, b.Handle)
	}
	for _, i := range free {
		if err := a.Free(hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := defrag.WriteLayout(&buf, a.Layout(), "caching"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "layout.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefragLayoutJSON(t *testing.T) {
	path := defragLayoutFile(t)
	code, out, errb := run(t, "", "defrag", path, "--json", "--gpu", "a100-40g")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc defrag.Report
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// Segment a (one block) goes into c's hole; b (two blocks) cannot follow.
	if doc.Source != "layout" || doc.Allocator != "caching" || !doc.Reached || doc.Moves != 1 ||
		doc.BytesMoved != 4*mem.MiB || doc.LowerBoundBytes != 4*mem.MiB || doc.FreedBytes != 20*mem.MiB {
		t.Fatalf("unexpected plan: %+v", doc)
	}
	gpu, _ := model.LookupGPU("a100-40g")
	want := float64(defrag.CopyCost(4*mem.MiB, 1, gpu, defrag.CostModel{})) / 1e9
	if doc.PauseS != want || doc.GPU != "a100-40g" {
		t.Errorf("pause %v s on %s, want %v s on a100-40g", doc.PauseS, doc.GPU, want)
	}
	if len(doc.MoveList) != 1 || doc.MoveList[0].Size != 4*mem.MiB || doc.Before.Health >= doc.After.Health {
		t.Errorf("moves %+v, health %v -> %v", doc.MoveList, doc.Before.Health, doc.After.Health)
	}
	// Deterministic, byte for byte.
	if _, again, _ := run(t, "", "defrag", path, "--json", "--gpu", "a100-40g"); again != out {
		t.Error("two runs printed different JSON")
	}
	// From standard input too.
	data, _ := os.ReadFile(path)
	if code, stdin, errb := run(t, string(data), "defrag", "-", "--json", "--gpu", "a100-40g"); code != 0 || !strings.Contains(stdin, `"bytes_moved": 4194304`) {
		t.Errorf("stdin: exit %d: %s", code, errb)
	}
}

// TestDefragFitNeedless: a fit goal the segments cannot make room for,
// on a device whose free memory holds the request anyway, says that the
// request needs no compaction (the plan alone said "NOT reached" with a
// lower bound of 29.92GiB while 69GiB could be allocated); one that
// cannot be allocated says nothing of the kind.
func TestDefragFitNeedless(t *testing.T) {
	for _, c := range []struct {
		gpu  string
		want bool
	}{{"h200-141g", true}, {"a100-80g", false}} {
		code, out, errb := run(t, "", "defrag", "../../../../examples/snapshot.pickle", "--goal", "fit:20GiB", "--gpu", c.gpu)
		if code != 0 || !strings.Contains(out, "goal fit:20GiB: NOT reached") {
			t.Fatalf("%s: exit %d: %s\n%s", c.gpu, code, errb, out)
		}
		if got := strings.Contains(out, "a request of 20GiB succeeds without compaction here"); got != c.want {
			t.Errorf("%s: the note is there: %v, want %v\n%s", c.gpu, got, c.want, out)
		}
	}
}

func TestDefragText(t *testing.T) {
	code, out, errb := run(t, "", "defrag", defragLayoutFile(t), "--goal", "fit:16MiB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, s := range []string{"goal fit:16MiB: reached", "bytes moved", "lower bound", "pause", "h100-80g", "health", "Moves ("} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestDefragSnapshot(t *testing.T) {
	code, out, errb := run(t, "", "defrag", filepath.Join(snapshotFixtures, "modern_p4.pickle"), "--json", "--device", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc defrag.Report
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source != "snapshot" || doc.Device != 1 || doc.Allocator != "caching" || doc.Before.Segments == 0 {
		t.Errorf("unexpected document: %+v", doc)
	}
}

func TestDefragErrors(t *testing.T) {
	path := defragLayoutFile(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"gpufrag_layout":1,"segments":[{"addr":"x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A binary file (as /dev/zero) is refused at its first byte; it was
	// read whole (os.ReadFile, no limit) before.
	zeros := filepath.Join(t.TempDir(), "zeros")
	if err := os.WriteFile(zeros, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	// Issue 28: an allocator spec replay --alloc refuses was accepted.
	badAlloc := filepath.Join(t.TempDir(), "alloc.json")
	if err := os.WriteFile(badAlloc, []byte(`{"gpufrag_layout":1,"allocator":"caching:bogus:1","capacity_bytes":4096}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"defrag"}, exitUsage, "one file"},
		{[]string{"defrag", zeros}, exitFail, "byte 0: 0x00: not a gpufrag layout file"},
		{[]string{"defrag", empty}, exitFail, "empty file"},
		{[]string{"defrag", path, "--moves", "-2"}, exitUsage, "--moves -2"},
		{[]string{"defrag", path, "--goal", "shrink"}, exitUsage, "--goal"},
		{[]string{"defrag", path, "--goal", "fit:0"}, exitUsage, "positive"},
		{[]string{"defrag", path, "--goal", "fit:10PiB"}, exitUsage, "--goal fit:10PiB: larger than the device ("},
		{[]string{"defrag", path, "--gpu", "v100"}, exitUsage, "--gpu"},
		{[]string{"defrag", path, "--allocator", "cudamalloc"}, exitUsage, `--allocator: bad allocator spec: unknown allocator "cudamalloc" (known: `},
		{[]string{"defrag", path, "--allocator", "caching:bogus:1"}, exitUsage, `--allocator: allocator "caching:bogus:1": `},
		// A spec, not only a name, in any case: its kind's rules apply.
		{[]string{"defrag", path, "--allocator", "Caching:expandable_segments:True", "--json"}, exitOK, ""},
		{[]string{"defrag", path, "--allocator", "vmm:64KiB", "--json"}, exitOK, ""},
		{[]string{"defrag", bad}, exitFail, `offset 43: field "segments.addr"`},
		{[]string{"defrag", badAlloc}, exitFail, badAlloc + `: field "allocator": allocator "caching:bogus:1": `},
		{[]string{"defrag", filepath.Join(t.TempDir(), "missing")}, exitFail, "no such file"},
		{[]string{"defrag", filepath.Join(snapshotFixtures, "memory_stats.json")}, exitFail, "no segments"},
		{[]string{"defrag", filepath.Join(snapshotFixtures, "modern_p4.pickle"), "--device", "7"}, exitUsage, "--device 7: "}, // a device the snapshot lacks is a bad flag value (issue 18),
	} {
		code, _, errb := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, code, errb, c.code, c.want)
		}
	}
}

// TestDefragLargerThanGPU: a layout or snapshot larger than --gpu failed
// with "memory classes ... add up to X, capacity Y" (a snapshot, read
// against the GPU) or was priced on a GPU it could not be on (a saved
// layout); it is a usage error naming the smallest preset that holds it
// (issue 28, item 8).
func TestDefragLargerThanGPU(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	const seg = 100 << 30
	doc := fmt.Sprintf(`{"gpufrag_layout":1,"allocator":"caching","capacity_bytes":%d,"segments":[{"addr":0,"size":%d,"pool":"large",`+
		`"blocks":[{"addr":0,"size":%d,"state":"free"}]}]}`, 2*seg, seg, seg)
	if err := os.WriteFile(big, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "defrag", big)
	if want := "--gpu h100-80g: " + big + " (layout) is larger than the GPU: its segments reserve 100.00GiB, more than its 79.65GiB: give --gpu h200-141g (140.40GiB), the smallest preset that holds it"; code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, exitUsage, want)
	}
	if code, _, errs := run(t, "", "defrag", big, "--gpu", "h200-141g", "--json"); code != exitOK {
		t.Errorf("on the suggested GPU: exit %d: %s", code, errs)
	}
}
