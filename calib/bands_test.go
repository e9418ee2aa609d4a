package calib

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// bandsFixture is a residuals file with known errors e = 0, 0.01 ..
// 0.24: sources a, b and d fitted on gpu g2 (light load), a on g1 (heavy),
// never-fitted c on g0 (heavy TTFT, single TPOT, and three single TTFT).
func bandsFixture() ResidualsFile {
	var rs []Residual
	add := func(src, gpu, metric string, mb, held float64, gpuOut, roof *float64, fitted bool) {
		rs = append(rs, Residual{Figure: fmt.Sprintf("f%d", len(rs)), Source: src, Use: "fit", GPU: gpu, Metric: metric,
			MeanBatch: mb, HeldOut: held, GPUOut: gpuOut, Roofline: roof, Fitted: fitted})
	}
	p := func(x float64) *float64 { return &x }
	for i := range 25 {
		e := float64(i) / 100
		add("a", "g2", "ttft_median", 8, e, p(e+1), p(-e), true)
		add("b", "g2", "ttft_median", 8, -e, p(e+1), p(-e), true)
		add("d", "g2", "ttft_median", 8, e, p(e+1), p(-e), true)
		add("a", "g1", "ttft_median", 40, e+5, p(e+3), p(-e), true)
		add("c", "g0", "ttft_median", 40, e+7, nil, p(-e), false)
		add("c", "g0", "tpot_median", 1, e+9, nil, nil, false)
	}
	for _, e := range []float64{-3, 0, 20} {
		add("c", "g0", "ttft_median", 1, e, nil, nil, false)
	}
	add("c", "g0", "kv_cache_slots", 0, 100, nil, nil, false) // not a band metric
	add("c", "g0", "ttft_median", 8, 100, nil, nil, false)
	rs[len(rs)-1].Use = "cross-check" // never in a band
	return ResidualsFile{Residuals: rs}
}

func TestBandSelection(t *testing.T) {
	b := NewBands(bandsFixture())
	// The ranks of an 80% band of n errors: ⌊(n+1)/10⌋ and ⌈(n+1)·0.9⌉
	// (n 75: the 7th and 69th; 50: 5th and 46th; 25: 2nd and 24th).
	cases := []struct {
		name     string
		setup    BandSetup
		metric   BandMetric
		batch    float64
		lo, hi   float64
		n        int
		fallback bool
		basis    string
	}{
		// g2 has three sources: each of a's, b's and d's figures was held
		// out by a fit with two others on g2.
		{"joint, two or more sources, light", BandSetup{Model: sim.StepTimeJoint, GPU: "g2"}, BandTTFT, 8, -0.18, 0.21, 75, false,
			"75 held-out TTFT figures of the joint model on GPUs fitted to two or more other sources, at a mean batch of 1.5 to 16"},
		// g1 has one source (a), whose own figures were judged with g1
		// unseen: no figure at one source, none seen at heavy load, so
		// every seen figure at any load (g2's).
		{"joint, one source, heavy: fallback", BandSetup{Model: sim.StepTimeJoint, GPU: "g1"}, BandTTFT, 40, -0.18, 0.21, 75, true,
			"on GPUs seen in the fit, at any load (fallback: 0 on GPUs fitted to one other source at a mean batch above 16 are fewer than 20)"},
		// an unseen GPU at heavy load: a's on g1 (5..5.24) and c's (7..7.24).
		{"joint, unseen GPU, heavy", BandSetup{Model: sim.StepTimeJoint, GPU: "gx"}, BandTTFT, 40, 5.04, 7.20, 50, false,
			"on GPUs the fit never saw, at a mean batch above 16"},
		// at light load: g2's figures judged by the fit without g2 (1..1.24).
		{"joint, unseen GPU, light: the GPU-out errors", BandSetup{Model: sim.StepTimeJoint, GPU: "gx"}, BandTTFT, 4, 1.02, 1.22, 75, false,
			"at a mean batch of 1.5 to 16"},
		// three figures at single load: too few; every unseen one, widened
		// to span the three (−3 and 20).
		{"joint, unseen GPU, single: fallback widened", BandSetup{Model: sim.StepTimeJoint, GPU: "g0"}, BandTTFT, 1, -3, 20, 128, true,
			"at any load (fallback: 3 on GPUs the fit never saw at a mean batch up to 1.5 are fewer than 20; widened to span them)"},
		{"roofline, light", BandSetup{Model: sim.StepTimeRoofline, GPU: "g2"}, BandTTFT, 8, -0.22, -0.02, 75, false,
			"held-out TTFT figures of the roofline (never fitted) on any GPU, at a mean batch of 1.5 to 16"},
		{"roofline, heavy, whatever the GPU", BandSetup{Model: sim.StepTimeRoofline, GPU: "g2"}, BandTTFT, 100, -0.22, -0.02, 50, false,
			"at a mean batch above 16"},
		{"profile file: the joint band, a stand-in", BandSetup{Model: BandProfileFile, Profile: "my.yaml", GPU: "g2"}, BandTTFT, 8, -0.18, 0.21, 75, true,
			"stand-in: no held-out figures judge the profile my.yaml"},
		{"TPOT, unseen GPU, single", BandSetup{Model: sim.StepTimeJoint, GPU: "g0"}, BandTPOT, 1, 9.01, 9.23, 25, false, "25 held-out TPOT figures"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := b.Band(c.setup, c.metric, c.batch)
			if !ok {
				t.Fatal("no band")
			}
			if math.Abs(got.ErrLow-c.lo) > 1e-9 || math.Abs(got.ErrHigh-c.hi) > 1e-9 || got.N != c.n || got.Fallback != c.fallback ||
				got.Quantile != BandQuantile || !strings.Contains(got.Basis, c.basis) {
				t.Errorf("band %+v\nwant errors %.2f..%.2f, n %d, fallback %v, basis with %q", got, c.lo, c.hi, c.n, c.fallback, c.basis)
			}
		})
	}
	if _, ok := b.Band(BandSetup{Model: sim.StepTimeJoint, GPU: "g2"}, BandThroughput, 8); ok {
		t.Error("throughput: no figures, yet a band")
	}
	if got := b.Sources("g2"); len(got) != 3 {
		t.Errorf("g2's sources %v, want a, b, d", got)
	}
}

