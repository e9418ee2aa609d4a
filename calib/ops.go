// Operator timings measured on a GPU (calib/device/steptime.py) and the fit
// of a profile's linear-layer and attention terms to them.

package calib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/sim"
)

// OpsSchema is the schema string of an operator-timings document.
const OpsSchema = "gpufrag-steptime-ops/1"

// MaxOpsBytes bounds an operator-timings file: the script writes about
// 6 KB (19 + 7 + 12 points); 1 MiB leaves room for denser sweeps.
const MaxOpsBytes = 1 << 20

// ErrBadOps means an operator-timings document that cannot be used; the
// message names the file and the field.
var ErrBadOps = errors.New("bad operator timings")

// Ops is what calib/device/steptime.py measured: one layer of a model's
// linear GEMMs at n tokens, causal prefill attention over L tokens, and
// decode attention of B sequences over C cached tokens, each in ms per
// layer.
type Ops struct {
	Schema              string         `json:"schema"`
	Date                string         `json:"date"`
	GPUName             string         `json:"gpu_name"`
	GPUMemoryBytes      int64          `json:"gpu_memory_bytes"`
	Torch               string         `json:"torch"`
	CUDA                string         `json:"cuda"`
	Reps                int            `json:"reps"`
	Timing              string         `json:"timing"` // "cuda-graph" (launches replayed as a graph) or "eager"; empty: eager (before the field existed)
	Seconds             float64        `json:"seconds"`
	Model               OpsModel       `json:"model"`
	LinearLayerBytes    float64        `json:"linear_layer_bytes"`
	LinearFLOPsPerToken float64        `json:"linear_flops_per_token"`
	Linear              []LinearPoint  `json:"linear"`
	PrefillAttention    []PrefillPoint `json:"prefill_attention"`
	DecodeAttention     []DecodePoint  `json:"decode_attention"`
	Skipped             []any          `json:"skipped"`
}

// OpsModel is the model shape the timings were taken on.
type OpsModel struct {
	Name         string `json:"name"`
	Hidden       int    `json:"hidden"`
	Heads        int    `json:"heads"`
	KVHeads      int    `json:"kv_heads"`
	HeadDim      int    `json:"head_dim"`
	Intermediate int    `json:"intermediate"`
	Layers       int    `json:"layers"`
	Vocab        int    `json:"vocab"`
	DType        string `json:"dtype"`
}

// LinearPoint is one layer's four GEMMs at Tokens rows.
type LinearPoint struct {
	Tokens     int     `json:"tokens"`
	MsPerLayer float64 `json:"ms_per_layer"`
}

// PrefillPoint is one layer's causal attention over a prompt of Tokens.
type PrefillPoint struct {
	Tokens     int     `json:"tokens"`
	MsPerLayer float64 `json:"ms_per_layer"`
}

// DecodePoint is one layer's attention of Batch sequences, one new token
// each, over Context cached tokens, reading KVBytes of K and V.
type DecodePoint struct {
	Batch      int     `json:"batch"`
	Context    int     `json:"context"`
	MsPerLayer float64 `json:"ms_per_layer"`
	KVBytes    float64 `json:"kv_bytes"`
}

// ReadOps reads and checks an operator-timings document; name is used in
// errors. Unknown fields are refused, so a renamed key is not silently
// dropped.
func ReadOps(r io.Reader, name string) (*Ops, error) {
	r, err := untrusted.Sniff(r, untrusted.CheckJSONStart) // random bytes fail in the first 4 KiB
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOps, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxOpsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOps, name, err)
	}
	if len(data) > MaxOpsBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes (the script writes about 6 KB)", ErrBadOps, name, MaxOpsBytes)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: %s: not a JSON object (write it with calib/device/steptime.py --out FILE)", ErrBadOps, name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var o Ops
	if err := dec.Decode(&o); err != nil {
		switch off, field := untrusted.LocateDecodeError(data, err); {
		case off >= 0 && field != "":
			return nil, fmt.Errorf("%w: %s: byte %d: field %q: %s (write it with calib/device/steptime.py --out FILE)", ErrBadOps, name, off, field, untrusted.DecodeMessage(err))
		case off >= 0:
			return nil, fmt.Errorf("%w: %s: byte %d: %s", ErrBadOps, name, off, untrusted.DecodeMessage(err))
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOps, name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: %s: more than one JSON document", ErrBadOps, name)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOps, name, err)
	}
	return &o, nil
}

