package analysis_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// FuzzDiff compares two snapshots built from specs (snaptest.FromSpec:
// hostile names, pools, pending frees, several devices): nothing may
// panic, the attribution of every device adds up to its classes exactly,
// every segment of each side is kept, resized, appeared or vanished, the renderings
// succeed and the profile is valid.
//
//	go test ./snapshot/analysis -run '^$' -fuzz FuzzDiff -fuzztime 20s
func FuzzDiff(f *testing.F) {
	for i, a := range snaptest.Seeds {
		f.Add(a, snaptest.Seeds[(i+1)%len(snaptest.Seeds)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, specA, specB []byte, full bool) {
		var reps []*analysis.Report
		for _, spec := range [][]byte{specA, specB} {
			s, err := snapshot.ReadBytes(snaptest.Encode(snaptest.FromSpec(spec)), "fuzz")
			if err != nil {
				return
			}
			r, err := analysis.Analyze(s, analysis.Options{NoReplay: true, FullStacks: full, TopSites: 2})
			if err != nil {
				return
			}
			for _, d := range r.Devices {
				checkAddsUp(t, d)
			}
			var prof bytes.Buffer
			if err := r.WriteProfile(&prof); err != nil {
				t.Fatalf("profile: %v", err)
			}
			reps = append(reps, r)
		}
		d := analysis.DiffReports(reps[0], reps[1], analysis.DiffOptions{TopSites: 3, TopSegments: 2})
		for _, dd := range d.Devices {
			na, nb := 0, 0
			if dd.A != nil {
				na = len(dd.A.Layout.Segments)
			}
			if dd.B != nil {
				nb = len(dd.B.Layout.Segments)
			}
			if dd.Kept+dd.ResizedCount+dd.VanishedCount != na || dd.Kept+dd.ResizedCount+dd.AppearedCount != nb {
				t.Fatalf("segments: kept %d resized %d vanished %d appeared %d of %d and %d", dd.Kept, dd.ResizedCount, dd.VanishedCount, dd.AppearedCount, na, nb)
			}
		}
		var text bytes.Buffer
		if err := d.WriteText(&text, "a", "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(d.Doc("a", "b")); err != nil {
			t.Fatal(err)
		}
		var units []analysis.Unit
		for _, r := range append(reps, reps[0]) {
			for i := range r.Devices {
				units = append(units, analysis.Unit{File: "f", Device: &r.Devices[i]})
			}
		}
		if o, err := analysis.FindOutliers(units); err == nil {
			if _, err := json.Marshal(o.Doc(nil)); err != nil {
				t.Fatal(err)
			}
			if err := o.WriteText(&text, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}
