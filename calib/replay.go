// Benchmark runs as calibration cases: the files read and hashed, each
// run's setup checked, its measured metrics taken as the client defines
// them, and its requests replayed through sim as the client sent them.
// See fit.go for the fit and metrics.go for the metrics.

package calib

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// ErrSetup is wrapped by every error about what a calibration was given:
// a run whose setup cannot be told, files that disagree, a bad option.
var ErrSetup = errors.New("bad calibration setup")

// Bounds of the inputs.
const (
	// MaxFiles bounds the files of one calibration (1,000): each run is
	// simulated once per evaluation, so more files than that would take
	// hours at the evaluation cap anyway.
	MaxFiles = 1000
	// MaxCases bounds the runs of all files together (10,000, the runs one
	// file may hold: workload.MaxBenchRuns).
	MaxCases = workload.MaxBenchRuns
	// hashPrefix is how many hex digits of a file's SHA-256 name it in
	// fitted_to: 48 bits, so two different files of one calibration share a
	// prefix with odds of about 1 in 10^14 (files² ÷ 2^49).
	hashPrefix = 12
	// maxIDBase bounds the base name in a fitted_to id (200 bytes), within
	// the 256 bytes sim.Profile allows an id.
	maxIDBase = 200
	// summaryChunkedITL is the ratio of a summary's median ITL to its
	// median TPOT above which its chunks carried several tokens: 1.5, half
	// way to the two tokens a chunk that make the gap twice a step.
	summaryChunkedITL = 1.5
	// chunkedRatio is workload's threshold (bench_quirks.go): below 0.9
	// itls gaps per output token after the first, stream chunks carried
	// several tokens and the file's ITL figures measure chunks.
	chunkedRatio = 0.9
	// summaryTolerance is how far (relative) a file's summary metric may
	// differ from the same metric recomputed from its per-request arrays
	// before the difference is reported: the files round nothing, so
	// recomputation agrees to 1e-9 (calib/README.md, surajssd); 1e-6
	// leaves room for a client that rounds to microseconds.
	summaryTolerance = 1e-6
	// summaryNoLatencyTolerance is summaryTolerance for the metrics built on
	// a request's latency (TPOT, E2E) when the file saved no latencies:
	// collect then takes the latency as ttft + Σ itls, the last chunk's
	// time, where the client's own ends after the stream does (vLLM 0.5's
	// benchmark_serving: crusoe-cookbook's unedited files differ by about
	// 1e-4 in median TPOT). 1% still flags a cut file's summary, whose
	// medians are those of other requests.
	summaryNoLatencyTolerance = 1e-2
)

// File is one benchmark result file: its runs as workload.ReadBench reads
// them and the SHA-256 of its bytes, which name it in a profile's
// fitted_to.
type File struct {
	Name   string // as given, for messages
	SHA256 string // hex digest of the whole file
	Runs   []*workload.BenchResult
}

// ReadFile reads a benchmark result file (vLLM --save-result JSON or
// SGLang bench_serving JSONL; see workload.ReadBench, whose bounds and
// errors apply) and hashes it as it reads (workload.ReadBenchDigest).
func ReadFile(r io.Reader, name string) (*File, error) {
	runs, sum, err := workload.ReadBenchDigest(r, name)
	if err != nil {
		return nil, err
	}
	return &File{Name: name, SHA256: sum, Runs: runs}, nil
}

// ID names the file in a profile's fitted_to: its base name and the first
// 12 hex digits of its SHA-256, "qps_01.json@sha256:1f2e3d4c5b6a".
func (f *File) ID() string {
	base := filepath.Base(f.Name)
	if len(base) > maxIDBase {
		base = base[:maxIDBase]
	}
	base = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, base)
	return base + "@sha256:" + f.SHA256[:hashPrefix]
}