// FP8 says the linear layers were timed with FP8 weights (W8A8): they
// fit Linear.FP8ComputeEffMax, at the FP8 peak, in place of ComputeEffMax.
func (o *Ops) FP8() bool { return o.Model.DType == "fp8" }

// opsLinearCeil is the peak and the compute efficiency p times o's linear
// layers at: FP8's for FP8 weights, BF16's otherwise.
func opsLinearCeil(o *Ops, p *sim.Profile) (peak, eff float64) {
	if o.FP8() {
		return p.Peak.FP8FLOPSPerS, p.Linear.FP8ComputeEffMax
	}
	return p.Peak.BF16FLOPSPerS, p.Linear.ComputeEffMax
}

// TimingMode is how the operators were timed: "cuda-graph" or "eager" (a
// document written before the field was is eager).
func (o *Ops) TimingMode() string {
	if o.Timing == "" {
		return "eager"
	}
	return o.Timing
}

// Bounds of a plausible document: far outside real figures, they catch a
// unit mix-up and keep every product finite.
const (
	maxOpsTokens = 1 << 20 // rows, prompt or context tokens of one point
	maxOpsMs     = 1e6     // ms: a layer's op takes microseconds to ms
	maxOpsPoints = 10_000
)

func (o *Ops) validate() error {
	m := o.Model
	switch {
	case o.Schema != OpsSchema:
		return fmt.Errorf("field \"schema\": %q, want %q", opsClip(o.Schema), OpsSchema)
	case m.DType != "bf16" && m.DType != "fp8":
		return fmt.Errorf("field \"model.dtype\": %q, want \"bf16\" or \"fp8\" (the linear layers' weights)", opsClip(m.DType))
	case o.Timing != "" && o.Timing != "eager" && o.Timing != "cuda-graph":
		return fmt.Errorf("field \"timing\": %q, want \"cuda-graph\" or \"eager\"", opsClip(o.Timing))
	case m.Hidden <= 0 || m.Heads <= 0 || m.KVHeads <= 0 || m.HeadDim <= 0 || m.Layers <= 0 || m.Heads%m.KVHeads != 0:
		return fmt.Errorf("field \"model\": hidden %d, heads %d, kv_heads %d, head_dim %d, layers %d: want positive sizes with heads a multiple of kv_heads",
			m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.Layers)
	case m.Hidden > maxOpsTokens || m.Heads > 4096 || m.HeadDim > 4096 || m.Layers > 4096:
		return fmt.Errorf("field \"model\": sizes beyond any model (hidden %d, heads %d, head_dim %d, layers %d)", m.Hidden, m.Heads, m.HeadDim, m.Layers)
	case !(o.LinearLayerBytes > 0) || o.LinearLayerBytes > 1e12:
		return fmt.Errorf("field \"linear_layer_bytes\": %g, want a positive size", o.LinearLayerBytes)
	case !(o.LinearFLOPsPerToken > 0) || o.LinearFLOPsPerToken > 1e13:
		return fmt.Errorf("field \"linear_flops_per_token\": %g, want a positive count", o.LinearFLOPsPerToken)
	case len(o.Linear) == 0:
		return errors.New("field \"linear\": no points")
	case len(o.Linear)+len(o.PrefillAttention)+len(o.DecodeAttention) > maxOpsPoints:
		return fmt.Errorf("more than %d points", maxOpsPoints)
	}
	ms := func(field string, i int, v float64) error {
		if !(v > 0) || v > maxOpsMs {
			return fmt.Errorf("field \"%s[%d].ms_per_layer\": %g, want 0 < ms ≤ %g", field, i, v, float64(maxOpsMs))
		}
		return nil
	}
	tok := func(field string, i int, what string, v int) error {
		if v <= 0 || v > maxOpsTokens {
			return fmt.Errorf("field \"%s[%d].%s\": %d, want 1..%d", field, i, what, v, maxOpsTokens)
		}
		return nil
	}
	for i, p := range o.Linear {
		if err := errors.Join(tok("linear", i, "tokens", p.Tokens), ms("linear", i, p.MsPerLayer)); err != nil {
			return err
		}
	}
	for i, p := range o.PrefillAttention {
		if err := errors.Join(tok("prefill_attention", i, "tokens", p.Tokens), ms("prefill_attention", i, p.MsPerLayer)); err != nil {
			return err
		}
	}
	for i, p := range o.DecodeAttention {
		if err := errors.Join(tok("decode_attention", i, "batch", p.Batch), tok("decode_attention", i, "context", p.Context),
			ms("decode_attention", i, p.MsPerLayer)); err != nil {
			return err
		}
		if !(p.KVBytes > 0) || p.KVBytes > 1e13 {
			return fmt.Errorf("field \"decode_attention[%d].kv_bytes\": %g, want a positive size", i, p.KVBytes)
		}
	}
	return nil
}

