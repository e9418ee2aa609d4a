// Fidelity: the vLLM paper's figures (Kwon et al., SOSP'23: Table 1, Fig.
// 2, 12a, 13a) reproduced on the paper's setup, with the lengths of its
// ShareGPT sample and variants of their shape. See fidelity.go.

package calib

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// paperSource is the dataset's id of the vLLM paper.
const paperSource = "vllm-paper"

// PaperSetup is the paper's setup as a scenario builds it: the systems
// compared (Orca's three reservation schemes on the buddy allocator, vLLM
// paged), the requests at one arrival rate, and the same requests with
// other length shapes. Fidelity runs every system as its config says (the
// scenario sets engine vllm-v0 at release 0.1.0: prefill-only steps, as V0's
// later releases run them, though cacheflow's schedulers of June 2023 mix
// prompts and decodes in one step, which moves every rate further from the
// paper (docs/calibrate.md, "Issue 24, eleventh session: the paper's Orca
// at its reservations"); without CUDA graphs, which came in 0.2.5), under the
// joint model's profile for that GPU, engine and release and under the
// roofline.
type PaperSetup struct {
	Scenario string // the scenario file it was built from, for the page
	GPU      string // the GPU preset of every system's config
	// Systems are named as the figures' setup.system: orca-max, orca-pow2,
	// orca-oracle, vllm.
	// Every system has the same engine.
	Systems []PaperSystem
	// Workloads holds the requests, the first with the paper's length
	// distribution, the others with other shapes of the same means.
	Workloads []PaperWorkload
	Rate      float64 // the arrival rate of the requests, req/s (Fig. 13a: 2)
	// Fig12a is a longer draw of the first workload's requests at Rate,
	// at least PaperFig12aSpan long: Fig. 12a's trace at each rate is the
	// part of it that arrives within PaperTrace once its arrivals are
	// scaled to that rate. Nil: the first workload's requests, scaled
	// whole (a trace of the workload's length × Rate ÷ rate).
	Fig12a []workload.Request
}

// PaperTrace is the length of the paper's traces: "for most experiments,
// we evaluate the systems with 1-hour traces" (§6.1; 15 minutes for
// OPT-175B only). Fig. 12a's rates depend on it: past the sustainable
// rate the queue grows with the trace, and a mean normalized latency of
// 0.5 s/token is reached at a rate nearer the sustainable one the longer
// the trace.
const PaperTrace = time.Hour

// PaperFig12aSpan is how long PaperSetup.Fig12a must be at rate req/s to
// give a trace of PaperTrace at every rate Fig. 12a's search tries.
func PaperFig12aSpan(rate float64) time.Duration {
	return time.Duration(math.Ceil(float64(PaperTrace) * fig12aHi / rate))
}

// PaperSystem is one system of the paper's comparison.
type PaperSystem struct {
	Name   string
	Config sim.Config // its Profile is set by Fidelity
}

// PaperWorkload is one set of requests and how its lengths were drawn.
type PaperWorkload struct {
	Label    string // "σ 1.56 / 1.00 (the paper's)"
	Sampling string // one sentence for the page
	Requests []workload.Request
}

// PaperResult is one system's run at the setup's rate.
type PaperResult struct {
	TokenStates, External float64 // shares of KV memory (sim.Shares), 0-1
	Internal              float64 // share of KV memory held but never filled, the allocator's rounding included
	MeanBatch             float64 // mean requests per step
	Slots                 float64 // KV token slots of a paged pool (0 for the others)
	Completed, Unfinished int
}

// PaperReport is the paper's reproduction.
type PaperReport struct {
	Setup *PaperSetup
	// Results[w][s][t]: workload w, system s, timing model t.
	Results [][][numTimings]PaperResult
	// MeanIn and MeanOut are each workload's mean prompt and output
	// lengths, tokens.
	MeanIn, MeanOut []float64
	// Fig12a says why Fig. 12a's rates are not computed; empty when they
	// are (then Rates[s][t] is each system's rate at the SLO, req/s,
	// bisected on the model's curve, and ReadOff[s][t] the rate read off
	// as the paper's figure reads its own: fidPolylineRate on the rates
	// of paperFig12aGrid; the bisected rate where the grid has no entry
	// for the system, or where the model's curve is over the SLO already
	// at the grid's first rate).
	Fig12a  string
	Rates   [][numTimings]float64
	ReadOff [][numTimings]float64
	// normAt runs system s under timing t at rate and returns its mean
	// normalized latency (s/token): Fig. 12a's low-load points.
	normAt func(s int, t FidelityTiming, rate float64) (float64, error)
}

