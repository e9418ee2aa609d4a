// The profile parameters a calibration may fit, their valid ranges and the
// transform that keeps an unconstrained optimiser inside them. See fit.go
// for how the fitted ones are chosen.

package calib

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/sim"
)

// param is one fittable parameter of a sim.Profile. The datasheet peaks
// (Profile.Peak) and the engine's CUDA-graph sizes are never fitted: they
// are facts about the GPU and the engine, not efficiencies.
type param struct {
	name    string  // the YAML path, as sim.Profile.Validate names it
	lo, hi  float64 // the range the fit keeps it in (see paramTable)
	log     bool    // moves on a log scale (times, token counts), else linearly (efficiencies)
	integer bool    // an int64 field: rounded to whole ns
	needsTP bool    // only matters at tensor parallelism above 1
	// needsFP8: only matters with FP8 weights on a GPU with an FP8 peak.
	needsFP8 bool
	// calibrateOnly: a parameter of a calibration's profile that is not
	// one of the joint model's own (it moves several of them together).
	calibrateOnly bool
	// growsWithBatch: its cost grows with the sequences (or tokens) a
	// step holds, so a light load cannot see it (load.go).
	growsWithBatch bool
	get            func(*sim.Profile) float64
	set            func(*sim.Profile, float64)
}

// Ranges: efficiencies in [0.02, 1] (below 2% of a peak no kernel of a
// serving engine runs; 1 is the peak itself); fixed times in [100 ns, 100
// ms] a step (a CUDA launch is about 5 µs, and a step overhead above 100
// ms is a stalled engine, not a cost to model); per-sequence and per-layer
// costs in [10 ns, 1 ms]; n½ in [1, 8192] tokens (the largest default
// step budget: beyond it no step ever reaches half the efficiency).
const (
	minEff, maxEff         = 0.02, 1.0
	minStepNs, maxStepNs   = 100.0, 100e6
	minSmallNs, maxSmallNs = 10.0, 1e6
	minHalfTok, maxHalfTok = 1.0, 8192.0
	minCallNs, maxCallNs   = 100.0, 1e6 // one all-reduce call: NCCL's small-message latency is 5-25 µs
	// The decode kernel's cost a sequence, KV head and layer: 0.1 ns (a
	// hundredth of the kernel table's 11.4, below TensorRT-LLM's 2.5) to 1 µs.
	minSeqHeadNs, maxSeqHeadNs = 0.1, 1000.0
	sigDigits                  = 4    // fitted values are written with this many significant digits
	boundMargin                = 1e-3 // a start on a bound is moved this share of the range inside it
	transformSaturationLimit   = 30.0 // |x| beyond this is σ(x) = 0 or 1 in float64: clamped
)

