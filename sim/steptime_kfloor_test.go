package sim

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// vidurOpsPath is the committed extract of Vidur's operator profiles the
// prior's linear.gemm_fixed_ns and linear.layer_kernels_ns are drawn from
// (its header: origin, commit, licence, columns).
const vidurOpsPath = "testdata/kfloor_vidur_mlp.csv"

// vidurOpsRow is one row of the extract: one model's layer at one tensor
// parallelism and token count on one GPU, device times in µs per call.
type vidurOpsRow struct {
	gpu, model                      string
	tp, tokens                      int
	hidden, heads, kvHeads, inter   int
	qkv, o, up, down                float64 // the four GEMMs
	inLN, rope, postLN, act, addRes float64 // the layer's other kernels
}

// gemmBytes are the bf16 weight bytes per GPU of the row's four GEMMs, in
// the order qkv, o, up (gate and up), down.
func (r vidurOpsRow) gemmBytes() [4]float64 {
	h, hd, t := float64(r.hidden), float64(r.hidden/r.heads), float64(r.tp)
	return [4]float64{
		h * float64(r.heads+2*r.kvHeads) * hd / t * 2,
		h * h / t * 2,
		h * 2 * float64(r.inter) / t * 2,
		float64(r.inter) / t * h * 2,
	}
}

// gemmTimes are the row's four GEMM times in ns, in gemmBytes' order.
func (r vidurOpsRow) gemmTimes() [4]float64 {
	return [4]float64{r.qkv * 1e3, r.o * 1e3, r.up * 1e3, r.down * 1e3}
}

// layerKernelsNs is the row's layer kernels as vLLM and SGLang run them:
// the two RMSNorms (the residual add fused into each), the rotary
// embedding and the gated activation; Vidur's own model adds the residual
// in a kernel of its own (addRes), which they do not run.
func (r vidurOpsRow) layerKernelsNs() float64 {
	return (r.inLN + r.rope + r.postLN + r.act) * 1e3
}