// Fig. 12a: the rate at which the mean normalized latency (sim.Result's
// NormalizedLatencyMean) reaches fig12aSLO, searched in [fig12aLo,
// fig12aHi] to within fig12aTol. The paper's four rates (0.52-1.93 req/s)
// lie well inside; 0.01 req/s is half a percent of the smallest. Every
// rate runs the same requests, their arrivals scaled (fidScaleArrivals), to
// completion (no duration cut: a cut would drop the slowest requests of an
// overloaded run from the mean).
const (
	fig12aSLO = 0.5 // s/token
	fig12aLo  = 0.05
	fig12aHi  = 4.0
	fig12aTol = 0.01
)

// fig12a fills rep.Rates by bisection and rep.ReadOff on the paper's
// grid, one system × timing per job.
func fig12a(ctx context.Context, ps *PaperSetup, rep *PaperReport, workers int) error {
	ns, nt := len(ps.Systems), int(numTimings)
	rates, err := par.Map(ctx, ns*nt, par.Options{Workers: workers}, func(_ context.Context, i int) ([2]float64, error) {
		s, t := i/nt, FidelityTiming(i%nt)
		f := func(rate float64) (float64, error) { return rep.normAt(s, t, rate) }
		r, err := fidBisectRate(fig12aLo, fig12aHi, fig12aTol, fig12aSLO, f)
		if err != nil {
			return [2]float64{}, err
		}
		grid, ok := paperFig12aGrid[ps.Systems[s].Name]
		if !ok {
			return [2]float64{r, r}, nil
		}
		ro, err := fidPolylineRate(grid, fig12aHi, fig12aSLO, r, f)
		return [2]float64{r, ro}, err
	})
	if err != nil {
		return err
	}
	rep.Rates = make([][numTimings]float64, ns)
	rep.ReadOff = make([][numTimings]float64, ns)
	for i, r := range rates {
		rep.Rates[i/nt][i%nt] = r[0]
		rep.ReadOff[i/nt][i%nt] = r[1]
	}
	rep.Fig12a = ""
	return nil
}

// paperFig12aGrid holds, per system, the request rates at which the paper
// measured its Fig. 12a curve (OPT-13B, ShareGPT), ascending: the vertices
// of the figure's polylines in the vector figure of the paper's HTML
// version (n1-sharegpt.svg of arXiv 2309.06180v1, panel (a), as copied in
// yanheng01/yanheng01.github.io @ 3f5a0ab4; x = (vertex − 78.48) ÷
// 141.345 req/s from the axis ticks; a duplicated vertex, vLLM's two
// points at 1.5, kept once). Each polyline ends in a segment cut at the
// figure's edge, 1.62 s/token, towards one more point past the drawn
// ones: at a rate of at least paperFig12aCut. The published rates (0.52,
// 0.77, 1.10, 1.93 req/s) are where these polylines cross 0.5 s/token
// (0.5248, 0.7736, 1.0995, 1.9294: TestPaperFig12aPolylines), not where
// the measured curve does: between two measured rates the line is
// straight, and a normalized latency that grows ever faster towards
// saturation crosses 0.5 s/token later than its chord. So the page reads
// the model's curve the same way: at the paper's rates, continued at the
// last spacing (0.1, 0.15, 0.1, 0.1 req/s) to reach the next point, which
// lands on or past each cut (0.6, 0.9, 1.2, 2.1). The spacing beyond the
// drawn points is the one assumption. docs/calibrate.md, "Issue 24,
// eleventh session: the paper's Orca at its reservations".
var paperFig12aGrid = map[string][]float64{
	"orca-max":    {0.2, 0.3, 0.4, 0.5},
	"orca-pow2":   {0.25, 0.5, 0.6, 0.75},
	"orca-oracle": {0.25, 0.5, 0.75, 0.9, 1.0, 1.1},
	"vllm":        {1.0, 1.25, 1.5, 1.75, 1.8, 1.9, 2.0},
}