// paramTable lists the fittable parameters in the order a calibration
// prefers them when two explain the same change of the metrics (fit.go,
// identify): the overheads first (the least known, and the engine's own),
// then the efficiencies that data at several batch sizes and prompt
// lengths tell apart, then the ones a single model cannot tell from an
// overhead (weight reads are a fixed cost per decode step for one model).
var paramTable = []param{
	{name: hostParam, lo: minStepNs, hi: maxStepNs, log: true, integer: true, calibrateOnly: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.StepNs) },
		set: setHost},
	{name: "overhead.step_ns", lo: minStepNs, hi: maxStepNs, log: true, integer: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.StepNs) },
		set: func(p *sim.Profile, v float64) { p.Overhead.StepNs = int64(math.Round(v)) }},
	{name: "overhead.per_seq_ns", growsWithBatch: true, lo: minSmallNs, hi: maxSmallNs, log: true, integer: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.PerSeqNs) },
		set: func(p *sim.Profile, v float64) { p.Overhead.PerSeqNs = int64(math.Round(v)) }},
	{name: "overhead.per_token_ns", growsWithBatch: true, lo: minSmallNs, hi: maxSmallNs, log: true, integer: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.PerTokenNs) },
		set: func(p *sim.Profile, v float64) { p.Overhead.PerTokenNs = int64(math.Round(v)) }},
	{name: "overhead.request_ns", lo: minStepNs, hi: maxStepNs, log: true, integer: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.RequestNs) },
		set: func(p *sim.Profile, v float64) { p.Overhead.RequestNs = int64(math.Round(v)) }},
	{name: "attention.kv_bw_eff", growsWithBatch: true, lo: minEff, hi: maxEff,
		get: func(p *sim.Profile) float64 { return p.Attention.KVBWEff },
		set: func(p *sim.Profile, v float64) { p.Attention.KVBWEff = v }},
	{name: "attention.kv_seq_ns", growsWithBatch: true, lo: minSeqHeadNs, hi: maxSeqHeadNs, log: true,
		get: func(p *sim.Profile) float64 { return p.Attention.KVSeqNs },
		set: func(p *sim.Profile, v float64) { p.Attention.KVSeqNs = v }},
	{name: "linear.compute_eff_max", lo: minEff, hi: maxEff,
		get: func(p *sim.Profile) float64 { return p.Linear.ComputeEffMax },
		set: func(p *sim.Profile, v float64) { p.Linear.ComputeEffMax = v }},
	{name: "linear.fp8_compute_eff_max", lo: minEff, hi: maxEff, needsFP8: true,
		get: func(p *sim.Profile) float64 { return p.Linear.FP8ComputeEffMax },
		set: func(p *sim.Profile, v float64) { p.Linear.FP8ComputeEffMax = v }},
	{name: "attention.prefill_compute_eff", lo: minEff, hi: maxEff,
		get: func(p *sim.Profile) float64 { return p.Attention.PrefillComputeEff },
		set: func(p *sim.Profile, v float64) { p.Attention.PrefillComputeEff = v }},
	{name: "linear.compute_half_tokens", lo: minHalfTok, hi: maxHalfTok, log: true,
		get: func(p *sim.Profile) float64 { return p.Linear.ComputeHalfTokens },
		set: func(p *sim.Profile, v float64) { p.Linear.ComputeHalfTokens = v }},
	{name: "linear.blend_exponent", growsWithBatch: true, lo: 1, hi: 64, log: true,
		get: func(p *sim.Profile) float64 { return p.Linear.BlendExponent },
		set: func(p *sim.Profile, v float64) { p.Linear.BlendExponent = v }},
	{name: "linear.weight_bw_eff", lo: minEff, hi: maxEff,
		get: func(p *sim.Profile) float64 { return p.Linear.WeightBWEff },
		set: func(p *sim.Profile, v float64) { p.Linear.WeightBWEff = v }},
	{name: "overhead.eager_per_layer_ns", lo: minSmallNs, hi: maxSmallNs, log: true, integer: true,
		get: func(p *sim.Profile) float64 { return float64(p.Overhead.EagerPerLayerNs) },
		set: func(p *sim.Profile, v float64) { p.Overhead.EagerPerLayerNs = int64(math.Round(v)) }},
	{name: "all_reduce.latency_ns", lo: minCallNs, hi: maxCallNs, log: true, integer: true, needsTP: true,
		get: func(p *sim.Profile) float64 { return float64(p.AllReduce.LatencyNs) },
		set: func(p *sim.Profile, v float64) { p.AllReduce.LatencyNs = int64(math.Round(v)) }},
	{name: "all_reduce.bw_eff", lo: minEff, hi: maxEff, needsTP: true,
		get: func(p *sim.Profile) float64 { return p.AllReduce.BWEff },
		set: func(p *sim.Profile, v float64) { p.AllReduce.BWEff = v }},
}

// hostParam is the host's speed: the engine's CPU costs of a step (its
// fixed cost, per sequence and per streamed token) scaled together, read
// and set as the step's fixed cost. See setHost.
const hostParam = "overhead.host_step_ns"

