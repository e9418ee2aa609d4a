package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// experimentsDir is experiments/ seen from this package's directory.
const experimentsDir = "../.."

// TestDefragSuiteTraces rebuilds the suite's traces from
// ../shared/data/traces and fails when the files in the repository differ.
func TestDefragSuiteTraces(t *testing.T) {
	shared := filepath.Join(experimentsDir, sharedFromExperiments)
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("%s absent: the committed variants cannot be checked", shared)
	}
	dir := filepath.Join(experimentsDir, outFromExperiments)
	for _, s := range suiteTraces {
		got, err := s.build(shared)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, s.out)
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go generate ./experiments writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("experiments/%s/%s differs from what %s gives (go generate ./experiments rewrites it)", outFromExperiments, s.out, s.src)
		}
	}
}

// TestRunWithoutShared: in a clone alone the command writes nothing and
// says so; with the shared traces it writes every variant.
func TestRunWithoutShared(t *testing.T) {
	out := filepath.Join(t.TempDir(), "defrag-suite")
	var log strings.Builder
	if err := run(out, filepath.Join(out, "absent"), &log); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err == nil || !strings.Contains(log.String(), "absent: the 7 traces of "+out+" are left as they are") {
		t.Errorf("without the shared traces: %v, log %q", err, log.String())
	}
	shared := filepath.Join(experimentsDir, sharedFromExperiments)
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("%s absent", shared)
	}
	if err := run(out, shared, &log); err != nil {
		t.Fatal(err)
	}
	for _, s := range suiteTraces {
		got, err := os.ReadFile(filepath.Join(out, s.out))
		want, _ := os.ReadFile(filepath.Join(experimentsDir, outFromExperiments, s.out))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes written, not the committed file (%v)", s.out, len(got), err)
		}
	}
}
