// The error band of a simulated ITL p99, from measured p99s (calib/
// itl_p99.yaml, written by scripts/itl-check): the p99 of every gap
// between a request's tokens is no median, so the residuals of
// calib/residuals.yaml, which judge medians, do not bound it.

package calib

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/sim"
)

//go:embed itl_p99.yaml
var itlP99YAML []byte

// ITLP99Run is one run of calib/itl_p99.yaml: the joint model's ITL p99
// for a measured run, replayed as its client ran it, and the run's own.
type ITLP99Run struct {
	Source        string `yaml:"source"`
	Run           string `yaml:"run"`
	GPU           string `yaml:"gpu"`
	EngineVersion string `yaml:"engine_version"`
	// Trace and Args are what scripts/itl-check replayed the run with,
	// from the repository's root: gpufrag simulate --trace Trace --kv
	// paged:16 --alloc caching --json Args...
	Trace       string   `yaml:"trace"`
	Args        []string `yaml:"args"`
	SimulatedMs float64  `yaml:"simulated_ms"`
	MeasuredMs  float64  `yaml:"measured_ms"`
	// Error is (simulated − measured) ÷ measured.
	Error float64 `yaml:"error"`
}

// itlFixedFlags are the simulate flags every replay of a run sets itself
// (--trace from Trace); a run's Args may not give them.
var itlFixedFlags = []string{"--trace", "--kv", "--alloc", "--json"}

// ReadITLP99 decodes an itl_p99.yaml document strictly, checking that
// every run's error is its figures'.
func ReadITLP99(data []byte) ([]ITLP99Run, error) {
	var doc struct {
		Runs []ITLP99Run `yaml:"runs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("calib: itl_p99.yaml: %w", err)
	}
	var more any
	if err := dec.Decode(&more); err != io.EOF {
		return nil, fmt.Errorf("calib: itl_p99.yaml: want one YAML document")
	}
	seen := map[string]bool{}
	for i, r := range doc.Runs {
		if r.Source == "" || r.Run == "" || r.GPU == "" {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d: source, run and gpu must be set", i+1)
		}
		if r.Trace == "" || len(r.Args) == 0 {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): trace and args must be set (scripts/itl-check writes them)", i+1, r.Run)
		}
		if path.IsAbs(r.Trace) || strings.Contains(r.Trace, "\\") {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): trace %q: want a slash-separated path from the repository's root", i+1, r.Run, r.Trace)
		}
		for _, a := range r.Args {
			if a == "" {
				return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): an empty argument", i+1, r.Run)
			}
			for _, fixed := range itlFixedFlags {
				if a == fixed || strings.HasPrefix(a, fixed+"=") {
					return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): args give %s, which the replay sets itself", i+1, r.Run, fixed)
				}
			}
		}
		if seen[r.Run] {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): named twice", i+1, r.Run)
		}
		seen[r.Run] = true
		if !(r.SimulatedMs > 0) || !(r.MeasuredMs > 0) || math.IsInf(r.SimulatedMs, 0) || math.IsInf(r.MeasuredMs, 0) {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): want positive, finite milliseconds", i+1, r.Run)
		}
		if want := (r.SimulatedMs - r.MeasuredMs) / r.MeasuredMs; !(math.Abs(r.Error-want) <= 1e-3) {
			return nil, fmt.Errorf("calib: itl_p99.yaml: run %d (%s): error %v, but its figures give %.4f", i+1, r.Run, r.Error, want)
		}
	}
	if len(doc.Runs) == 0 {
		return nil, fmt.Errorf("calib: itl_p99.yaml: no runs")
	}
	return doc.Runs, nil
}

var itlP99Band = sync.OnceValues(func() (sim.Band, error) {
	runs, err := ReadITLP99(itlP99YAML)
	if err != nil {
		return sim.Band{}, err
	}
	errs := make([]float64, len(runs))
	var sources []string
	per := map[string]int{}
	for i, r := range runs {
		errs[i] = r.Error
		if !slices.Contains(sources, r.Source) {
			sources = append(sources, r.Source)
		}
		per[r.Source]++
	}
	top := sources[0]
	for _, s := range sources {
		if per[s] > per[top] {
			top = s
		}
	}
	slices.Sort(errs)
	lo, hi, ok := centralBand(errs, BandQuantile)
	if !ok {
		return sim.Band{}, fmt.Errorf("calib: itl_p99.yaml: %d runs are too few for a central %.0f%% band", len(errs), 100*BandQuantile)
	}
	return sim.Band{Quantile: BandQuantile, N: len(runs), ErrLow: lo, ErrHigh: hi,
		Basis: fmt.Sprintf("%d measured ITL p99s of %d sources against the joint model's (calib/itl_p99.yaml, scripts/itl-check), any GPU and load: "+
			"too few to class them, and %d are %s's, so a rough band", len(runs), len(sources), per[top], top)}, nil
})

// ITLP99Band returns the error band of an ITL p99 the joint model
// simulates, v seconds: the central BandQuantile of the errors of
// calib/itl_p99.yaml (split conformal ranks, as Bands takes them), for any
// GPU and load. ok is false for a non-positive v.
func ITLP99Band(v float64) (sim.Band, bool, error) {
	b, err := itlP99Band()
	if err != nil || !(v > 0) {
		return sim.Band{}, false, err
	}
	return b.Around(v), true, nil
}

// ITLP99Runs returns the runs of the embedded calib/itl_p99.yaml.
func ITLP99Runs() ([]ITLP99Run, error) { return ReadITLP99(itlP99YAML) }