// ReplaySetup is what a calibration replays the runs with: the engine
// configuration of the server the benchmark ran against (model, GPU,
// tensor parallelism, weight and KV types, engine, context length and the
// scheduler's limits: gpufrag calibrate builds it as gpufrag simulate
// does, scenario.EngineConfig). Each replay sets its Profile,
// MaxConcurrency and WarmPrompts.
type ReplaySetup struct {
	sim.Config
	// EngineGiven says that Config.Engine was given; when false, each
	// file's harness tells the engine (vLLM's client: vllm-v1; SGLang's:
	// sglang), and the files must agree.
	EngineGiven bool
}

// NewReplaySetup returns the setup of sim.DefaultConfig for m on g at
// tensor parallelism tp, the engine told by the files' harness.
func NewReplaySetup(m model.Model, g model.GPU, tp int) ReplaySetup {
	c := sim.DefaultConfig(m, g)
	c.TP = max(tp, 1)
	return ReplaySetup{Config: c}
}

// config is the engine configuration a run is replayed with: the setup's,
// with the profile p and the run's client cap.
func (s *ReplaySetup) config(p *sim.Profile, maxConcurrency int) sim.Config {
	c := s.Config
	c.TP = max(c.TP, 1)
	c.Profile = p
	c.MaxConcurrency = maxConcurrency
	// A benchmark client asks for each request's output as its max_tokens.
	c.ForBenchClient()
	return c
}

// ReplayConfig returns the sim.Config a calibration replays run with under the
// profile p (for checking a fitted profile the way the fit ran it).
func (s *ReplaySetup) ReplayConfig(p *sim.Profile, run *workload.BenchResult) sim.Config {
	return s.config(p, run.MaxConcurrency)
}

// harnessEngine is the engine a harness benchmarks by default.
// FilesEngine is the engine every run of files was written for, by its
// client (harnessEngine), and whether they agree; calibrate replays them
// under it unless given another.
func FilesEngine(files []*File) (sim.EngineKind, bool) {
	var e sim.EngineKind
	n := 0
	for _, f := range files {
		for _, r := range f.Runs {
			if h := harnessEngine(r.Harness); n == 0 {
				e = h
			} else if h != e {
				return e, false
			}
			n++
		}
	}
	return e, n > 0
}

func harnessEngine(h string) sim.EngineKind {
	if h == workload.HarnessSGLang {
		return sim.EngineSGLang
	}
	return sim.EngineVLLMV1
}

// measure is one metric of a run as the file gives it.
type measure struct {
	v      float64
	ok     bool   // the file gives it
	source string // "per-request arrays" or "summary"
	// excluded says why the metric is not fitted although measured ("" when
	// it is fitted).
	excluded string
}

// Case is one run of one file, ready to replay.
type Case struct {
	File    *File
	Run     *workload.BenchResult
	Holdout bool // evaluated with the fitted profile, not fitted to
	// Requests is the run's trace, drawn (where it draws) with the run's
	// seed; Variants[0] is Requests and Variants[1:] the same run drawn
	// with the next seeds, when its arrivals or lengths are drawn (nil
	// otherwise): the spread of their metrics is the comparison's noise
	// (noise.go).
	Requests []workload.Request
	Variants [][]workload.Request
	measured [numMetrics]measure
	// Excluded says why none of the run's metrics are fitted ("" when
	// some are); the run is still simulated and reported.
	Excluded string
	// Warm is true when the run is replayed with its prompts in the prefix
	// cache (FitOptions.Warm); WarmReason says why, or why not (warm.go).
	Warm       bool
	WarmReason string
	warnCold   bool     // cold although an earlier run sent the same lengths: warned
	Warnings   []string // full sentences, each starting with the file's name (and run)
}

// where names the run in messages: "FILE" or "FILE: run 3 of 7".
func (c *Case) where() string {
	if c.Run.Runs > 1 {
		return fmt.Sprintf("%s: run %d of %d", c.File.Name, c.Run.Run, c.Run.Runs)
	}
	return c.File.Name
}

func (c *Case) warn(format string, args ...any) {
	c.Warnings = append(c.Warnings, c.where()+": "+fmt.Sprintf(format, args...))
}