// opsClip cuts an echoed value to 64 bytes.
func opsClip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + fmt.Sprintf("… (%d bytes)", len(s))
}

// OpsFit is a profile's linear-layer and attention terms fitted to
// operator timings, with every point's measured and modelled time under
// the starting profile and under the fitted one.
type OpsFit struct {
	Start, Fitted sim.Profile `json:"-"` // the whole profiles: WriteYAML prints Fitted
	GPUName       string      `json:"gpu_name"`
	// Timing is how the operators were timed: "cuda-graph", or "eager"
	// (Ops.Timing, empty read as eager), whose small ops include Python's
	// launch latency.
	Timing string `json:"timing"`
	// FP8 says the linear layers were timed with FP8 weights: the fit moved
	// Linear.FP8ComputeEffMax, not ComputeEffMax.
	FP8 bool `json:"fp8"`
	// The fitted terms, before and after.
	Linear    OpsLinear    `json:"linear"`
	Attention OpsAttention `json:"attention"`
	Points    []OpsPoint   `json:"points"`
	// Median and largest |relative error| of the points, before and after.
	MedianBefore float64 `json:"median_error_before"`
	MaxBefore    float64 `json:"max_error_before"`
	MedianAfter  float64 `json:"median_error_after"`
	MaxAfter     float64 `json:"max_error_after"`
}

// OpsLinear is the linear term before and after the fit.
type OpsLinear struct {
	ComputeEffMax     [2]float64 `json:"compute_eff_max"` // [before, after]
	FP8ComputeEffMax  [2]float64 `json:"fp8_compute_eff_max"`
	ComputeHalfTokens [2]float64 `json:"compute_half_tokens"`
	WeightBWEff       [2]float64 `json:"weight_bw_eff"`
	BlendExponent     [2]float64 `json:"blend_exponent"`
}

// OpsAttention is the attention term before and after the fit.
type OpsAttention struct {
	PrefillComputeEff [2]float64 `json:"prefill_compute_eff"` // [before, after]
	KVBWEff           [2]float64 `json:"kv_bw_eff"`
}

// OpsPoint is one timed point.
type OpsPoint struct {
	Op          string  `json:"op"`   // "linear", "prefill_attention", "decode_attention"
	What        string  `json:"what"` // "n=256", "L=2048", "B=32 C=8192"
	MeasuredMs  float64 `json:"measured_ms"`
	BeforeMs    float64 `json:"before_ms"`
	AfterMs     float64 `json:"after_ms"`
	BeforeError float64 `json:"before_error"` // (model − measured) ÷ measured
	AfterError  float64 `json:"after_error"`
}

// Points the fits use. The weight-read efficiency comes from the GEMMs of
// at most weightBoundTokens rows (far below any GPU's ridge point, ~150-300
// rows, so they are weight-bound); compute efficiency and n½ from those of
// at least computeBoundTokens rows (far above it). Decode attention with at
// least minKVBytes of K and V per layer is bandwidth-bound (smaller reads
// are dominated by launch latency, which the overheads hold).
const (
	weightBoundTokens  = 8
	computeBoundTokens = 1024
	minKVBytes         = 64 << 20
)