// paperFig12aCut is, per system, the rate at which the last segment of
// the paper's polyline leaves the figure (1.62 s/token): the next
// measured rate lies at or past it.
var paperFig12aCut = map[string]float64{
	"orca-max": 0.5912, "orca-pow2": 0.8426, "orca-oracle": 1.1484, "vllm": 2.0457,
}

// fidRates lists rates for a note: "0.2, 0.3, 0.4".
func fidRates(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strings.Join(parts, ", ")
}

// fidPolylineRate returns the rate at which the polyline through (r,
// f(r)), r the rates of grid (ascending, at least two) continued past
// the last at the last spacing up to hi, reaches target: linear between
// the two rates that bracket it, as a plotted line crosses a level; hi
// when no rate up to hi does. When f at the first rate already reaches
// target the polyline begins above the level and has no crossing to read:
// it returns below (the curve's own crossing, which a growing f has at or
// before the first rate), capped at the first rate, rather than the first
// rate, where the SLO is already missed. It evaluates f only as far as
// the crossing.
func fidPolylineRate(grid []float64, hi, target, below float64, f func(rate float64) (float64, error)) (float64, error) {
	n := len(grid)
	if n < 2 || !(grid[0] > 0) {
		return 0, fmt.Errorf("%w: fidPolylineRate: want at least two positive rates (got %v)", ErrFidelity, grid)
	}
	for i := 1; i < n; i++ {
		if !(grid[i] > grid[i-1]) {
			return 0, fmt.Errorf("%w: fidPolylineRate: rates %v not ascending", ErrFidelity, grid)
		}
	}
	step := grid[n-1] - grid[n-2]
	var pr, pv float64
	for i := 0; ; i++ {
		r := grid[min(i, n-1)]
		if i >= n {
			r += float64(i-n+1) * step
		}
		if r > hi*(1+1e-9) {
			return hi, nil
		}
		v, err := f(r)
		if err != nil {
			return r, err
		}
		if v >= target {
			if i == 0 {
				return min(below, r), nil
			}
			return pr + (r-pr)*(target-pv)/(v-pv), nil
		}
		pr, pv = r, v
	}
}

// paperRayStepNs is the paper's harness's cost a step that no release of
// vLLM has at tensor parallel 1: the paper's runs were made with cacheflow,
// vLLM before its first release (benchmark/benchmark_text_completion.py,
// the driver of the Orca runs at vllm-project/vllm@00ce7dc0, and
// benchmark/benchmark_latency.py call initialize_ray_cluster and build a
// Server whose Controller makes every worker a Ray actor, even for one
// GPU: cacheflow/worker/controller.py, then one worker.execute_stage.remote
// and ray.get a step, the step's sequence groups pickled to the actor;
// vllm-project/vllm#17's log at tensor_parallel_size 1 starts a local Ray
// instance). The stored driver of the vLLM runs (the same file at
// 49e406a6, after vllm-project/vllm#51) runs one GPU without Ray unless
// --use-ray is given, and which revision made the paper's figures is not
// stored: the term is applied to every system, and docs/calibrate.md gives
// the rows with vLLM's taken away. vLLM 0.1.x runs one GPU's worker in its
// own process (Ray only for tensor parallelism or when asked:
// vllm-project/vllm#391), which the releases' figures (Anyscale's on
// 0.1.2, premAI's on 0.2.2) confirm. The
// value is Ray's own figure for a task launch, "a high system overhead of
// over 1ms per task launch" (Ray's Compiled Graph documentation,
// ray-project/ray#49115): a lower bound, taken as it is; the pickling of
// the step's inputs, which grows with the batch, is not counted (no figure
// of it). It is not fitted: docs/calibrate.md, "Issue 24, tenth session:
// vLLM 0.1's small batches".
const paperRayStepNs = 1_000_000

// paperHarnessNote says on the page what fidPaperHarness changes.
const paperHarnessNote = "with the paper's harness instead of a release's front end: cacheflow's benchmark driver, whose Ray call to its worker " +
	"takes 1 ms a step (Ray's figure for a task launch; no release has it on one GPU) and which passes token ids in and out " +
	"in-process (no HTTP, tokenizing or streamed detokenizing: request_ns and per_token_ns 0)"

