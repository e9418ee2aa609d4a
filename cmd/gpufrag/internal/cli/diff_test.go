package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// pairSnapshot is a small snapshot with stacks: two large segments, and
// with extra a third at 0x7f0080000000 holding 8 MiB from cache.py:5 grow
// (12 MiB of it free, so stranded). The generated pairs of the diff tests.
func pairSnapshot(extra int64) []byte {
	const mib = 1 << 20
	frames := func(file string, line int64, fn string) []any {
		return []any{snaptest.Dict{{"filename", "??"}, {"line", int64(0)}, {"name", "c10::alloc"}},
			snaptest.Dict{{"filename", "/v/site-packages/torch/nn/functional.py"}, {"line", int64(9)}, {"name", "linear"}},
			snaptest.Dict{{"filename", file}, {"line", line}, {"name", fn}}}
	}
	type blk struct {
		size, req int64
		frames    []any
	}
	var segs []any
	seg := func(addr uint64, blocks ...blk) {
		var bl []any
		var total, alloc, req int64
		at := addr
		for _, b := range blocks {
			d := snaptest.Dict{{"address", at}, {"size", b.size}, {"requested_size", b.req}, {"state", "inactive"}, {"frames", []any{}}}
			if b.frames != nil {
				d = snaptest.Dict{{"address", at}, {"size", b.size}, {"requested_size", b.req}, {"state", "active_allocated"}, {"frames", b.frames}}
				alloc += b.size
				req += b.req
			}
			bl = append(bl, d)
			at += uint64(b.size)
			total += b.size
		}
		segs = append(segs, snaptest.Dict{{"device", int64(0)}, {"address", addr}, {"total_size", total},
			{"allocated_size", alloc}, {"active_size", alloc}, {"requested_size", req}, {"stream", int64(0)},
			{"segment_type", "large"}, {"segment_pool_id", snaptest.Tuple{0, 0}}, {"is_expandable", false}, {"frames", []any{}}, {"blocks", bl}})
	}
	seg(0x7f0000000000, blk{4 * mib, 3 * mib, frames("model.py", 10, "attn")}, blk{12 * mib, 0, nil}, blk{4 * mib, 4 * mib, frames("model.py", 20, "mlp")})
	seg(0x7f0040000000, blk{20 * mib, 20 * mib, frames("weights.py", 3, "load")})
	if extra > 0 {
		seg(0x7f0080000000, blk{extra, extra - 1000, frames("cache.py", 5, "grow")}, blk{20*mib - extra, 0, nil})
	}
	return snaptest.Encode(snaptest.Dict{{"segments", segs}})
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDiffCommandKnownAnswer: B = A + one segment from cache.py:5; the
// command must report exactly that, as text, JSON and HTML.
func TestDiffCommandKnownAnswer(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.pickle", pairSnapshot(0))
	b := writeFile(t, dir, "b.pickle", pairSnapshot(8<<20))
	code, out, errs := run(t, "", "diff", a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"2 in both, 1 appeared (20MiB), 0 vanished (0B)", "appeared  0x7f0080000000",
		"+20MiB       +8MiB      +12MiB      +1000B         0B      20MiB  cache.py:5 grow"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	html := filepath.Join(dir, "d.html")
	code, out, errs = run(t, "", "diff", a, b, "--json", "--html", html)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var doc analysis.DiffDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Devices[0]
	want := []analysis.SegmentRefDoc{{Address: "0x7f0080000000", SizeBytes: 20 << 20, Pool: "large", LiveBytes: 8 << 20}}
	if len(doc.Devices) != 1 || !reflect.DeepEqual(d.Appeared, want) || d.VanishedSegments != 0 || d.SitesChanged != 1 ||
		d.Sites[0].Site != "cache.py:5 grow" || d.Sites[0].HeldDeltaBytes != 20<<20 || d.Sites[0].B.StrandedBytes != 12<<20 {
		t.Errorf("JSON: %+v", doc)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<svg x="`); n != 2 || !strings.Contains(string(page), "cache.py:<wbr />5 grow") {
		t.Errorf("HTML: %d nested segment maps (want 2), or the site is missing", n)
	}
}

// TestDiffCommandOutlier: four ranks, one with a segment more.
func TestDiffCommandOutlier(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for i, extra := range []int64{0, 0, 16 << 20, 0} {
		args = append(args, writeFile(t, dir, "rank"+string(rune('0'+i))+".pickle", pairSnapshot(extra)))
	}
	html := filepath.Join(dir, "o.html")
	code, out, errs := run(t, "", append([]string{"diff", "--json", "--html", html}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc analysis.OutliersDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, o := range doc.Outliers {
		if filepath.Base(o.File) != "rank2.pickle" {
			t.Errorf("outlier %+v, want rank2 only", o)
		}
	}
	if len(doc.Outliers) == 0 || doc.VsReference == nil || doc.VsReference.AppearedSegments != 1 ||
		doc.VsReference.Sites[0].Site != "cache.py:5 grow" || filepath.Base(doc.Reference.File) == "rank2.pickle" {
		t.Errorf("outliers %+v, reference %+v, vs %+v", doc.Outliers, doc.Reference, doc.VsReference)
	}
	code, out, _ = run(t, "", append([]string{"diff"}, args...)...)
	if code != 0 || !strings.Contains(out, "rank2.pickle device 0: reserved_bytes 60MiB, median 40MiB") {
		t.Errorf("text (exit %d):\n%s", code, out)
	}
}

func TestDiffCommandErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.pickle", pairSnapshot(0))
	bad := writeFile(t, dir, "bad.pickle", []byte("\x80\x04garbage"))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", a}, exitUsage, "diff takes two or more snapshot files, got 1"},
		{[]string{"diff", a, a, "--top", "0"}, exitUsage, "--top 0: must be at least 1"},
		{[]string{"diff", "-", "-"}, exitUsage, "standard input (-) can be read once, given 2 times"},
		{[]string{"diff", a, a, "--html", a}, exitUsage, "--html"},
		{[]string{"diff", a, bad}, exitFail, "bad.pickle"},
		// --capacity below a file's live blocks: the flag's mistake, as in
		// analyze (it was exit 1, naming no flag and no way out).
		// The advice is the capacity every file fits in: a.pickle's 28MiB,
		// not the first file's 13MiB.
		{[]string{"diff", filepath.Join(snapshotFixtures, "modern_p4.pickle"), a, "--capacity", "8MiB"}, exitUsage,
			"--capacity 8MiB: below the 28MiB that live blocks hold on device 0 of " + a +
				" (40MiB reserved): no allocator could hold them; give at least 28MiB, or leave --capacity out\nRun 'gpufrag diff --help'"},
		{[]string{"diff", a, filepath.Join(snapshotFixtures, "memory_stats.json")}, exitFail, "memory_stats.json: no device has a segment or a trace event: nothing to compare"},
		{append([]string{"diff"}, slices.Repeat([]string{a}, maxDiffFiles+1)...), exitUsage, "diff takes at most 1024 snapshot files, got 1025"},
		{[]string{"analyze", a, "--folded", filepath.Join(t.TempDir(), "f.txt"), "--folded-value", "bogus"}, exitUsage, `--folded-value "bogus": want one of blocks, allocated, stranded, rounding`},
	} {
		code, _, errs := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// TestDiffCapacityWarning: a --capacity below what a file reserved is
// warned about as analyze warns, naming the file, and without analyze's
// what-ifs, which diff does not run; a file it is not below gets none.
// Diff said nothing.
func TestDiffCapacityWarning(t *testing.T) {
	a := writeFile(t, t.TempDir(), "a.pickle", pairSnapshot(0)) // 40MiB reserved, 28MiB live
	code, _, errs := run(t, "", "diff", a, filepath.Join(snapshotFixtures, "modern_p4.pickle"), "--capacity", "32MiB")
	want := "gpufrag: warning: " + a + ": --capacity 32MiB is below the 40MiB device 0 reserved at the end of the snapshot: " +
		"the final state's device-free memory and max allocatable are figured on a device that could not have held it\n"
	if code != 0 || errs != want {
		t.Errorf("exit %d, stderr %q; want 0 and %q", code, errs, want)
	}
}

// TestAnalyzeProfile: --profile writes a profile pprof parses, whose
// totals are the JSON's attribution totals; --folded the same stacks.
func TestAnalyzeProfile(t *testing.T) {
	dir := t.TempDir()
	b := writeFile(t, dir, "b.pickle", pairSnapshot(8<<20))
	prof, folded := filepath.Join(dir, "p.pb.gz"), filepath.Join(dir, "f.txt")
	code, out, errs := run(t, "", "analyze", b, "--json", "--profile", prof, "--folded", folded, "--folded-value", "stranded")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc analysis.Doc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	total := doc.Devices[0].Attribution.Total
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	sums := make([]int64, len(p.SampleType))
	for _, s := range p.Sample {
		for i, v := range s.Value {
			sums[i] += v
		}
	}
	if want := []int64{int64(total.Blocks), total.AllocatedBytes, total.StrandedBytes, total.RoundingBytes}; !reflect.DeepEqual(sums, want) {
		t.Errorf("profile totals %v, JSON totals %v", sums, want)
	}
	fb, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	if want := "grow (cache.py:5) 12582912\n"; !strings.Contains(string(fb), want) {
		t.Errorf("folded lacks %q:\n%s", want, fb)
	}
}