// setHost sets p's step overhead to v and scales its per-sequence and
// per-token costs by the same ratio: the joint model's split of the
// engine's host time between a step's fixed part and the parts that grow
// with the batch is kept (it was fitted on many sources and loads), and
// only the host's speed is the setup's own.
func setHost(p *sim.Profile, v float64) {
	o := &p.Overhead
	r := 1.0
	if o.StepNs > 0 {
		r = v / float64(o.StepNs)
	}
	o.StepNs = int64(math.Round(v))
	o.PerSeqNs = scaleSmall(o.PerSeqNs, r)
	o.PerTokenNs = scaleSmall(o.PerTokenNs, r)
}

// scaleSmall scales a per-sequence or per-token cost by r within their
// range (a zero cost, one the engine does not have, stays zero).
func scaleSmall(ns int64, r float64) int64 {
	if ns == 0 {
		return 0
	}
	return int64(math.Round(math.Max(minSmallNs, math.Min(maxSmallNs, float64(ns)*r))))
}

// ParamNames returns the names of the parameters a calibration may fit,
// in its order of preference.
func ParamNames() []string {
	names := make([]string, len(paramTable))
	for i, p := range paramTable {
		names[i] = p.name
	}
	return names
}

// CheckParams checks parameter names (for a command line's --params) and
// returns them in ParamNames' order.
func CheckParams(names []string) ([]string, error) {
	idx, err := lookupParams(names)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(idx))
	for k, j := range idx {
		out[k] = paramTable[j].name
	}
	return out, nil
}

// lookupParams returns the indexes in paramTable of names, in table order,
// or an error naming the first unknown one.
func lookupParams(names []string) ([]int, error) {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		found := false
		for _, p := range paramTable {
			if p.name == n {
				found = true
			}
		}
		if !found && n == "attention.kv_half_context" {
			return nil, fmt.Errorf("%w: parameter %q is now attention.kv_seq_ns, the decode kernel's cost a sequence, KV head and layer in ns (issue 24)", ErrSetup, n)
		}
		if !found {
			return nil, fmt.Errorf("%w: parameter %q: want one of %s", ErrSetup, clipLabel(n), strings.Join(ParamNames(), ", "))
		}
		want[n] = true
	}
	var idx []int
	for i, p := range paramTable {
		if want[p.name] {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// sigmoid maps the real line onto (0, 1).
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// toValue maps an optimiser coordinate to the parameter's value in its
// range: lo + (hi − lo)·σ(x), on a log scale for log parameters. Every x
// gives a valid value, so Nelder–Mead needs no constraints.
func (p *param) toValue(x float64) float64 {
	x = math.Max(-transformSaturationLimit, math.Min(transformSaturationLimit, x))
	s := sigmoid(x)
	if p.log {
		return math.Exp(math.Log(p.lo) + (math.Log(p.hi)-math.Log(p.lo))*s)
	}
	return p.lo + (p.hi-p.lo)*s
}

// toCoord is the inverse of toValue. A value on or outside the range (a
// hand-written start of 0 ns, an efficiency of exactly 1) is moved
// boundMargin of the range inside it first; clamped reports that.
func (p *param) toCoord(v float64) (x float64, clamped bool) {
	lo, hi := p.lo, p.hi
	if p.log {
		lo, hi = math.Log(lo), math.Log(hi)
		if v > 0 {
			v = math.Log(v)
		} else {
			v = math.Inf(-1)
		}
	}
	m := boundMargin * (hi - lo)
	if v < lo+m || v > hi-m || math.IsNaN(v) {
		clamped = true
		v = math.Max(lo+m, math.Min(hi-m, v))
		if math.IsNaN(v) {
			v = (lo + hi) / 2
		}
	}
	s := (v - lo) / (hi - lo)
	return math.Log(s / (1 - s)), clamped
}

// round keeps sigDigits significant digits (whole ns for integer
// parameters), within the parameter's range.
func (p *param) round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	// strconv's shortest decimal of sigDigits digits, so the YAML shows
	// 0.8237, not 0.82370000000000004.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sigDigits, 64), 64)
	if p.integer {
		r = math.Round(r)
	}
	return math.Max(p.lo, math.Min(p.hi, r))
}
