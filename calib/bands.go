// Error bands from the out-of-sample residuals (calib/residuals.yaml): for
// a setup (step model, GPU, load) and a metric (TTFT, TPOT, output
// throughput), the central BandQuantile of the held-out errors of the
// figures most like it, fallen back to wider pools, named as such, where
// too few match. docs/calibrate.md ("Error bands") says how they are made.

package calib

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/sim"
)

// BandQuantile is the central share of held-out errors a band spans: from
// the (1−q)/2 to the (1+q)/2 quantile.
const BandQuantile = 0.8

// BandMinFigures is the fewest held-out figures a bucket needs to give a
// band of its own; with fewer, the band falls back to a wider pool.
const BandMinFigures = 20

// BandMetric is a metric a band is given for.
type BandMetric int

// The metrics with bands. Each stands for the published metrics that
// measure it: TTFT for median (or, where a source gives no median, mean)
// TTFT; TPOT for median TPOT, median ITL where a source gives no TPOT, and
// lmdeploy's per-token decode latency; throughput for output tokens/s.
const (
	BandTTFT BandMetric = iota
	BandTPOT
	BandThroughput
)

// String names the metric as the bands' bases do.
func (m BandMetric) String() string {
	switch m {
	case BandTTFT:
		return "TTFT"
	case BandTPOT:
		return "TPOT"
	case BandThroughput:
		return "output throughput"
	}
	return fmt.Sprintf("BandMetric(%d)", int(m))
}

// bandMetrics maps calib/residuals.yaml's metrics to the band's.
var bandMetrics = map[string]BandMetric{
	"ttft_median": BandTTFT, "ttft_mean": BandTTFT,
	"tpot_median": BandTPOT, "itl_median": BandTPOT, "latency_per_token_p50": BandTPOT,
	"output_throughput": BandThroughput,
}

// The step models a band can be for (BandSetup.Model): the two of
// sim.StepTimeJoint and sim.StepTimeRoofline, and a profile file.
const BandProfileFile = "file"

// BandSetup is what a band depends on besides the metric and the load.
type BandSetup struct {
	// Model is sim.StepTimeJoint (the joint model's embedded profile),
	// sim.StepTimeRoofline or BandProfileFile.
	Model string
	// Profile names the profile file (Model BandProfileFile), for the
	// band's basis.
	Profile string
	// GPU is the GPU preset's name: whether the joint model was fitted to
	// figures of it, and of how many sources, picks the residuals.
	GPU string
}

// GPU classes: how many sources, other than a figure's own, the fit that
// judged it had on its GPU. A user's setup is a source the model never
// saw, so its class is the number of sources the joint model has on its GPU.
const (
	gpuUnseen = "unseen" // none: the GPU is known by its datasheet only
	gpuSeen1  = "seen1"  // one source
	gpuSeen2  = "seen2"  // two or more
	gpuSeen   = "seen"   // seen1 or seen2 (a fallback pool)
	gpuAny    = ""       // any (roofline; the last fallback)
	loadAny   = ""
)

// bandPoint is one held-out error as a band draws on it.
type bandPoint struct {
	metric BandMetric
	model  string // sim.StepTimeJoint or sim.StepTimeRoofline
	gpu    string // gpuUnseen, gpuSeen1, gpuSeen2; gpuAny for the roofline
	load   string // LoadRegime
	source string
	err    float64
}

// Bands selects error bands from a residuals file.
type Bands struct {
	points []bandPoint
	// sources is, per GPU, the sources the joint model was fitted to.
	sources map[string][]string
}