// FitOps fits start's linear and attention terms to o: weight_bw_eff from
// the weight-bound GEMMs, compute_eff_max and compute_half_tokens by least
// squares on the compute-bound ones (time × peak ÷ FLOPs per token is
// (n + n½) ÷ eff_max, a line in n), blend_exponent by the GEMMs between
// (opsBlend), prefill_compute_eff and kv_bw_eff as
// the ratio of total work to total time of their points (prefill attention's
// time less start's fixed work per query token, prefill_tok_ns, which is
// kept). Everything else of
// start (peaks, overheads, graphs, all-reduce) is kept. Linear timings with
// FP8 weights (o.FP8) move only fp8_compute_eff_max, at the FP8 peak, by
// least squares with start's n½; attention points, bf16 either way, are
// fitted as above.
func FitOps(o *Ops, start *sim.Profile) (*OpsFit, error) {
	if err := start.Validate(); err != nil {
		return nil, err
	}
	if o.FP8() && !(start.Peak.FP8FLOPSPerS > 0) {
		return nil, fmt.Errorf("%w: FP8 linear timings, but profile %s's GPU has no FP8 peak (peak.fp8_flops_per_s is 0): "+
			"time the layer in bf16 (calib/device/steptime.py without --dtype fp8), or start from a --profile that sets the peak",
			ErrBadOps, start.GPU)
	}
	if o.FP8() && sim.AdaFP8GEMM(start.GPU) && start.Engine != sim.EngineSGLang {
		// As sim.Profile.Compile: SGLang on Ada keeps the profile's FP8 terms.
		return nil, fmt.Errorf("%w: FP8 linear timings of %s, an Ada GPU: the simulator times %s's FP8 GEMMs there with a kernel table's "+
			"terms (sim.AdaFP8ComputeEffMax), not the profile's, so a fitted fp8_compute_eff_max would change nothing; "+
			"fit bf16 timings (calib/device/steptime.py without --dtype fp8), or these with --engine sglang, whose FP8 GEMMs the profile's terms time",
			ErrBadOps, start.GPU, start.Engine)
	}
	f := &OpsFit{Start: *start.Clone(), Fitted: *start.Clone()}
	peak, _ := opsLinearCeil(o, start)
	bw := start.Peak.MemBytesPerS
	lin := &f.Fitted.Linear

	var weff []float64
	var xs, ys []float64
	for _, p := range o.Linear {
		t := p.MsPerLayer / 1e3
		if p.Tokens <= weightBoundTokens {
			// Less the layer's GEMMs' fixed time (linear.gemm_fixed_ns,
			// cited, kept as in the joint fit).
			fixed := opsGEMMFixedS(start)
			if !(t > fixed) {
				return nil, fmt.Errorf("%w: linear: %d tokens take %g ms a layer, no more than the profile's %d GEMMs' fixed time (linear.gemm_fixed_ns %g ns)",
					ErrBadOps, p.Tokens, p.MsPerLayer, sim.GEMMsPerLayer, start.Linear.GEMMFixedNs)
			}
			weff = append(weff, o.LinearLayerBytes/(bw*(t-fixed)))
		}
		if p.Tokens >= computeBoundTokens {
			xs = append(xs, float64(p.Tokens))
			ys = append(ys, t*peak/o.LinearFLOPsPerToken)
		}
	}
	if len(weff) == 0 || len(xs) < 2 {
		return nil, fmt.Errorf("%w: linear: need points at ≤ %d tokens and at least two at ≥ %d tokens (have %d and %d)",
			ErrBadOps, weightBoundTokens, computeBoundTokens, len(weff), len(xs))
	}
	if o.FP8() {
		// Only the FP8 ceiling moves: weight_bw_eff, n½ and the blend are
		// shared with the BF16 GEMMs in the simulator, and torch's FP8
		// kernel at decode sizes is not the one servers run (docs/calibrate.md,
		// "FP8 linear layers"). With n½ kept, time × peak ÷ FLOPs per token
		// is (n + n½) ÷ eff: 1 ÷ eff by least squares through that line.
		var num, den float64
		for i, x := range xs {
			num += ys[i] * (x + lin.ComputeHalfTokens)
			den += (x + lin.ComputeHalfTokens) * (x + lin.ComputeHalfTokens)
		}
		lin.FP8ComputeEffMax = den / num
	} else {
		lin.WeightBWEff = stats.Median(weff)
		slope, icept := opsLineFit(xs, ys)
		if !(slope > 0) {
			return nil, fmt.Errorf("%w: linear: the compute-bound GEMMs do not take longer with more rows (slope %g)", ErrBadOps, slope)
		}
		lin.ComputeEffMax = 1 / slope
		lin.ComputeHalfTokens = max(icept/slope, 0)
		lin.BlendExponent = opsBlend(o, &f.Fitted)
	}

	m := o.Model
	attnFLOPsPerPair := 4 * float64(m.Heads) * float64(m.HeadDim) // QKᵀ and AV, as sim counts them
	peak = start.Peak.BF16FLOPSPerS                               // attention runs in bf16 whatever the weights
	var work, took float64
	for _, p := range o.PrefillAttention {
		l := float64(p.Tokens)
		work += l * (l + 1) / 2 * attnFLOPsPerPair
		// Less the fixed work per query token and head, which the fit keeps
		// (attention.prefill_tok_ns, cited, as in the joint fit): the
		// efficiency is the per-pair share that sim adds it to.
		took += p.MsPerLayer/1e3 - opsPrefillTokS(start, m, l)
	}
	if len(o.PrefillAttention) > 0 {
		f.Fitted.Attention.PrefillComputeEff = work / took / peak
	}
	work, took = 0, 0
	for _, p := range o.DecodeAttention {
		if p.KVBytes >= minKVBytes {
			work += p.KVBytes
			took += p.MsPerLayer / 1e3
		}
	}
	if took > 0 {
		f.Fitted.Attention.KVBWEff = work / took / bw
	}
	for _, v := range []float64{lin.ComputeEffMax, lin.FP8ComputeEffMax, lin.WeightBWEff, f.Fitted.Attention.PrefillComputeEff, f.Fitted.Attention.KVBWEff} {
		if !(v > 0) || v > 1 {
			return nil, fmt.Errorf("%w: a fitted efficiency of %.3g is outside (0, 1]: are the peaks of profile %s this GPU's (%s)?",
				ErrBadOps, v, start.GPU, opsClip(o.GPUName))
		}
	}
	f.Fitted.FittedTo = []string{"ops:" + opsClip(o.GPUName) + ":" + o.Date}
	f.GPUName = o.GPUName
	f.Timing = o.TimingMode()
	b, a := f.Start, f.Fitted
	f.FP8 = o.FP8()
	f.Linear = OpsLinear{ComputeEffMax: [2]float64{b.Linear.ComputeEffMax, a.Linear.ComputeEffMax},
		FP8ComputeEffMax:  [2]float64{b.Linear.FP8ComputeEffMax, a.Linear.FP8ComputeEffMax},
		ComputeHalfTokens: [2]float64{b.Linear.ComputeHalfTokens, a.Linear.ComputeHalfTokens},
		WeightBWEff:       [2]float64{b.Linear.WeightBWEff, a.Linear.WeightBWEff},
		BlendExponent:     [2]float64{b.Linear.BlendExponent, a.Linear.BlendExponent}}
	f.Attention = OpsAttention{PrefillComputeEff: [2]float64{b.Attention.PrefillComputeEff, a.Attention.PrefillComputeEff},
		KVBWEff: [2]float64{b.Attention.KVBWEff, a.Attention.KVBWEff}}
	f.points(o)
	return f, f.Fitted.Validate()
}

