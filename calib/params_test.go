package calib

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufrag/gpufrag/sim"
)

// TestTransformRoundTrip: every coordinate maps into the parameter's
// range, and a value inside the range comes back from its coordinate.
func TestTransformRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &paramTable[rapid.IntRange(0, len(paramTable)-1).Draw(t, "param")]
		x := rapid.Float64Range(-100, 100).Draw(t, "x")
		v := p.toValue(x)
		if !(v >= p.lo && v <= p.hi) {
			t.Fatalf("%s: toValue(%v) = %v, outside [%v, %v]", p.name, x, v, p.lo, p.hi)
		}
		s := rapid.Float64Range(0.01, 0.99).Draw(t, "share")
		in := p.lo + s*(p.hi-p.lo)
		if p.log {
			in = math.Exp(math.Log(p.lo) + s*(math.Log(p.hi)-math.Log(p.lo)))
		}
		c, clamped := p.toCoord(in)
		if clamped {
			t.Fatalf("%s: %v inside the range was clamped", p.name, in)
		}
		if back := p.toValue(c); math.Abs(back-in) > 1e-9*in {
			t.Fatalf("%s: %v → %v → %v", p.name, in, c, back)
		}
	})
}

// TestTransformClamps: a start on or past a bound (0 ns, an efficiency of
// exactly 1) gets a finite coordinate inside the range.
func TestTransformClamps(t *testing.T) {
	for _, p := range paramTable {
		for _, v := range []float64{0, -1, p.lo, p.hi, p.hi * 10, math.NaN()} {
			c, clamped := p.toCoord(v)
			if !clamped || math.IsNaN(c) || math.IsInf(c, 0) {
				t.Errorf("%s: toCoord(%v) = %v, clamped %v", p.name, v, c, clamped)
			}
			if got := p.toValue(c); !(got > p.lo && got < p.hi) {
				t.Errorf("%s: toCoord(%v) maps to %v, not inside (%v, %v)", p.name, v, got, p.lo, p.hi)
			}
		}
	}
}

// TestRound: four significant digits, whole ns for times, within range.
func TestRound(t *testing.T) {
	step := &paramTable[slices.IndexFunc(paramTable, func(p param) bool { return p.name == "overhead.step_ns" })]
	eff := &paramTable[slices.IndexFunc(paramTable, func(p param) bool { return p.name == "attention.kv_bw_eff" })]
	tests := []struct {
		p    *param
		v    float64
		want float64
	}{
		{step, 9_335_123.7, 9_335_000},
		{step, 1234.5678, 1235},
		{eff, 0.823749, 0.8237},
		{eff, 0.99999, 1},      // rounds to the bound, which is in range
		{eff, 0.0100001, 0.02}, // below the range: the bound
	}
	for _, tt := range tests {
		if got := tt.p.round(tt.v); got != tt.want {
			t.Errorf("%s: round(%v) = %v, want %v", tt.p.name, tt.v, got, tt.want)
		}
	}
}

// TestParamsSetGet: every parameter's setter writes the field its getter
// reads and a profile with any in-range values validates.
func TestParamsSetGet(t *testing.T) {
	start, err := sim.DefaultProfile("h100-80g", sim.EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		p := start.Clone()
		for i := range paramTable {
			pm := &paramTable[i]
			v := pm.toValue(rapid.Float64Range(-10, 10).Draw(t, pm.name))
			pm.set(p, v)
			got := pm.get(p)
			if pm.integer {
				v = math.Round(v)
			}
			if got != v {
				t.Fatalf("%s: set %v, got %v", pm.name, v, got)
			}
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("in-range parameters give an invalid profile: %v", err)
		}
	})
}

func TestCheckParams(t *testing.T) {
	got, err := CheckParams([]string{" linear.weight_bw_eff", "overhead.step_ns"})
	if err != nil || len(got) != 2 || got[0] != "overhead.step_ns" || got[1] != "linear.weight_bw_eff" {
		t.Errorf("CheckParams = %v, %v; want table order", got, err)
	}
	if _, err := CheckParams([]string{"peak.mem_bytes_per_s"}); !errors.Is(err, ErrSetup) {
		t.Errorf("a datasheet peak was accepted: %v", err)
	}
	// The old name of the decode kernel's per-sequence cost says what it became.
	if _, err := CheckParams([]string{"attention.kv_half_context"}); !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "attention.kv_seq_ns") {
		t.Errorf("the renamed parameter: %v", err)
	}
}

// TestStdErrs: orthogonal columns have standard errors 1 ÷ their norms;
// parallel columns are singular.
func TestStdErrs(t *testing.T) {
	se, ok := stdErrs([][]float64{{2, 0, 0}, {0, 4, 0}})
	if !ok || math.Abs(se[0]-0.5) > 1e-12 || math.Abs(se[1]-0.25) > 1e-12 {
		t.Errorf("orthogonal: %v %v", se, ok)
	}
	if _, ok := stdErrs([][]float64{{1, 2, 3}, {2, 4, 6}}); ok {
		t.Error("parallel columns were not singular")
	}
	// Nearly parallel columns (cosine 0.995) inflate both errors 10-fold:
	// 1 ÷ sqrt(1 − 0.995²) ≈ 10.
	se, ok = stdErrs([][]float64{{1, 0}, {0.995, math.Sqrt(1 - 0.995*0.995)}})
	if !ok || se[0] < 9.9 || se[0] > 10.1 {
		t.Errorf("nearly parallel: %v %v", se, ok)
	}
}

// TestHostParam: the host's speed moves the step's fixed cost and scales
// the per-sequence and per-token costs with it (the joint model's split
// is kept), within their ranges; a cost the engine lacks stays zero; it
// is a calibration's parameter, not one of the joint model's.
func TestHostParam(t *testing.T) {
	host := &paramTable[slices.IndexFunc(paramTable, func(p param) bool { return p.name == hostParam })]
	p := &sim.Profile{Overhead: sim.OverheadTerm{StepNs: 2_000_000, PerSeqNs: 40_000, PerTokenNs: 0, RequestNs: 9_000_000}}
	host.set(p, 5_000_000)
	if got := host.get(p); got != 5_000_000 {
		t.Errorf("get after set 5 ms = %v", got)
	}
	if p.Overhead.PerSeqNs != 100_000 || p.Overhead.PerTokenNs != 0 || p.Overhead.RequestNs != 9_000_000 {
		t.Errorf("per_seq_ns %d (want 100000, scaled 2.5x), per_token_ns %d (want 0), request_ns %d (want 9000000, not host time)",
			p.Overhead.PerSeqNs, p.Overhead.PerTokenNs, p.Overhead.RequestNs)
	}
	p.Overhead.PerTokenNs = 60_000 // 20x: 1.2 ms
	host.set(p, maxStepNs)
	if p.Overhead.PerSeqNs != maxSmallNs || p.Overhead.PerTokenNs != maxSmallNs {
		t.Errorf("scaled past the range: per_seq_ns %d, per_token_ns %d; want %v", p.Overhead.PerSeqNs, p.Overhead.PerTokenNs, maxSmallNs)
	}
	if slices.Contains(JointParamNames(), hostParam) {
		t.Errorf("the joint model lists %s, which only moves its own overheads together", hostParam)
	}
}