// loadVidurOps reads vidurOpsPath.
func loadVidurOps(t *testing.T) []vidurOpsRow {
	t.Helper()
	data, err := os.ReadFile(vidurOpsPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []vidurOpsRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	header := true
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		if header {
			header = false
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 17 {
			t.Fatalf("%s:%d: %d fields, want 17", vidurOpsPath, line, len(f))
		}
		var n [15]float64
		for i := range n {
			if n[i], err = strconv.ParseFloat(f[i+2], 64); err != nil {
				t.Fatalf("%s:%d: field %d: %v", vidurOpsPath, line, i+3, err)
			}
		}
		rows = append(rows, vidurOpsRow{gpu: f[0], model: f[1], tp: int(n[0]), tokens: int(n[1]),
			hidden: int(n[2]), heads: int(n[3]), kvHeads: int(n[4]), inter: int(n[5]),
			qkv: n[6], o: n[7], up: n[8], down: n[9], inLN: n[10], rope: n[11], postLN: n[12], act: n[13], addRes: n[14]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 220 {
		t.Fatalf("%s: %d rows, want 220 (11 GPU × model files × 4 TPs × 5 token counts)", vidurOpsPath, len(rows))
	}
	return rows
}

// vidurGPUs are the extract's GPUs, in the fit's column order.
var vidurGPUs = []string{"a100", "h100", "a40"}

// vidurTriad is each GPU's STREAM Triad (model/gpu.go's
// MeasuredMemBandwidth: [azure] for the A100-80GB, which Vidur's a100 is,
// and the H100), bytes/s; 0: none stored (the A40 is no preset).
var vidurTriad = map[string]float64{"a100": 1.70e12, "h100": 2.97e12}

// gemmFit is the GEMM form t = a + bytes ÷ B fitted to the extract's
// GEMMs: one a for every GPU (shared) or none (zeroA), one B per GPU.
type gemmFit struct {
	a      float64            // ns
	bw     map[string]float64 // bytes/s
	res    []float64          // relative residuals, by GEMM
	rmsLog float64
	worst  float64 // largest |residual|
	// small is the mean relative residual of the GEMMs of 16 MB or less,
	// where a fixed time shows.
	small float64
}

// fitVidurGEMMs fits the form to every GEMM of rows with at most maxTok
// tokens, by least squares in relative error; rows are of the GPUs gpus.
func fitVidurGEMMs(rows []vidurOpsRow, gpus []string, maxTok int, zeroA bool) gemmFit {
	var design [][]float64
	var y, bytesOf []float64
	for _, r := range rows {
		if r.tokens > maxTok {
			continue
		}
		col := slices.Index(gpus, r.gpu)
		b, ts := r.gemmBytes(), r.gemmTimes()
		for k := range 4 {
			row := make([]float64, 1+len(gpus))
			row[0] = 1 / ts[k]
			row[1+col] = b[k] / ts[k]
			if zeroA {
				row = row[1:]
			}
			design = append(design, row)
			y = append(y, 1)
			bytesOf = append(bytesOf, b[k])
		}
	}
	x := leastSquares(design, y)
	f := gemmFit{bw: map[string]float64{}}
	if !zeroA {
		f.a, x = x[0], x[1:]
	}
	for i, g := range gpus {
		f.bw[g] = 1e9 / x[i] // x is ns a byte
	}
	var sum, smallSum float64
	var nSmall int
	for i, row := range design {
		var p float64
		for j, v := range row {
			if zeroA {
				p += v * x[j]
			} else if j == 0 {
				p += v * f.a
			} else {
				p += v * x[j-1]
			}
		}
		r := p - 1
		f.res = append(f.res, r)
		sum += math.Pow(math.Log1p(r), 2)
		f.worst = max(f.worst, math.Abs(r))
		if bytesOf[i] <= 16e6 {
			smallSum += r
			nSmall++
		}
	}
	f.rmsLog = math.Sqrt(sum / float64(len(f.res)))
	f.small = smallSum / float64(nSmall)
	return f
}

// TestPriorGEMMFixedNsFromVidur: the prior's linear.gemm_fixed_ns is the
// fixed time of the form t = a + bytes ÷ B (one a for every GPU, one B per
// GPU) fitted to the four GEMMs of every dense Llama layer, tensor
// parallelism and token count from 1 to 16 in Vidur's operator profiles
// (A100-80GB, H100, A40), to 0.1 µs. The fit's B tracks each GPU's STREAM
// Triad (within 10%), and without a (bytes ÷ B alone) the small GEMMs come
// out too fast: the fixed time is what they lack. Fitted on each GPU alone,
// a stays within 2-6 µs. Changing the prior or the extract without the
// other fails.
func TestPriorGEMMFixedNsFromVidur(t *testing.T) {
	rows := loadVidurOps(t)
	f := fitVidurGEMMs(rows, vidurGPUs, 16, false)
	t.Logf("shared a %.0f ns; B a100 %.3f, h100 %.3f, a40 %.3f TB/s; rms log %.3f, worst %+.3f, GEMMs ≤ 16 MB %+.3f on average",
		f.a, f.bw["a100"]/1e12, f.bw["h100"]/1e12, f.bw["a40"]/1e12, f.rmsLog, f.worst, f.small)
	for g, triad := range vidurTriad {
		r := f.bw[g] / triad
		t.Logf("%s: B ÷ Triad %.3f", g, r)
		if r < 0.9 || r > 1.1 {
			t.Errorf("%s: B %.3f TB/s is %.2f of its Triad %.2f TB/s", g, f.bw[g]/1e12, r, triad/1e12)
		}
	}
	if f.rmsLog > 0.08 || f.worst > 0.4 {
		t.Errorf("the form fits Vidur's GEMMs with rms log error %.3f, worst %.3f: not the table the comments quote", f.rmsLog, f.worst)
	}
	z := fitVidurGEMMs(rows, vidurGPUs, 16, true)
	t.Logf("without a: B a100 %.3f, h100 %.3f, a40 %.3f TB/s; rms log %.3f, GEMMs ≤ 16 MB %+.3f on average",
		z.bw["a100"]/1e12, z.bw["h100"]/1e12, z.bw["a40"]/1e12, z.rmsLog, z.small)
	if z.rmsLog < 1.5*f.rmsLog || z.small > -0.15 {
		t.Errorf("bytes ÷ B alone fits about as well (rms log %.3f against %.3f; small GEMMs %+.3f): the fixed time would not be needed", z.rmsLog, f.rmsLog, z.small)
	}
	// Each GPU alone.
	for _, g := range vidurGPUs {
		var mine []vidurOpsRow
		for _, r := range rows {
			if r.gpu == g {
				mine = append(mine, r)
			}
		}
		one := fitVidurGEMMs(mine, []string{g}, 16, false)
		t.Logf("%s alone: a %.0f ns, B %.3f TB/s, rms log %.3f", g, one.a, one.bw[g]/1e12, one.rmsLog)
		if one.a < 2000 || one.a > 6000 {
			t.Errorf("%s alone: a %.0f ns, outside the 2-6 µs the comments quote", g, one.a)
		}
	}
	// The range of token counts: decode sizes, where every GEMM here is
	// bandwidth-bound (16 rows of bf16 are 16 FLOP a weight byte, a tenth
	// of the A100's ridge); 1 token alone gives much the same a.
	one := fitVidurGEMMs(rows, vidurGPUs, 1, false)
	t.Logf("num_tokens 1 alone: a %.0f ns", one.a)
	if math.Abs(one.a-f.a) > 1000 {
		t.Errorf("at 1 token a is %.0f ns, at 1-16 %.0f: the fixed time is not stable over decode sizes", one.a, f.a)
	}
	if got, want := PriorJoint().Linear.GEMMFixedNs, math.Round(f.a/100)*100; got != want {
		t.Errorf("prior.yaml linear.gemm_fixed_ns = %v, want %v (Vidur's %.0f ns)", got, want, f.a)
	}
}

// TestPriorLayerKernelsNsFromVidur: the prior's linear.layer_kernels_ns is
// the median over the extract's rows (every GPU, model, tensor parallelism
// and token count 1-16) of a layer's two RMSNorms, rotary embedding and
// activation, to 1 µs. At these sizes each GPU's median is within 20% of
// it: the kernels are a fixed time, not a bandwidth.
func TestPriorLayerKernelsNsFromVidur(t *testing.T) {
	rows := loadVidurOps(t)
	var all []float64
	by := map[string][]float64{}
	for _, r := range rows {
		all = append(all, r.layerKernelsNs())
		by[r.gpu] = append(by[r.gpu], r.layerKernelsNs())
	}
	med := median(all)
	t.Logf("layer kernels: median %.0f ns over %d rows (min %.0f, max %.0f)", med, len(all), slices.Min(all), slices.Max(all))
	for _, g := range vidurGPUs {
		m := median(by[g])
		t.Logf("%s: median %.0f ns", g, m)
		if math.Abs(m/med-1) > 0.2 {
			t.Errorf("%s: median %.0f ns, %.0f%% from every GPU's %.0f", g, m, 100*(m/med-1), med)
		}
	}
	if got, want := PriorJoint().Linear.LayerKernelsNs, math.Round(med/1000)*1000; got != want {
		t.Errorf("prior.yaml linear.layer_kernels_ns = %v, want %v (Vidur's median %.0f ns)", got, want, med)
	}
}

// median is the median of v (v is sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// TestDecodeStepKernelFloor: a decode step of Llama-3-8B (tp 1, bf16) on an
// H100 at batch 8 under a profile with both terms, computed by hand: the
// weights side of the linear blend gains 4 × 32 GEMMs × gemm_fixed_ns, the
// step 32 × layer_kernels_ns of its own (Breakdown.LayerKernelsNs), in a
// CUDA graph and eagerly alike; without them (0) the step times as before.
// A prefill chunk of 4,096 tokens, compute-bound, hides the GEMMs' fixed
// time in the blend but still pays the layer kernels.
func TestDecodeStepKernelFloor(t *testing.T) {
	m, err := model.Preset("llama-3-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	s := NewShape(m, 1, model.BF16)
	p := &Profile{GPU: g.Name, Engine: EngineVLLMV1, Peak: PeakRates{BF16FLOPSPerS: 989e12, MemBytesPerS: 3.35e12, LinkBytesPerS: 450e9},
		Linear: LinearTerm{ComputeEffMax: 0.75, FP8ComputeEffMax: 0.55, ComputeHalfTokens: 1, WeightBWEff: 0.8, BlendExponent: 2,
			GEMMFixedNs: 4000, LayerKernelsNs: 20000},
		Attention: AttentionTerm{PrefillComputeEff: 0.66, KVBWEff: 0.8, KVSeqNs: 11.4},
		AllReduce: AllReduceTerm{BWEff: 0.7, LatencyNs: 8000},
		Overhead:  OverheadTerm{StepNs: 500_000, PerSeqNs: 20_000, EagerPerLayerNs: 13_000},
		CUDAGraph: CUDAGraphTerm{Sizes: []int{1, 2, 4, 8, 16}}}
	old := *p
	old.Linear.GEMMFixedNs, old.Linear.LayerKernelsNs = 0, 0
	var st Step
	for range 8 {
		st.AddDecode(1000, 1)
	}
	// By hand: compute (8 + 1) × 2 × 6.98e9 FLOPs ÷ (989e12 × 0.75) plus
	// the lm_head's 9 rows; weights 15.01 GB ÷ (3.35e12 × 0.8) + 128 × 4 µs.
	compute := 9*s.LinearFLOPsPerToken/(989e12*0.75)*1e9 + 9*s.HeadFLOPsPerRow/(989e12*0.75)*1e9
	weights := s.DenseWeightBytes/(3.35e12*0.8)*1e9 + 128*4000
	wantLinear := math.Sqrt(compute*compute + weights*weights)
	for _, eager := range []bool{false, true} {
		q, o := *p, old
		if eager {
			q.CUDAGraph, o.CUDAGraph = CUDAGraphTerm{}, CUDAGraphTerm{}
		}
		b, b0 := q.StepTime(s, st), o.StepTime(s, st)
		if b.Graph == eager {
			t.Fatalf("eager %v: graph %v", eager, b.Graph)
		}
		if d := b.LinearNs/wantLinear - 1; math.Abs(d) > 1e-12 {
			t.Errorf("eager %v: linear %.1f ns, want %.1f by hand", eager, b.LinearNs, wantLinear)
		}
		if b.LayerKernelsNs != 32*20000 {
			t.Errorf("eager %v: layer kernels %.0f ns, want 32 × 20 µs", eager, b.LayerKernelsNs)
		}
		if b0.LayerKernelsNs != 0 || b0.LinearNs >= b.LinearNs-100_000 {
			t.Errorf("eager %v: without the terms linear %.0f, layer kernels %.0f; with them %.0f", eager, b0.LinearNs, b0.LayerKernelsNs, b.LinearNs)
		}
		want := b0.TotalNs + int64(math.Round(b.LinearNs-b0.LinearNs)) + 640_000
		if d := b.TotalNs - want; d < -1 || d > 1 {
			t.Errorf("eager %v: total %d ns, want %d (the old step's %d + the linear term's growth + 640 µs)", eager, b.TotalNs, want, b0.TotalNs)
		}
		t.Logf("eager %v: %v\n  without: %v", eager, b, b0)
	}
	// A 4,096-token prefill: compute-bound, the fixed time all but hidden.
	var pre Step
	pre.AddPrefill(0, 4096, 1)
	b, b0 := p.StepTime(s, pre), old.StepTime(s, pre)
	if !b.ComputeBound || b.LinearNs/b0.LinearNs-1 > 0.01 {
		t.Errorf("prefill: linear %.0f ns against %.0f without the GEMMs' fixed time: not hidden", b.LinearNs, b0.LinearNs)
	}
	if b.LayerKernelsNs != 32*20000 {
		t.Errorf("prefill: layer kernels %.0f ns, want 32 × 20 µs", b.LayerKernelsNs)
	}
	// A hand-built Shape counts no GEMMs: no fixed time.
	hs := s
	hs.GEMMs = 0
	if b1, b2 := p.StepTime(hs, st), old.StepTime(hs, st); b1.LinearNs != b2.LinearNs {
		t.Errorf("a Shape without GEMMs: linear %.0f ns, want the old %.0f", b1.LinearNs, b2.LinearNs)
	}
	// The decode run's timer agrees with Time, the new term included.
	checkDecodeTimer(t, p.Compile(s), st, 8000, 16000, 123456)
}

// TestKernelFloorOptional: a profile without linear.gemm_fixed_ns and
// layer_kernels_ns (written before them) reads both as 0 and writes
// neither back; one with them writes them back; a negative value is
// refused, naming the field. The prior sets both.
func TestKernelFloorOptional(t *testing.T) {
	if j := PriorJoint(); j.Linear.GEMMFixedNs <= 0 || j.Linear.LayerKernelsNs <= 0 {
		t.Fatalf("the prior sets gemm_fixed_ns %v, layer_kernels_ns %v", j.Linear.GEMMFixedNs, j.Linear.LayerKernelsNs)
	}
	old, err := LoadProfile(strings.NewReader(h100ProfileYAML), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if old.Linear.GEMMFixedNs != 0 || old.Linear.LayerKernelsNs != 0 {
		t.Fatalf("an old profile reads gemm_fixed_ns %v, layer_kernels_ns %v", old.Linear.GEMMFixedNs, old.Linear.LayerKernelsNs)
	}
	if s := profileYAML(t, old); strings.Contains(s, "gemm_fixed_ns") || strings.Contains(s, "layer_kernels_ns") {
		t.Error("a profile without the terms writes them")
	}
	old.Linear.GEMMFixedNs, old.Linear.LayerKernelsNs = 3800, 20000
	back := profileRoundTrip(t, old)
	if back.Linear.GEMMFixedNs != 3800 || back.Linear.LayerKernelsNs != 20000 {
		t.Errorf("written and read back: gemm_fixed_ns %v, layer_kernels_ns %v", back.Linear.GEMMFixedNs, back.Linear.LayerKernelsNs)
	}
	for _, f := range []string{"linear.gemm_fixed_ns", "linear.layer_kernels_ns"} {
		bad := *back
		if f == "linear.gemm_fixed_ns" {
			bad.Linear.GEMMFixedNs = -1
		} else {
			bad.Linear.LayerKernelsNs = -1
		}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("a negative %s: %v", f, err)
		}
	}
}
