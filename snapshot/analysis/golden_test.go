package analysis_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The JSON document of `gpufrag analyze --json` is a contract
// (docs/json.md): golden files pin every field name and value for
// small snapshots with traces, as the command prints them. Regenerate with
// go test ./snapshot/analysis -run Golden -update, and read the diff.
func TestGoldenJSON(t *testing.T) {
	for _, name := range []string{"mid", "replay"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", name+".pickle"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.ReadOptions(bytesReader(b), name+".pickle", &snapshot.Options{SkipTraceFrames: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := analysis.Analyze(s, analysis.Options{Capacity: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(r.Doc(name+".pickle"), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "analyze-"+name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("JSON differs from %s (rerun with -update if the change is intended):\n%s", path, got)
			}
		})
	}
}

// The JSON documents of `gpufrag diff` are a contract too (docs/json.md,
// "gpufrag diff --json"): mid.pickle against replay.pickle, and the
// outliers of mid, mid, replay and mid. Regenerate with -update.
func TestGoldenDiffJSON(t *testing.T) {
	read := func(name string) *analysis.Report {
		b, err := os.ReadFile(filepath.Join("..", "testdata", name+".pickle"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.ReadOptions(bytesReader(b), name+".pickle", &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(s, analysis.Options{Capacity: 1 << 30, WhatIf: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	mid, replay := read("mid"), read("replay")
	d := analysis.DiffReports(mid, replay, analysis.DiffOptions{})
	var units []analysis.Unit
	for i, r := range []*analysis.Report{mid, mid, replay, mid} {
		for j := range r.Devices {
			units = append(units, analysis.Unit{File: fmt.Sprintf("rank%d.pickle", i), Device: &r.Devices[j]})
		}
	}
	o, err := analysis.FindOutliers(units)
	if err != nil {
		t.Fatal(err)
	}
	var vs *analysis.DeviceDiff
	if len(o.Flags) > 0 {
		x := analysis.DiffDevices(o.Units[o.Reference].Device, o.Units[o.Flags[0].Unit].Device, analysis.DiffOptions{})
		vs = &x
	}
	for name, doc := range map[string]any{"diff-mid-replay": d.Doc("mid.pickle", "replay.pickle"), "diff-outliers": o.Doc(vs)} {
		got, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", name+".golden.json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(got) != string(want) {
			t.Errorf("JSON differs from %s (rerun with -update if the change is intended):\n%s", path, got)
		}
	}
}
