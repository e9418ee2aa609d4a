package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir is examples/ seen from this package's directory.
const examplesDir = "../.."

// maxTotalBytes bounds examples/: a clone should stay small (the issue asks
// for well under 2 MB).
const maxTotalBytes = 1 << 20

// TestExampleFiles regenerates every file of examples/ and compares it with
// the committed one. Files copied or cut from ../shared/data are checked
// only where that directory is present.
func TestExampleFiles(t *testing.T) {
	shared := filepath.Join(examplesDir, sharedFromExamples)
	var total int64
	for _, f := range exampleFiles {
		path := filepath.Join(examplesDir, f.name)
		want, err := build(f, shared)
		if f.src != "" && errors.Is(err, fs.ErrNotExist) {
			t.Logf("%s: not checked: %v", f.name, err)
			if st, err := os.Stat(path); err == nil {
				total += st.Size()
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(want))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (go generate ./examples writes it)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples/%s differs from what its generator writes (%d bytes against %d); go generate ./examples rewrites it",
				f.name, len(got), len(want))
		}
	}
	if total > maxTotalBytes {
		t.Errorf("examples/ holds %d bytes of inputs, over the bound of %d", total, maxTotalBytes)
	}
}

// TestCutBenchWhole: the cut writes values as they were: with nothing cut
// it gives back the source byte for byte.
func TestCutBenchWhole(t *testing.T) {
	shared := filepath.Join(examplesDir, sharedFromExamples)
	for _, f := range exampleFiles {
		if !strings.HasPrefix(f.name, "vllm_bench_") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(shared, f.src))
		if err != nil {
			t.Logf("%s: not checked: %v", f.name, err)
			continue
		}
		if whole, err := cutBench(1 << 30)(src); err != nil || !bytes.Equal(whole, src) {
			t.Errorf("%s: cutBench without a cut does not give back %s (%d bytes against %d, %v)", f.name, f.src, len(whole), len(src), err)
		}
	}
}

// TestRunWithoutShared: in a clone alone, the command writes the files it
// generates, leaves the copies and cuts alone and names them; a shared
// directory that lacks a source is an error naming the file.
func TestRunWithoutShared(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	if err := run(dir, filepath.Join(dir, "absent"), &log); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range exampleFiles {
		got, err := os.ReadFile(filepath.Join(dir, f.name))
		switch {
		case f.src != "":
			left = append(left, f.name)
			if err == nil {
				t.Errorf("%s written without its source", f.name)
			}
		case err != nil:
			t.Errorf("%s not written: %v", f.name, err)
		default:
			if want, err := os.ReadFile(filepath.Join(examplesDir, f.name)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes written, not the committed file's (%v)", f.name, len(got), err)
			}
		}
	}
	if want := "are left as they are (" + strings.Join(left, ", ") + ")"; len(left) == 0 || !strings.Contains(log.String(), want) {
		t.Errorf("log %q does not name the files left: %s", log.String(), want)
	}
	empty := t.TempDir()
	err := run(dir, empty, &log)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), exampleFiles[0].name+": ") {
		t.Errorf("a shared directory without the sources: %v", err)
	}
}