func TestCentralBand(t *testing.T) {
	e := make([]float64, 99)
	for i := range e {
		e[i] = float64(i + 1)
	}
	// n+1 = 100: the 10th and the 90th smallest.
	if lo, hi, ok := centralBand(e, 0.8); !ok || lo != 10 || hi != 90 {
		t.Errorf("99 errors: %v..%v %v, want 10..90", lo, hi, ok)
	}
	if _, _, ok := centralBand(e[:8], 0.8); ok {
		t.Error("8 errors give an 80% band: too few for its ranks")
	}
	if lo, hi, ok := centralBand(e[:9], 0.8); !ok || lo != 1 || hi != 9 {
		t.Errorf("9 errors: %v..%v %v, want the extremes", lo, hi, ok)
	}
}

func TestBandAround(t *testing.T) {
	b := sim.Band{ErrLow: -0.5, ErrHigh: 0.25}.Around(2)
	// measured = simulated / (1 + error): 2/1.25 .. 2/0.5
	if b.Lower != 1.6 || b.Upper != 4 || math.Abs(b.RelLower+0.2) > 1e-12 || b.RelUpper != 1 || !b.Contains(3) || b.Contains(4.1) {
		t.Errorf("%+v", b)
	}
	if u := (sim.Band{ErrLow: -1, ErrHigh: 0}).Around(2); u.Upper != 0 || !u.Contains(1e9) || u.Contains(1.9) {
		t.Errorf("an error of -1 leaves no upper bound: %+v", u)
	}
}

// TestBandCoverage checks that a band covers about its stated share of
// held-out figures it did not see: each figure of the embedded residuals
// is judged by the band of its own setup (step model, GPU class, load)
// built from the other sources' figures only, so that a source's errors
// never vouch for themselves. Over every figure of a step model, the
// share inside must be within 10 points of BandQuantile; a failure says
// the bands' pools or quantile no longer describe the errors (figures
// with the command in docs/calibrate.md, "Error bands").
func TestBandCoverage(t *testing.T) {
	f, err := EmbeddedResiduals()
	if err != nil {
		t.Fatal(err)
	}
	b := NewBands(f)
	for _, model := range []string{sim.StepTimeJoint, sim.StepTimeRoofline} {
		in, n := 0, 0
		for _, p := range b.points {
			if p.model != model {
				continue
			}
			band, ok := b.selectBand(p.model, p.gpu, p.load, p.metric, p.source)
			if !ok {
				continue
			}
			n++
			if band.ErrLow <= p.err && p.err <= band.ErrHigh {
				in++
			}
		}
		share := float64(in) / float64(n)
		t.Logf("%s: %d of %d held-out figures (%.1f%%) inside the band built without their source", model, in, n, 100*share)
		if n < 100 || math.Abs(share-BandQuantile) > 0.10 {
			t.Errorf("%s: %d of %d figures (%.1f%%) inside their %.0f%% band", model, in, n, 100*share, 100*BandQuantile)
		}
	}
}

// TestBandsDoc: docs/calibrate.md's table of bands is the one the
// embedded residuals give (go generate ./calib rewrites it).
func TestBandsDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", BandsDocPath))
	if err != nil {
		t.Fatal(err)
	}
	want, err := BandsDoc(doc, BandsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Errorf("%s: the table of bands is stale: go generate ./calib rewrites it", BandsDocPath)
	}
}

// TestBandPointsCurrent: the generated literal the commands read
// (BandPointsPath) holds exactly the points and sources of the embedded
// residuals; EmbeddedBands selects the same bands as NewBands of them.
func TestBandPointsCurrent(t *testing.T) {
	f, err := EmbeddedResiduals()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(BandPointsPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := BandPointsSource(f); !bytes.Equal(have, want) {
		t.Fatalf("%s is stale (calib/residuals.yaml changed); regenerate it with\n\tgo generate ./calib", BandPointsPath)
	}
	b, _ := EmbeddedBands()
	if nb := NewBands(f); !reflect.DeepEqual(b.points, nb.points) || !reflect.DeepEqual(b.sources, nb.sources) {
		t.Fatal("EmbeddedBands differs from NewBands(EmbeddedResiduals())")
	}
}
