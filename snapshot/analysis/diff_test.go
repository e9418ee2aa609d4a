package analysis_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

func report(t *testing.T, s *snapshot.Snapshot) *analysis.Report {
	t.Helper()
	r, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// baseSegments is snapshot A of the generated pairs: two large segments,
// one fragmented.
func baseSegments() []snapshot.Segment {
	return []snapshot.Segment{
		stackSeg(segA,
			snapshot.Block{Size: 4 * mib, RequestedSize: 3 * mib, Frames: at("model.py", 10, "attn")},
			snapshot.Block{Size: 12 * mib, State: snapshot.StateInactive},
			snapshot.Block{Size: 4 * mib, RequestedSize: 4 * mib, Frames: at("model.py", 20, "mlp")}),
		stackSeg(segB, snapshot.Block{Size: 20 * mib, RequestedSize: 20 * mib, Frames: at("weights.py", 3, "load")}),
	}
}

// TestDiffKnownAnswer: B is A plus one segment holding a block from a
// known site; the diff must report exactly that segment and that site.
func TestDiffKnownAnswer(t *testing.T) {
	a := report(t, snap(nil, baseSegments()...))
	grown := stackSeg(segC,
		snapshot.Block{Size: 8 * mib, RequestedSize: 8*mib - 1000, Frames: at("cache.py", 5, "grow")},
		snapshot.Block{Size: 12 * mib, State: snapshot.StateInactive})
	b := report(t, snap(nil, append(baseSegments(), grown)...))
	d := analysis.DiffReports(a, b, analysis.DiffOptions{})
	if len(d.Devices) != 1 {
		t.Fatalf("%d device pairs, want 1", len(d.Devices))
	}
	dd := d.Devices[0]
	if dd.Kept != 2 || dd.AppearedCount != 1 || dd.VanishedCount != 0 || dd.AppearedBytes != 20*mib {
		t.Errorf("kept %d appeared %d (%d bytes) vanished %d; want 2, 1 (20 MiB), 0", dd.Kept, dd.AppearedCount, dd.AppearedBytes, dd.VanishedCount)
	}
	if want := []analysis.SegmentRef{{Address: segC, Size: 20 * mib, Pool: "large", Live: 8 * mib}}; !reflect.DeepEqual(dd.Appeared, want) {
		t.Errorf("appeared %+v, want %+v", dd.Appeared, want)
	}
	if want := []analysis.SizeCount{{Size: 20 * mib, A: 2, B: 3}}; !reflect.DeepEqual(dd.Sizes, want) {
		t.Errorf("sizes %+v, want %+v", dd.Sizes, want)
	}
	if len(dd.Sites) != 1 || dd.SitesChanged != 1 {
		t.Fatalf("%d sites moved (%d listed), want exactly 1: %+v", dd.SitesChanged, len(dd.Sites), dd.Sites)
	}
	s := dd.Sites[0]
	if s.Site != "cache.py:5 grow" || s.A.Blocks != 0 || s.B.Allocated != 8*mib || s.B.Stranded != 12*mib ||
		s.B.Rounding != 1000 || s.HeldDelta() != 20*mib {
		t.Errorf("site %+v", s)
	}
	if got := dd.B.Classes.Reserved - dd.A.Classes.Reserved; got != 20*mib {
		t.Errorf("reserved moved by %d, want 20 MiB", got)
	}

	var text bytes.Buffer
	if err := d.WriteText(&text, "a.pickle", "b.pickle"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  reserved                          40MiB        60MiB       +20MiB   +50.0%",
		"2 in both, 1 appeared (20MiB), 0 vanished (0B)",
		"  appeared  0x7f0080000000        20MiB large    live 8MiB",
		"     +20MiB       +8MiB      +12MiB      +1000B         0B      20MiB  cache.py:5 grow",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	doc, err := json.Marshal(d.Doc("a.pickle", "b.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"appeared_segments":1`, `"held_delta_bytes":20971520`, `"site":"cache.py:5 grow"`, `"device_a":0`} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("JSON lacks %s: %s", want, doc)
		}
	}
}

// TestDiffSelf: a snapshot against itself has no change.
func TestDiffSelf(t *testing.T) {
	r := report(t, snap(nil, baseSegments()...))
	dd := analysis.DiffReports(r, r, analysis.DiffOptions{}).Devices[0]
	if dd.Kept != 2 || dd.AppearedCount+dd.VanishedCount+dd.SitesChanged+len(dd.Sizes) != 0 || !dd.Same() {
		t.Errorf("self diff: %+v", dd)
	}
	// The text says so (a report of zeros said nothing of it); a diff of
	// two states does not.
	var b strings.Builder
	if err := analysis.DiffReports(r, r, analysis.DiffOptions{}).WriteText(&b, "a", "a"); err != nil || !strings.Contains(b.String(), "No difference: ") {
		t.Errorf("self diff text (%v):\n%s", err, b.String())
	}
	other := report(t, snap(nil, baseSegments()[:1]...))
	if d := analysis.DiffReports(r, other, analysis.DiffOptions{}).Devices[0]; d.Same() {
		t.Errorf("a segment vanished, yet Same: %+v", d)
	}
}

// TestDiffVanishedAndMoved: a segment freed (vanished), another at the
// same address with another size (resized, as an expandable segment that
// grew), a site's block shrunk.
func TestDiffVanishedAndMoved(t *testing.T) {
	a := report(t, snap(nil, append(baseSegments(), stackSeg(segC, snapshot.Block{Size: 2 * mib, RequestedSize: 2 * mib}))...))
	segs := baseSegments()
	segs[0] = stackSeg(segA,
		snapshot.Block{Size: 2 * mib, RequestedSize: 2 * mib, Frames: at("model.py", 10, "attn")},
		snapshot.Block{Size: 14 * mib, State: snapshot.StateInactive},
		snapshot.Block{Size: 4 * mib, RequestedSize: 4 * mib, Frames: at("model.py", 20, "mlp")})
	segs[1] = stackSeg(segB, snapshot.Block{Size: 2 * mib, RequestedSize: 2 * mib, Frames: at("weights.py", 3, "load")})
	b := report(t, snap(nil, segs...))
	dd := analysis.DiffReports(a, b, analysis.DiffOptions{}).Devices[0]
	if dd.Kept != 1 || dd.AppearedCount != 0 || dd.VanishedCount != 1 || dd.Vanished[0].Address != segC || dd.VanishedBytes != 2*mib {
		t.Errorf("kept %d appeared %+v vanished %+v", dd.Kept, dd.Appeared, dd.Vanished)
	}
	if want := []analysis.SegmentResize{{Address: segB, Pool: "large", SizeA: 20 * mib, SizeB: 2 * mib}}; dd.ResizedCount != 1 || !reflect.DeepEqual(dd.Resized, want) {
		t.Errorf("resized %d: %+v, want %+v", dd.ResizedCount, dd.Resized, want)
	}
	// weights.py lost 18 MiB; attn lost 2 MiB allocated and its stranded
	// share went from 12·4/8 = 6 to 14·2/6 = 4.67 MiB; mlp's from 6 to
	// 9.33 MiB; the block without a stack in segC vanished with it.
	got := map[string]int64{}
	for _, s := range dd.Sites {
		got[s.Site] = s.HeldDelta()
	}
	third := int64(14*mib+2) / 3 // attn's share of 14 MiB split 2:4: the spare byte goes to its larger remainder
	want := map[string]int64{"weights.py:3 load": -18 * mib, "model.py:10 attn": third - 10*mib + 2*mib,
		"model.py:20 mlp": (14*mib - third) - 6*mib, analysis.NoStack: -2 * mib}
	if !reflect.DeepEqual(got, want) || dd.Sites[0].Site != "weights.py:3 load" {
		t.Errorf("held deltas %v, want %v (weights first)", got, want)
	}
}

// TestDiffPairsSingleDevices: two ranks' files, each of its own device.
func TestDiffPairsSingleDevices(t *testing.T) {
	segs := baseSegments()
	for i := range segs {
		segs[i].Device = 3
	}
	s3 := snap(nil, segs...)
	s3.DeviceTraces = nil
	d := analysis.DiffReports(report(t, snap(nil, baseSegments()...)), report(t, s3), analysis.DiffOptions{})
	if len(d.Devices) != 1 || d.Devices[0].A.Device != 0 || d.Devices[0].B.Device != 3 || d.Devices[0].Kept != 2 {
		t.Errorf("pairs: %+v", d.Devices)
	}
}

// rank builds one rank's report: base segments plus extra MiB of live
// memory in one more segment.
func rank(t *testing.T, extra int64) *analysis.Report {
	segs := baseSegments()
	if extra > 0 {
		segs = append(segs, stackSeg(segC, snapshot.Block{Size: extra, RequestedSize: extra, Frames: at("cache.py", 5, "grow")}))
	}
	return report(t, snap(nil, segs...))
}

func units(t *testing.T, extras ...int64) []analysis.Unit {
	var out []analysis.Unit
	for i, e := range extras {
		r := rank(t, e)
		out = append(out, analysis.Unit{File: "rank" + string(rune('0'+i)), Device: &r.Devices[0]})
	}
	return out
}

func TestOutliers(t *testing.T) {
	// Seven ranks alike, rank 5 holds 2 GiB more in one more segment.
	o, err := analysis.FindOutliers(units(t, 0, 0, 0, 0, 0, 2048*mib, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string]bool{}
	for _, f := range o.Flags {
		flagged[o.Units[f.Unit].File+" "+analysis.OutlierMetrics[f.Metric].Name] = true
		if o.Units[f.Unit].File != "rank5" {
			t.Errorf("flagged %s, not rank5", o.Units[f.Unit].File)
		}
	}
	for _, want := range []string{"rank5 reserved_bytes", "rank5 allocated_bytes", "rank5 segments"} {
		if !flagged[want] {
			t.Errorf("not flagged: %s (flags %v)", want, flagged)
		}
	}
	if o.Reference == 5 {
		t.Errorf("the outlier is the reference")
	}
	var text bytes.Buffer
	if err := o.WriteText(&text, nil); err != nil || !strings.Contains(text.String(), "rank5 device 0: reserved_bytes 2.04GiB, median 40MiB") {
		t.Errorf("text (err %v):\n%s", err, text.String())
	}

	// All alike: no outlier. Noise below 1%: none either, though the MAD
	// rule alone would flag it (MAD 0, mean deviation tiny).
	for _, extras := range [][]int64{{0, 0, 0, 0}, {mib / 4, mib / 4, mib / 4, mib/4 + 4096}} {
		o, err := analysis.FindOutliers(units(t, extras...))
		if err != nil || len(o.Flags) != 0 {
			t.Errorf("%v: flags %+v (err %v)", extras, o.Flags, err)
		}
	}
	if _, err := analysis.FindOutliers(units(t, 0, 0)); !errors.Is(err, analysis.ErrFewUnits) {
		t.Errorf("two units: err %v, want ErrFewUnits", err)
	}
}

// TestOutliersLeakFirst: eight differently seeded generated ranks (the
// seeds of gensnap's -seed 11 to 18, -pinned 600 -sites 600), the fourth
// leaking 40 tensors of 30.72 MB (1.2 GiB) from one call site. Ranked by
// |z|, rank 3's health (z +11.5) and largest free block (190 MiB above the
// median, z +11.1) came before the leak (allocated z +8.4), so diff
// compared rank 3 with the reference; ranked by bytes at stake the leaking
// rank is first, and its diff against the reference names the leak's site
// first.
func TestOutliersLeakFirst(t *testing.T) {
	const leaker = 3
	var reps []*analysis.Report
	var names []string
	for i := range 8 {
		o := gensnap.Options{Bytes: 300_000, Seed: uint64(11 + i), Pinned: 600, Sites: 600}
		if i == leaker {
			o.Leak, o.LeakSize = 40, 32212254
		}
		var buf bytes.Buffer
		if _, err := gensnap.Write(&buf, o); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.ReadBytes(buf.Bytes(), "gen")
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, report(t, s))
		names = append(names, "rank"+string(rune('0'+i)))
	}
	c, err := analysis.Compare(reps, names, analysis.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Outliers
	if len(o.Flags) == 0 {
		t.Fatal("no outlier")
	}
	first := o.Flags[0]
	if first.Unit != leaker || analysis.OutlierMetrics[first.Metric].Name != "allocated_bytes" {
		t.Errorf("strongest outlier %s %s (z %+.1f, %d bytes at stake), want rank%d allocated_bytes",
			o.Units[first.Unit].File, analysis.OutlierMetrics[first.Metric].Name, first.Z, first.Stake, leaker)
	}
	if first.Stake < 40*32212254 {
		t.Errorf("%d bytes at stake, want at least the leak's %d", first.Stake, 40*32212254)
	}
	for i := 1; i < len(o.Flags); i++ {
		if o.Flags[i].Stake > o.Flags[i-1].Stake {
			t.Errorf("flag %d: %d bytes at stake after %d", i, o.Flags[i].Stake, o.Flags[i-1].Stake)
		}
	}
	if c.Versus == nil || len(c.Versus.Sites) == 0 {
		t.Fatal("no diff of the strongest outlier, or no site moved")
	}
	if got := c.Versus.Sites[0].Site; got != gensnap.LeakSite {
		t.Fatalf("the strongest outlier's diff names %s first, want %s", got, gensnap.LeakSite)
	}
	if s := c.Versus.Sites[0]; s.B.Allocated-s.A.Allocated < 40*32212254 {
		t.Errorf("%s: %d bytes more allocated, want the leak's %d", s.Site, s.B.Allocated-s.A.Allocated, 40*32212254)
	}
}