// newCase checks run's setup and builds its case, with variants drawn
// with the next variants−1 seeds when the run's trace depends on its seed.
// An error names the file, the run and the missing field, and says which
// flag or client option supplies it.
func newCase(f *File, run *workload.BenchResult, holdout bool, variants int) (*Case, error) {
	c := &Case{File: f, Run: run, Holdout: holdout}
	tr, err := run.Trace()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	c.Requests = tr.Requests
	c.Warnings = append(c.Warnings, tr.Warnings...)
	c.Variants = [][]workload.Request{c.Requests}
	for k := 1; k < variants; k++ {
		other := *run // the arrays are shared read-only; Trace does not change the run
		other.Seed = run.Seed + uint64(k)
		t2, err := other.Trace()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		if k == 1 && sameTimesAndLengths(t2.Requests, c.Requests) {
			break // nothing is drawn: every seed gives this trace
		}
		c.Variants = append(c.Variants, t2.Requests)
	}
	c.measure()
	return c, nil
}

// sameTimesAndLengths reports whether two traces of one run send the same
// requests at the same times.
func sameTimesAndLengths(a, b []workload.Request) bool {
	return slices.EqualFunc(a, b, func(x, y workload.Request) bool {
		return x.Arrival == y.Arrival && x.PromptTokens == y.PromptTokens && x.OutputTokens == y.OutputTokens && x.N == y.N
	})
}

// measure fills c.measured: the client's metrics from the run's
// per-request arrays when it has them (they are what is replayed), else
// the file's summary, and the exclusions of the quirks that corrupt one.
func (c *Case) measure() {
	r := c.Run
	pr, arrays := collect(r)
	var mismatch []string
	for _, m := range Metrics() {
		ms := &c.measured[m]
		sv, sok := r.Metrics[benchMetric[m]]
		switch {
		case arrays && m != OutputThroughput:
			ms.v, ms.ok = pr.value(m)
			ms.source = "per-request arrays"
			tol := summaryTolerance
			if (m == MedianTPOT || m == MedianE2E) && r.Detail&workload.DetailLatencies == 0 {
				tol = summaryNoLatencyTolerance
			}
			if ms.ok && sok && math.Abs(ms.v-sv) > tol*math.Max(math.Abs(sv), 1e-9) {
				mismatch = append(mismatch, fmt.Sprintf("%s %.6g (arrays %.6g)", benchMetric[m].Keys()[0], scale(m, sv), scale(m, ms.v)))
			}
		case sok:
			ms.v, ms.ok, ms.source = sv, true, "summary"
		}
	}
	if len(mismatch) > 0 {
		c.warn("the file's summary metrics differ from those its per-request arrays give (a cut or edited file?): %s; "+
			"the arrays are what is replayed, so their figures are the measurements", strings.Join(mismatch, ", "))
	}
	tp := &c.measured[OutputThroughput]
	if arrays && tp.ok && r.TotalOutputTokens >= 0 && pr.outputs != r.TotalOutputTokens {
		tp.excluded = fmt.Sprintf("the per-request arrays hold %d output tokens of the file's total_output_tokens %d, "+
			"so the file's duration is not theirs (a cut file?)", pr.outputs, r.TotalOutputTokens)
	}
	if arrays && pr.gapTokens > 0 && float64(pr.gaps) < chunkedRatio*float64(pr.gapTokens) {
		c.measured[MedianITL].excluded = fmt.Sprintf("stream chunks carried several tokens (%d gaps for %d tokens), so ITL measures chunks",
			pr.gaps, pr.gapTokens)
	}
	// A summary without the arrays cannot count its chunks, but a chunk of
	// k tokens makes a gap about k decode steps long: with one token a
	// chunk the median gap is at most about the median TPOT (stalls
	// lengthen a few gaps and every mean), so one well above it says the
	// chunks carried several.
	itl, tpot := c.measured[MedianITL], c.measured[MedianTPOT]
	if !arrays && itl.ok && tpot.ok && tpot.v > 0 && itl.v > summaryChunkedITL*tpot.v && itl.excluded == "" {
		c.measured[MedianITL].excluded = fmt.Sprintf("the file's median ITL is %.2f times its median TPOT: its stream chunks carried several "+
			"tokens, so ITL measures chunks", itl.v/tpot.v)
	}
	if z := noTextRequests(r); z > 0 {
		why := fmt.Sprintf("%d successful requests have output_lens 0: their client-side TTFT and latency are not an engine's "+
			"(the replay runs them as prefill-only)", z)
		for _, m := range []Metric{MedianTTFT, P99TTFT, MedianE2E} {
			c.measured[m].excluded = why
		}
	}
	if failed := countFailed(r); failed > 0 {
		c.warn("%d failed requests are replayed as prefill-only requests (the client sent them); with no first token they are "+
			"left out of the simulated TTFT percentiles, as the file's leave them out, but the simulated E2E counts them and the file's does not", failed)
	}
}