// fidPaperProfile is the joint model's profile of the systems' GPU,
// engine and release, with the paper's harness (fidPaperHarness).
func fidPaperProfile(joint *sim.JointModel, cfg sim.Config) (*sim.Profile, error) {
	v, err := sim.ParseEngineVersion(cfg.Engine, cfg.EngineVersion)
	if err != nil {
		return nil, err
	}
	p, err := joint.Profile(cfg.GPU, cfg.Engine, v)
	if err != nil {
		return nil, err
	}
	return fidPaperHarness(p), nil
}

// fidPaperHarness returns a copy of p for the paper's harness: every step
// takes paperRayStepNs longer (the Ray call, serial with the step: the
// scheduler waits on ray.get; prefill-only and idle steps included), and
// the release's front end is gone. The driver
// (benchmark_text_completion.py) adds each request's token ids to the
// server in-process, stamps its arrival with the trace's time and its
// finish right after the step that ends it; cacheflow's server keeps token
// ids and decodes none while a request runs. So no request waits on HTTP
// or tokenizing (Overhead.RequestNs) and no output token on a detokenizer
// or a response chunk (Overhead.PerTokenNs), the two costs a release's
// API server has (sim.OverheadTerm).
func fidPaperHarness(p *sim.Profile) *sim.Profile {
	q := *p
	q.Overhead.StepNs += paperRayStepNs
	q.Overhead.RequestNs, q.Overhead.PerTokenNs = 0, 0
	q.Notes = p.Notes + " The paper's setup, " + paperHarnessNote + "."
	return &q
}

