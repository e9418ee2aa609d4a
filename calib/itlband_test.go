package calib

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// The embedded ITL p99 runs decode, and the band takes the split
// conformal ranks of their errors: with 23 runs and q = 0.8, the 2nd
// smallest and the 22nd smallest.
func TestITLP99Band(t *testing.T) {
	runs, err := ReadITLP99(itlP99YAML)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]float64, len(runs))
	for i, r := range runs {
		errs[i] = r.Error
	}
	slices.Sort(errs)
	n := len(errs)
	j := int(math.Floor(float64(n+1) * 0.1))
	k := int(math.Ceil(float64(n+1)*0.9 - 1e-9))
	b, ok, err := ITLP99Band(0.2)
	if err != nil || !ok {
		t.Fatalf("band: %v %v", ok, err)
	}
	if b.N != n || b.ErrLow != errs[j-1] || b.ErrHigh != errs[k-1] || b.Quantile != BandQuantile || !strings.Contains(b.Basis, "measured ITL p99s") {
		t.Fatalf("band %+v; errors %v", b, errs)
	}
	// Around 0.2 s: a measured p99 from 0.2 ÷ (1 + ErrHigh) to 0.2 ÷ (1 + ErrLow).
	if math.Abs(b.Lower-0.2/(1+b.ErrHigh)) > 1e-12 || math.Abs(b.Upper-0.2/(1+b.ErrLow)) > 1e-12 || !(b.Upper > 0.2) {
		t.Errorf("bounds %v to %v", b.Lower, b.Upper)
	}
	if _, ok, _ := ITLP99Band(0); ok {
		t.Error("a zero p99 has a band")
	}
}

// Bad files are refused with the run named.
func TestReadITLP99Bad(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"runs: []", "no runs"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: 0.5}", "run 1 (r1): error 0.5, but its figures give -0.5000"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 0, measured_ms: 20, error: -1}", "want positive"},
		{"runs:\n  - {source: a, run: r1, extra: 1}", "field extra not found"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}\n" +
			"  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}", "run 2 (r1): named twice"},
		{"runs:\n  - {source: \"\", run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}", "must be set"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}\n---\nruns: []", "one YAML document"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: .nan}", "error NaN"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}", "run 1 (r1): trace and args must be set"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [], simulated_ms: 10, measured_ms: 20, error: -0.5}", "run 1 (r1): trace and args must be set"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--trace, u.json], simulated_ms: 10, measured_ms: 20, error: -0.5}", "args give --trace, which the replay sets itself"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--trace=u.json], simulated_ms: 10, measured_ms: 20, error: -0.5}", "args give --trace"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--kv, paged:32], simulated_ms: 10, measured_ms: 20, error: -0.5}", "args give --kv"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [--json], simulated_ms: 10, measured_ms: 20, error: -0.5}", "args give --json"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: t.json, args: [\"\"], simulated_ms: 10, measured_ms: 20, error: -0.5}", "an empty argument"},
		{"runs:\n  - {source: a, run: r1, gpu: g, engine_version: \"1\", trace: /abs/t.json, args: [--tp, \"1\"], simulated_ms: 10, measured_ms: 20, error: -0.5}", "trace \"/abs/t.json\": want a slash-separated path"},
	} {
		if _, err := ReadITLP99([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// FuzzReadITLP99: any document is decoded or refused, never a panic, and
// what is accepted holds the checks (positive figures, errors that are
// theirs).
func FuzzReadITLP99(f *testing.F) {
	f.Add(itlP99YAML)
	f.Add([]byte("runs: []\n"))
	f.Add([]byte("runs:\n  - {source: a, run: r, gpu: g, engine_version: \"1\", trace: t.json, args: [--tp, \"1\"], simulated_ms: .nan, measured_ms: 1, error: 0}\n"))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := ReadITLP99(data)
		if err != nil {
			return
		}
		for _, r := range runs {
			if !(r.SimulatedMs > 0) || !(r.MeasuredMs > 0) || !(math.Abs(r.Error-(r.SimulatedMs-r.MeasuredMs)/r.MeasuredMs) <= 1e-3) {
				t.Fatalf("accepted %+v", r)
			}
		}
	})
}