// scale converts a metric's value to the unit the files write (ms for
// latencies).
func scale(m Metric, v float64) float64 {
	if m.Latency() {
		return v * 1e3
	}
	return v
}

func countFailed(r *workload.BenchResult) int {
	n := 0
	for _, q := range r.Requests {
		if q.Failed() {
			n++
		}
	}
	return n
}

// checkPrefill excludes the run when its first tokens came sooner than any
// engine could have computed its prompts: for the requests whose first
// token arrived by time t, the prompt FLOPs of all of them must fit in
// peak FLOP/s × (t − the earliest of their arrivals) on each GPU of the
// group. A run that breaks this bound (even at the datasheet peak, with
// attention left out) had its prompts served from a prefix cache, most
// often because the same prompts were sent to a server with
// --enable-prefix-caching before; the replay would compute prefills the
// engine skipped, so none of its metrics measure what the simulator
// models. Only runs whose arrivals are the client's own are checked (all
// at once at an infinite rate, or start_times); drawn Poisson arrivals are
// not the client's draws.
func (c *Case) checkPrefill(shape sim.Shape, peakFLOPS float64) {
	r := c.Run
	if r.Detail&workload.DetailTTFTs == 0 || r.Detail&workload.DetailLens == 0 {
		return
	}
	known := r.Detail&workload.DetailStartTimes != 0
	if !known && !(math.IsInf(r.RequestRate, 1) && r.MaxConcurrency == 0) {
		return
	}
	type req struct {
		arrival, first, flops float64
		tokens                int
	}
	var reqs []req
	for _, q := range r.Requests {
		if q.Failed() || q.TTFT <= 0 {
			continue
		}
		a := 0.0
		if known {
			a = q.Start - q.Queue
		}
		reqs = append(reqs, req{a, a + q.TTFT, float64(q.InputTokens) * shape.LinearFLOPsPerToken, q.InputTokens})
	}
	slices.SortStableFunc(reqs, func(x, y req) int { return cmp.Compare(x.first, y.first) })
	var (
		sum, worst, worstSpan float64
		earliest              = math.Inf(1)
		count, tokens, worstT int
	)
	for i, q := range reqs {
		sum += q.flops
		tokens += q.tokens
		earliest = math.Min(earliest, q.arrival)
		span := q.first - earliest
		if span <= 0 {
			continue
		}
		if need := sum / (peakFLOPS * span); need > worst {
			worst, worstSpan, count, worstT = need, span, i+1, tokens
		}
	}
	if worst > 1 {
		c.Excluded = fmt.Sprintf("its first tokens came sooner than any engine could compute its prompts: %d requests had theirs "+
			"within %.3g s, but their %d prompt tokens take %.2f times that at the GPU's peak FLOP/s, so the prompts were served "+
			"from a prefix cache (the same prompts sent before to a server with prefix caching on?); the run is reported, not fitted "+
			"(pass --warm-prompts all to replay the runs with their prompts cached)", count, worstSpan, worstT, worst)
		c.warn("%s", c.Excluded)
	}
}

// maxEcho is how much of an input value a message quotes (64 bytes, as
// internal/untrusted.Quote: docs/architecture.md, "Untrusted input").
const maxEcho = 64

// clipLabel cuts an echoed value to maxEcho bytes, saying how long it was.
func clipLabel(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:maxEcho], len(s))
}