// opsPrefillTokS is the seconds one layer of prefill attention over l
// tokens spends on p's fixed work per query token and head
// (Attention.PrefillTokNs × heads × l, as sim.StepModel times it).
func opsPrefillTokS(p *sim.Profile, m OpsModel, l float64) float64 {
	return p.Attention.PrefillTokNs * float64(m.Heads) * l / 1e9
}

// opsGEMMFixedS is, in s, the fixed time of one layer's GEMMs under p
// (Linear.GEMMFixedNs × sim.GEMMsPerLayer, as sim.StepModel times it).
func opsGEMMFixedS(p *sim.Profile) float64 {
	return p.Linear.GEMMFixedNs * sim.GEMMsPerLayer / 1e9
}

// opsBlendSteps is how many exponents opsBlend tries, log-spaced from 1
// to 64 (the blend's range; 64 is max(compute, weights)).
const opsBlendSteps = 61

// opsBlend is the linear term's blend exponent that fits o's linear
// points best (least squares of their log errors) with p's other linear
// terms: the GEMMs between weight-bound and compute-bound tell it.
func opsBlend(o *Ops, p *sim.Profile) float64 {
	best, bestErr := 64.0, math.Inf(1)
	for i := range opsBlendSteps {
		e := math.Exp(math.Log(64) * float64(i) / float64(opsBlendSteps-1))
		var sum float64
		peak, eff := opsLinearCeil(o, p)
		for _, pt := range o.Linear {
			n := float64(pt.Tokens)
			c := (n + p.Linear.ComputeHalfTokens) * o.LinearFLOPsPerToken / (peak * eff)
			w := o.LinearLayerBytes/(p.Peak.MemBytesPerS*p.Linear.WeightBWEff) + opsGEMMFixedS(p)
			r := math.Log(sim.BlendLinear(c, w, e) * 1e3 / pt.MsPerLayer)
			sum += r * r
		}
		if sum < bestErr {
			best, bestErr = e, sum
		}
	}
	return best
}