// NewBands indexes f's residuals. Only out-of-sample errors enter: for the
// joint model, a figure's error under the fit without its source
// (Residual.HeldOut), classed by whether that fit still had its GPU from
// other sources, and, where it had (so the held-out error says nothing of
// an unseen GPU), its error under the fit without its GPU
// (Residual.GPUOut) as an unseen-GPU figure too; for the roofline, which
// is never fitted, every figure's error (Residual.Roofline). In-sample
// errors (Residual.Joint) never enter.
func NewBands(f ResidualsFile) *Bands {
	b := &Bands{sources: map[string][]string{}}
	for _, r := range f.Residuals {
		if r.Fitted && !slices.Contains(b.sources[r.GPU], r.Source) {
			b.sources[r.GPU] = append(b.sources[r.GPU], r.Source)
		}
	}
	for _, r := range f.Residuals {
		m, ok := bandMetrics[r.Metric]
		if !ok || r.Use == "cross-check" {
			continue
		}
		load := LoadRegime(r.MeanBatch)
		others := 0
		for _, s := range b.sources[r.GPU] {
			if s != r.Source {
				others++
			}
		}
		cls := gpuClass(others)
		b.points = append(b.points, bandPoint{m, sim.StepTimeJoint, cls, load, r.Source, r.HeldOut})
		if cls != gpuUnseen && r.GPUOut != nil {
			b.points = append(b.points, bandPoint{m, sim.StepTimeJoint, gpuUnseen, load, r.Source, *r.GPUOut})
		}
		if r.Roofline != nil {
			b.points = append(b.points, bandPoint{m, sim.StepTimeRoofline, gpuAny, load, r.Source, *r.Roofline})
		}
	}
	return b
}

// EmbeddedBands returns the bands of the embedded calib/residuals.yaml,
// from their generated literal (BandPointsPath): no decoding. The error is
// always nil (kept for callers that may read a residuals file instead).
func EmbeddedBands() (*Bands, error) {
	return &generatedBands, nil
}

// gpuClass is the class of a GPU the fit had n sources of.
func gpuClass(n int) string {
	switch {
	case n == 0:
		return gpuUnseen
	case n == 1:
		return gpuSeen1
	}
	return gpuSeen2
}

// LoadRegime names a run's load by its mean requests per step, as
// calib/residuals.yaml's regime does: single (at most 1.5), light (at most
// 16) or heavy.
func LoadRegime(meanBatch float64) string {
	switch {
	case meanBatch <= 1.5:
		return "single"
	case meanBatch <= 16:
		return "light"
	}
	return "heavy"
}

// Sources returns the sources the joint model was fitted to on gpu.
func (b *Bands) Sources(gpu string) []string { return slices.Clone(b.sources[gpu]) }

// Band returns the error band of metric m for setup s at a run's mean
// batch (requests per step), as errors (Band.ErrLow, ErrHigh): call its
// Around with the simulated value. ok is false when not even the widest
// pool has enough figures.
func (b *Bands) Band(s BandSetup, m BandMetric, meanBatch float64) (band sim.Band, ok bool) {
	load := LoadRegime(meanBatch)
	switch s.Model {
	case sim.StepTimeRoofline:
		return b.selectBand(sim.StepTimeRoofline, gpuAny, load, m, "")
	case sim.StepTimeJoint:
		return b.selectBand(sim.StepTimeJoint, gpuClass(len(b.sources[s.GPU])), load, m, "")
	}
	band, ok = b.selectBand(sim.StepTimeJoint, gpuClass(len(b.sources[s.GPU])), load, m, "")
	if ok {
		band.Fallback = true
		band.Basis = fmt.Sprintf("%s; stand-in: no held-out figures judge the profile %s, so the band is the joint model's for a source it never saw", band.Basis, s.Profile)
	}
	return band, ok
}

