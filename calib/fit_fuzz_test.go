package calib

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// FuzzCase feeds any bytes through what calibrate does with a benchmark
// file before it simulates: ReadFile, what the file states of the setup
// (StatedSetup: refused with ErrSetup, or values in the flags' canonical
// syntax), each run's case (trace, seed variants, measured metrics, quirk
// exclusions) and the prefill check.
// A file is refused with ErrSetup or workload's error, never a panic, and
// every metric a case keeps is a finite number. Seeds: workload's
// benchmark fixtures.
func FuzzCase(f *testing.F) {
	paths, _ := filepath.Glob(benchFixture("*"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		f.Fatal(err)
	}
	shape := sim.NewShape(m, 1, model.BF16)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ReadFile(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return // workload.ReadBench's errors, held by its own fuzz target
		}
		stated, _, err := StatedSetup([]*File{file})
		if err != nil && !errors.Is(err, ErrSetup) {
			t.Fatalf("StatedSetup: %v does not wrap ErrSetup", err)
		}
		for _, st := range stated {
			if v, ok, err := CanonicalSetting(st.Flag, st.Value); err != nil || !ok || v != st.Value {
				t.Fatalf("stated %+v: not canonical (%q, %v, %v)", st, v, ok, err)
			}
		}
		for _, run := range file.Runs {
			if len(run.Requests) > 10_000 {
				continue // bounded by workload; the variants would be slow here
			}
			c, err := newCase(file, run, false, 2)
			if err != nil {
				if !errors.Is(err, ErrSetup) {
					t.Fatalf("newCase: %v does not wrap ErrSetup", err)
				}
				continue
			}
			for m, ms := range c.measured {
				if ms.ok && (math.IsNaN(ms.v) || math.IsInf(ms.v, 0)) {
					t.Fatalf("%v measured %v", Metric(m), ms.v)
				}
			}
			c.checkPrefill(shape, 989e12)
			if len(c.Variants) == 0 || len(c.Variants[0]) != len(c.Requests) {
				t.Fatalf("%d variants", len(c.Variants))
			}
		}
	})
}