// points fills Points and the error summary.
func (f *OpsFit) points(o *Ops) {
	m := o.Model
	kvPerTok := 2 * float64(m.KVHeads) * float64(m.HeadDim) * 2 // K and V, bf16
	attnFLOPsPerPair := 4 * float64(m.Heads) * float64(m.HeadDim)
	linear := func(p *sim.Profile, n float64) float64 {
		peak, eff := opsLinearCeil(o, p)
		compute := (n + p.Linear.ComputeHalfTokens) * o.LinearFLOPsPerToken / (peak * eff)
		weights := o.LinearLayerBytes/(p.Peak.MemBytesPerS*p.Linear.WeightBWEff) + opsGEMMFixedS(p)
		return sim.BlendLinear(compute, weights, p.Linear.BlendExponent) * 1e3
	}
	add := func(op, what string, measured, before, after float64) {
		f.Points = append(f.Points, OpsPoint{Op: op, What: what, MeasuredMs: measured, BeforeMs: before, AfterMs: after,
			BeforeError: before/measured - 1, AfterError: after/measured - 1})
	}
	for _, p := range o.Linear {
		n := float64(p.Tokens)
		add("linear", fmt.Sprintf("n=%d", p.Tokens), p.MsPerLayer, linear(&f.Start, n), linear(&f.Fitted, n))
	}
	for _, p := range o.PrefillAttention {
		l := float64(p.Tokens)
		t := func(q *sim.Profile) float64 {
			return (l*(l+1)/2*attnFLOPsPerPair/(q.Peak.BF16FLOPSPerS*q.Attention.PrefillComputeEff) + opsPrefillTokS(q, m, l)) * 1e3
		}
		add("prefill_attention", fmt.Sprintf("L=%d", p.Tokens), p.MsPerLayer, t(&f.Start), t(&f.Fitted))
	}
	for _, p := range o.DecodeAttention {
		kv := float64(p.Batch) * float64(p.Context) * kvPerTok
		t := func(q *sim.Profile) float64 { return kv / (q.Peak.MemBytesPerS * q.Attention.KVBWEff) * 1e3 }
		add("decode_attention", fmt.Sprintf("B=%d C=%d", p.Batch, p.Context), p.MsPerLayer, t(&f.Start), t(&f.Fitted))
	}
	var before, after []float64
	for _, p := range f.Points {
		before = append(before, math.Abs(p.BeforeError))
		after = append(after, math.Abs(p.AfterError))
	}
	f.MedianBefore, f.MaxBefore = stats.Median(before), slices.Max(before)
	f.MedianAfter, f.MaxAfter = stats.Median(after), slices.Max(after)
}

// opsLineFit is the least-squares line y = slope·x + intercept.
func opsLineFit(xs, ys []float64) (slope, intercept float64) {
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, 0
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n
}