// selectBand picks the first pool with BandMinFigures figures: the
// setup's GPU class and load; then (for a seen GPU) every seen GPU at that
// load; then the class at any load; then every figure of the model. A band
// from a pool past the first is a fallback: it says so, and spans the
// first pool's own few figures too. skip leaves out one source's figures
// (the coverage test's leave-one-source-out).
func (b *Bands) selectBand(model, cls, load string, m BandMetric, skip string) (sim.Band, bool) {
	type pool struct{ cls, load string }
	pools := []pool{{cls, load}}
	switch cls {
	case gpuSeen1, gpuSeen2:
		pools = append(pools, pool{gpuSeen, load}, pool{gpuSeen, loadAny})
	case gpuUnseen:
		pools = append(pools, pool{gpuUnseen, loadAny})
	}
	pools = append(pools, pool{gpuAny, loadAny})
	errs := func(p pool) []float64 {
		var out []float64
		for _, x := range b.points {
			if x.model != model || x.metric != m || x.source == skip && skip != "" {
				continue
			}
			if p.load != loadAny && x.load != p.load {
				continue
			}
			if p.cls == gpuSeen && x.gpu != gpuSeen1 && x.gpu != gpuSeen2 || p.cls != gpuSeen && p.cls != gpuAny && x.gpu != p.cls {
				continue
			}
			out = append(out, x.err)
		}
		slices.Sort(out)
		return out
	}
	first := errs(pools[0])
	for i, p := range pools {
		e := first
		if i > 0 {
			e = errs(p)
		}
		lo, hi, ok := centralBand(e, BandQuantile)
		if !ok || len(e) < BandMinFigures {
			continue
		}
		band := sim.Band{Quantile: BandQuantile, N: len(e), ErrLow: lo, ErrHigh: hi,
			Basis: fmt.Sprintf("%d held-out %s figures of the %s %s, %s", len(e), m, modelWords(model), gpuWords(p.cls), loadWords(p.load))}
		if i > 0 {
			band.Fallback = true
			band.Basis += fmt.Sprintf(" (fallback: %d %s %s are fewer than %d", len(first), gpuWords(pools[0].cls), loadWords(pools[0].load), BandMinFigures)
			if len(first) > 0 {
				band.ErrLow, band.ErrHigh = min(lo, first[0]), max(hi, first[len(first)-1])
				band.Basis += "; widened to span them"
			}
			band.Basis += ")"
		}
		return band, true
	}
	return sim.Band{}, false
}

// centralBand returns the errors that bound the central share q of e
// (sorted) as split conformal prediction takes them: the ⌊(n+1)(1−q)/2⌋-th
// and the ⌈(n+1)(1+q)/2⌉-th smallest, so that a new figure exchangeable
// with e's falls between them with probability at least q. ok is false
// when e is too short for those ranks (n+1 < 2/(1−q)).
func centralBand(e []float64, q float64) (lo, hi float64, ok bool) {
	n := len(e)
	a := (1 - q) / 2
	j := int(math.Floor(float64(n+1)*a + 1e-9))
	k := int(math.Ceil(float64(n+1)*(1-a) - 1e-9))
	if j < 1 || k > n {
		return 0, 0, false
	}
	return e[j-1], e[k-1], true
}

func modelWords(model string) string {
	if model == sim.StepTimeRoofline {
		return "roofline (never fitted)"
	}
	return "joint model"
}

func gpuWords(cls string) string {
	switch cls {
	case gpuUnseen:
		return "on GPUs the fit never saw"
	case gpuSeen1:
		return "on GPUs fitted to one other source"
	case gpuSeen2:
		return "on GPUs fitted to two or more other sources"
	case gpuSeen:
		return "on GPUs seen in the fit"
	}
	return "on any GPU"
}

func loadWords(load string) string {
	switch load {
	case "single":
		return "at a mean batch up to 1.5"
	case "light":
		return "at a mean batch of 1.5 to 16"
	case "heavy":
		return "at a mean batch above 16"
	}
	return "at any load"
}

// Table writes the bands every setup gets, as docs/calibrate.md ("Error
// bands") shows them: per step model, GPU class and load, each metric's
// band as shares of the simulated value, the figures behind it, and ✱
// where it is a fallback.
func (b *Bands) Table() string {
	var sb strings.Builder
	sb.WriteString("| step model | GPU | load | TTFT | TPOT | output throughput |\n|---|---|---|---|---|---|\n")
	rows := []struct{ model, cls, name string }{
		{sim.StepTimeJoint, gpuSeen2, "fitted to 2+ sources"},
		{sim.StepTimeJoint, gpuSeen1, "fitted to 1 source"},
		{sim.StepTimeJoint, gpuUnseen, "never fitted"},
		{sim.StepTimeRoofline, gpuAny, "any"},
	}
	for _, r := range rows {
		for _, load := range []string{"single", "light", "heavy"} {
			fmt.Fprintf(&sb, "| %s | %s | %s |", r.model, r.name, load)
			for _, m := range []BandMetric{BandTTFT, BandTPOT, BandThroughput} {
				band, ok := b.selectBand(r.model, r.cls, load, m, "")
				if !ok {
					sb.WriteString(" – |")
					continue
				}
				band = band.Around(1)
				mark := ""
				if band.Fallback {
					mark = " ✱"
				}
				fmt.Fprintf(&sb, " %+.0f%% to %+.0f%% (%d%s) |", 100*band.RelLower, 100*band.RelUpper, band.N, mark)
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}