// fidPaper runs every workload × system × timing model.
func fidPaper(ctx context.Context, ps *PaperSetup, joint *sim.JointModel, workers int) (*PaperReport, error) {
	if len(ps.Systems) == 0 || len(ps.Workloads) == 0 {
		return nil, fmt.Errorf("%w: paper setup %s: no systems or no workloads", ErrFidelity, ps.Scenario)
	}
	engine := ps.Systems[0].Config.Engine
	for _, sys := range ps.Systems {
		if sys.Config.Engine != engine || sys.Config.EngineVersion != ps.Systems[0].Config.EngineVersion {
			return nil, fmt.Errorf("%w: paper setup %s: system %s runs %v %s, %s runs %v %s: want one engine", ErrFidelity,
				ps.Scenario, sys.Name, sys.Config.Engine, sys.Config.EngineVersion, ps.Systems[0].Name, engine, ps.Systems[0].Config.EngineVersion)
		}
	}
	prof, err := fidPaperProfile(joint, ps.Systems[0].Config)
	if err != nil {
		return nil, fmt.Errorf("%w: paper setup %s: %w", ErrFidelity, ps.Scenario, err)
	}
	nw, ns, nt := len(ps.Workloads), len(ps.Systems), int(numTimings)
	out, err := par.Map(ctx, nw*ns*nt, par.Options{Workers: workers}, func(_ context.Context, i int) (PaperResult, error) {
		w, s, t := i/(ns*nt), i/nt%ns, FidelityTiming(i%nt)
		sys := ps.Systems[s]
		cfg := sys.Config
		p := prof
		if t == TimingRoofline {
			p = nil
		}
		res, err := fidSimulate(cfg, p, ps.Workloads[w].Requests)
		if err != nil {
			return PaperResult{}, fmt.Errorf("%w: %s, %s, %s: %w", ErrFidelity, ps.Scenario, sys.Name, t, err)
		}
		r := PaperResult{TokenStates: res.KVBreakdown.TokenStates, Internal: res.KVBreakdown.Internal, External: res.KVBreakdown.External,
			MeanBatch: res.BatchSizeMean, Completed: res.RequestsCompleted, Unfinished: res.RequestsUnfinished}
		if res.KVPoolBytes > 0 {
			r.Slots = float64(res.KVPoolBytes) / float64(cfg.Model.KVBytesPerToken(cfg.KVDType, max(cfg.TP, 1)))
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	rep := &PaperReport{Setup: ps, Results: make([][][numTimings]PaperResult, nw)}
	for w := range nw {
		rep.Results[w] = make([][numTimings]PaperResult, ns)
		for s := range ns {
			for t := range nt {
				rep.Results[w][s][t] = out[(w*ns+s)*nt+t]
			}
		}
		var in, o float64
		reqs := ps.Workloads[w].Requests
		for _, q := range reqs {
			in += float64(q.PromptTokens)
			o += float64(q.OutputTokens)
		}
		rep.MeanIn = append(rep.MeanIn, in/float64(max(len(reqs), 1)))
		rep.MeanOut = append(rep.MeanOut, o/float64(max(len(reqs), 1)))
	}
	rep.normAt = func(s int, t FidelityTiming, rate float64) (float64, error) {
		cfg := ps.Systems[s].Config
		cfg.Duration = 0
		p := prof
		if t == TimingRoofline {
			p = nil
		}
		reqs := ps.Workloads[0].Requests
		if ps.Fig12a != nil {
			reqs = fidTrace(fidScaleArrivals(ps.Fig12a, ps.Rate, rate), PaperTrace)
		} else {
			reqs = fidScaleArrivals(reqs, ps.Rate, rate)
		}
		res, err := fidSimulate(cfg, p, reqs)
		if err != nil {
			return 0, fmt.Errorf("%w: %s, %s, %s at %g req/s: %w", ErrFidelity, ps.Scenario, ps.Systems[s].Name, t, rate, err)
		}
		return res.NormalizedLatencyMean, nil
	}
	if !(ps.Rate > 0) {
		rep.Fig12a = fmt.Sprintf("the setup %s has no arrival rate to scale from", ps.Scenario)
		return rep, nil
	}
	if err := fig12a(ctx, ps, rep, workers); err != nil {
		return nil, err
	}
	return rep, nil
}

// fidBisectRate returns the lowest rate in [lo, hi] at which f(rate) reaches
// target, to within tol req/s, assuming f grows with the rate (a serving
// system's latency does, up to the noise of one sample path). It returns hi
// when f(hi) is still below target and lo when f(lo) already reaches it.
func fidBisectRate(lo, hi, tol, target float64, f func(rate float64) (float64, error)) (float64, error) {
	if !(lo > 0 && hi > lo && tol > 0) {
		return 0, fmt.Errorf("%w: fidBisectRate: want 0 < lo < hi and tol > 0 (got %g, %g, %g)", ErrFidelity, lo, hi, tol)
	}
	v, err := f(lo)
	if err != nil || v >= target {
		return lo, err
	}
	if v, err = f(hi); err != nil || v < target {
		return hi, err
	}
	// The bracket halves each time: log2((hi − lo)/tol) evaluations.
	for hi-lo > tol {
		mid := (lo + hi) / 2
		v, err := f(mid)
		if err != nil {
			return mid, err
		}
		if v >= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return (lo + hi) / 2, nil
}

// fidScaleArrivals returns reqs with arrivals at rate instead of from: one
// sample path of the arrival process for every rate, so that a bisection
// over the rate compares like with like.
func fidScaleArrivals(reqs []workload.Request, from, rate float64) []workload.Request {
	out := make([]workload.Request, len(reqs))
	k := from / rate
	for i, q := range reqs {
		q.Arrival = int64(math.Round(float64(q.Arrival) * k))
		out[i] = q
	}
	return out
}

// traceNote says which requests Fig. 12a's runs replay.
func (pr *PaperReport) traceNote() string {
	if pr.Setup.Fig12a != nil {
		return fmt.Sprintf("the requests of one draw arriving within %g h at the rate (the paper's traces, §6.1)", PaperTrace.Hours())
	}
	return "the same requests, arrivals scaled"
}

// fidTrace returns the requests of reqs that arrive before span.
func fidTrace(reqs []workload.Request, span time.Duration) []workload.Request {
	var out []workload.Request
	for _, q := range reqs {
		if q.Arrival < int64(span) {
			out = append(out, q)
		}
	}
	return out
}

// fidPaperRows fills the rows of the paper's figures from the report.
func fidPaperRows(rep *FidelityReport) {
	pr := rep.Paper
	for _, r := range rep.Rows {
		f := r.Figure
		if f.Source != paperSource {
			continue
		}
		if pr == nil {
			r.Skip = "the paper's setup was not given (FidelityOptions.Paper)"
			continue
		}
		ps := pr.Setup
		c0 := ps.Systems[0].Config
		r.Profile = fmt.Sprintf("%s %s %s", ps.GPU, c0.Engine, c0.EngineVersion)
		r.Setup = fmt.Sprintf("%s, %s on %s %s, %s", ps.Scenario, f.Setup.System, c0.Engine, c0.EngineVersion, ps.Workloads[0].Label)
		s := -1
		for i, sys := range ps.Systems {
			if sys.Name == f.Setup.System {
				s = i
			}
		}
		get := func(v func(PaperResult) float64) {
			for t := range numTimings {
				r.Value[t], r.OK[t] = v(pr.Results[0][s][t]), true
			}
		}
		switch f.Metric {
		case "dataset_mean_input_len", "dataset_mean_output_len":
			v := pr.MeanIn[0]
			if f.Metric == "dataset_mean_output_len" {
				v = pr.MeanOut[0]
			}
			r.Setup = fmt.Sprintf("%s: the sampled requests", ps.Scenario)
			for t := range numTimings {
				r.Value[t], r.OK[t] = v, true
			}
			continue
		case "normalized_latency_mean", "request_rate_at_slo":
			if pr.Fig12a != "" {
				r.Skip = pr.Fig12a
				continue
			}
		}
		if s < 0 {
			r.Skip = fmt.Sprintf("system %q is not in the paper's setup %s", f.Setup.System, ps.Scenario)
			continue
		}
		switch f.Metric {
		case "kv_token_state_share":
			get(func(p PaperResult) float64 { return 100 * p.TokenStates })
		case "kv_external_frag_share":
			// Fig. 2's "external frag. & others" holds the allocator's
			// rounding, which the breakdown counts as internal; for Orca
			// (Oracle), which over-provisions nothing, internal is that
			// rounding alone (strategy's contiguous Usage).
			if f.Setup.System != "orca-oracle" {
				r.Skip = fmt.Sprintf("the breakdown does not split %s's internal share into over-provisioning and the allocator's rounding", f.Setup.System)
				continue
			}
			get(func(p PaperResult) float64 { return 100 * (p.Internal + p.External) })
			r.Note = "the buddy's rounding (internal here) + free memory: the paper's gray share"
		case "mean_batch":
			get(func(p PaperResult) float64 { return p.MeanBatch })
			r.Note = "mean requests per step, prefill-only steps included"
		case "kv_cache_slots":
			get(func(p PaperResult) float64 { return p.Slots })
			r.Note = "paged pool ÷ KV bytes per token (memory: both timing models agree)"
		case "request_rate_at_slo":
			grid, ok := paperFig12aGrid[f.Setup.System]
			for t := range numTimings {
				r.Value[t], r.OK[t] = pr.ReadOff[s][t], true
			}
			if !ok {
				r.Note = fmt.Sprintf("bisected to ±%g req/s: %s, each run to completion", fig12aTol/2, pr.traceNote())
				break
			}
			r.Note = fmt.Sprintf("read as the paper's figure reads: where the line through the model's normalized latency at the paper's "+
				"measured rates (%s req/s, then every %.2f) crosses %g s/token; the model's own crossing, bisected to ±%g: %.4g "+
				"(roofline %.4g); %s, each run to completion",
				fidRates(grid), grid[len(grid)-1]-grid[len(grid)-2],
				fig12aSLO, fig12aTol/2, pr.Rates[s][TimingProfile], pr.Rates[s][TimingRoofline], pr.traceNote())
		case "normalized_latency_mean":
			rate := f.Setup.Workload.RequestRate
			if rate == nil || !(*rate > 0) || math.IsInf(*rate, 0) {
				r.Skip = "the figure gives no finite request rate"
				continue
			}
			for t := range numTimings {
				v, err := pr.normAt(s, FidelityTiming(t), *rate)
				if err != nil {
					r.Skip = err.Error()
					break
				}
				r.Value[t], r.OK[t] = v, true
			}
			r.Note = fmt.Sprintf("mean over requests of E2E ÷ output tokens at %g req/s: %s, run to completion", *rate, pr.traceNote())
		default:
			r.Skip = fmt.Sprintf("metric %s of the paper is not reproduced", f.Metric)
		}
	}
}
