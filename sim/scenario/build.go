// Build: from a scenario to requests and engine configs.
// See scenario.go for the overview.

package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// RNG streams, one per use, so adding a use never changes another's draws.
const (
	streamArrivals = 1
	streamLengths  = 2
	streamSessions = 3
	streamBeam     = 4
)

// Plan is a built scenario: the requests and one engine config per run.
type Plan struct {
	Model    model.Model
	GPU      model.GPU
	Requests []workload.Request
	Configs  []sim.Config
	// Source describes the workload in one line ("trace conv.csv (azure,
	// 19,366 requests)", "1,234 generated chat requests").
	Source   string
	Skipped  int      // bad rows skipped in a trace
	Warnings []string // from reading the trace
	// Dropped says in one line what the trace reader left out (bad rows
	// skipped, rows without a timestamp, a MaxRows stop); empty when
	// nothing was (workload.Trace.Summary).
	Dropped string
	// ProfileFrom says where every config's Profile was read from: the
	// file's path as opened, or "embedded"; empty when there is none (the
	// roofline).
	ProfileFrom string
	// Bench is the benchmark run a vllm-bench trace was made from (its
	// measured figures go beside the simulated ones in the Report); nil
	// for other workloads.
	Bench *workload.BenchResult
	// DrawnFrom is the seed the trace's arrivals were drawn from
	// (workload.Trace.DrawnFrom): a benchmark run that saved no send
	// times, one draw of many; nil otherwise.
	DrawnFrom *uint64
	// benchLeftOut counts the benchmark run's requests the replay left out
	// (workload.trace.max_rows).
	benchLeftOut int
}

// Opener opens a trace file named in a scenario (the CLI passes os.Open
// wrapped so the core does no I/O of its own).
type Opener func(name string) (io.ReadCloser, error)

// Build validates s and turns it into a Plan. An error about a field of a
// scenario that Read read names the file and the field's line
// (Scenario.File), unless a flag set the field (Scenario.Override).
func Build(s *Scenario, open Opener) (*Plan, error) {
	p, err := build(s, open)
	if err != nil {
		return nil, s.locate(err)
	}
	return p, nil
}

// EngineConfig returns the engine configuration every run of s shares:
// sim.DefaultConfig for s's model and GPU with s's tp, dtypes, engine and
// its settings (the V0 engine's and SGLang's chunked-prefill defaults included), without
// a profile, runs or workload, which Build adds. gpufrag calibrate replays
// benchmark runs on it, so that it describes a setup as simulate does. An
// error is Build's about the same field.
func EngineConfig(s *Scenario) (sim.Config, error) {
	c, err := engineConfig(s)
	if err != nil {
		return sim.Config{}, s.locate(err)
	}
	return c, nil
}

func engineConfig(s *Scenario) (sim.Config, error) {
	bad := func(field, format string, args ...any) (sim.Config, error) {
		return sim.Config{}, badField(field, format, args...)
	}
	if s.Model == "" {
		return bad("model", "missing (a preset such as llama-3.1-8b, or a path to config.json)")
	}
	m, err := model.Load(s.Model)
	if err != nil {
		return bad("model", "%w", err) // names the model and, for a config.json, the file and field
	}
	if s.GPU == "" {
		return bad("gpu", "missing (one of %s)", strings.Join(model.GPUNames(), ", "))
	}
	g, err := model.LookupGPU(s.GPU)
	if err != nil {
		return bad("gpu", "%w", err)
	}
	base := sim.DefaultConfig(m, g)
	// The settings sim.New would refuse on their own are refused here,
	// naming the field (and so the file's line), not by each run as a
	// "bad config" of the engine's.
	if s.TP < 0 {
		return bad("tp", "%d: want a number of GPUs, 1 or more (absent or 0: 1)", s.TP)
	}
	if s.TP != 0 {
		base.TP = s.TP
	}
	if err := m.ValidateTP(max(base.TP, 1)); err != nil {
		return bad("tp", "%v", err)
	}
	if s.KVDType != "" {
		if base.KVDType, err = model.ParseKVDType(s.KVDType); err != nil {
			return bad("kv_dtype", "%v", err)
		}
	}
	if s.WeightDType != "" {
		if base.WeightDType, err = model.ParseDType(s.WeightDType); err != nil {
			return bad("weight_dtype", "%v", err)
		}
	}
	if s.Unquantized != "" {
		if base.Unquantized, err = model.ParseUnquantized(s.Unquantized); err != nil {
			return bad("unquantized", "%v", err)
		}
		w := cmp.Or(base.WeightDType, m.WeightDType)
		if w.Bits() >= 16 {
			return bad("unquantized", "%s names what quantized weights keep in 16 bits, but the weights are %v: give weight_dtype (--weight-dtype) fp8, int8 or int4, or drop unquantized",
				s.Unquantized, w)
		}
		q := m
		q.WeightDType, q.Unquantized = w, base.Unquantized
		if err := q.Validate(); err != nil {
			return bad("unquantized", "%v", err)
		}
	}
	base.Duration = int64(s.Duration)
	e := s.Engine
	if e.Name != "" {
		if base.Engine, err = sim.ParseEngine(e.Name); err != nil {
			return bad("engine.name", "%q: want one of %s", e.Name, strings.Join(sim.EngineNames(), ", "))
		}
	}
	if e.Version != "" {
		v, err := sim.ParseEngineVersion(base.Engine, e.Version)
		if err != nil {
			hint := ""
			if _, v0 := sim.ParseEngineVersion(sim.EngineVLLMV0, e.Version); base.Engine == sim.EngineVLLMV1 && v0 == nil {
				hint = " (engine.name vllm-v0, --engine vllm-v0)"
			}
			return bad("engine.version", "%s%s", strings.TrimPrefix(err.Error(), sim.ErrBadConfig.Error()+": "), hint)
		}
		base.EngineVersion = v.String()
	}
	if e.MixedChunk && base.Engine != sim.EngineSGLang {
		return bad("engine.mixed_chunk", "is SGLang's --enable-mixed-chunk: it needs engine.name sglang, not %v", base.Engine)
	}
	base.MixedChunk = e.MixedChunk
	if e.SchedulerSteps < 0 {
		return bad("engine.num_scheduler_steps", "%d is negative (0 or 1: multi-step scheduling off)", e.SchedulerSteps)
	}
	if e.SchedulerSteps > 1 && base.Engine != sim.EngineVLLMV0 {
		return bad("engine.num_scheduler_steps", "is vLLM V0's --num-scheduler-steps: it needs engine.name vllm-v0, not %v", base.Engine)
	}
	base.SchedulerSteps = e.SchedulerSteps
	if u := e.GPUMemoryUtilization; u != 0 {
		if !(u > 0 && u <= 1) {
			return bad("engine.gpu_memory_utilization", "%v: want the share of the GPU's memory the engine may use, above 0 and at most 1, as vLLM's (absent or 0: %v)",
				u, base.GPUMemoryUtilization)
		}
		base.GPUMemoryUtilization = u
	}
	for _, x := range []struct {
		field     string
		v         int
		what, def string
	}{{"engine.max_batch_tokens", e.MaxBatchTokens, "a number of tokens", map[bool]string{false: fmt.Sprint(base.MaxBatchTokens), true: "SGLang's chunk for the GPU"}[base.Engine == sim.EngineSGLang]},
		{"engine.max_seqs", e.MaxSeqs, "a number of requests", fmt.Sprint(base.MaxSeqs)},
		{"engine.max_context", e.MaxContext, "a number of tokens", fmt.Sprintf("the model's, %d", m.MaxContext)}} {
		if x.v < 0 {
			return bad(x.field, "%d: want %s, 1 or more (absent or 0: %s)", x.v, x.what, x.def)
		}
	}
	if e.MaxTokens < 0 {
		return bad("engine.max_tokens", "%d: want a number of tokens, 1 or more (absent or 0: max_context − prompt)", e.MaxTokens)
	}
	if e.MaxBatchTokens != 0 {
		base.MaxBatchTokens = e.MaxBatchTokens
	}
	if e.MaxSeqs != 0 {
		base.MaxSeqs = e.MaxSeqs
	}
	// SGLang sizes its prefill chunk by the GPU's memory and the TP degree
	// when the user leaves it unset (sim.SGLangDefault cites the releases):
	// 2,048 tokens below 35 GiB, 4,096 below 60 GiB; 0 before 0.2.13,
	// whose chunked prefill was off by default.
	sglChunk := 0
	if base.Engine == sim.EngineSGLang {
		v := sim.DefaultEngineVersion(base.Engine)
		if base.EngineVersion != "" {
			v, _ = sim.ParseEngineVersion(base.Engine, base.EngineVersion) // parsed above
		}
		sglChunk = sim.SGLangDefault(v, g.Capacity, max(base.TP, 1)).ChunkedPrefill
	}
	switch {
	case e.ChunkedPrefill != nil:
		base.ChunkedPrefill = *e.ChunkedPrefill
	case base.Engine == sim.EngineVLLMV0 && cmp.Or(e.MaxContext, m.MaxContext) <= v0ChunkedPrefillContext:
		// vLLM V0 turned chunked prefill on by default only for models of
		// more than 32K context (EngineArgs' use_long_context); below, its
		// steps were prefill-only, as the vLLM paper's.
		base.ChunkedPrefill = false
	case base.Engine == sim.EngineSGLang && sglChunk == 0:
		base.ChunkedPrefill = false
	}
	// Multi-step scheduling's release and chunked prefill, now that both
	// are settled (V0's chunked prefill by the context, above), refused
	// here naming the field rather than by each run's sim.New.
	if base.SchedulerSteps > 1 {
		v, _ := sim.ParseEngineVersion(base.Engine, base.EngineVersion) // parsed above
		if err := sim.SchedulerStepsError(base.SchedulerSteps, base.Engine, v, base.ChunkedPrefill); err != nil {
			hint := ""
			if base.ChunkedPrefill {
				hint = " (engine.chunked_prefill false, --chunked-prefill=false)"
			}
			return bad("engine.num_scheduler_steps", "%v%s", err, hint)
		}
	}
	if e.MaxBatchTokens == 0 && base.ChunkedPrefill && sglChunk > 0 {
		// With chunked prefill off there is no chunk: the step budget
		// stays (the engine raises it to the context, sim.New).
		base.MaxBatchTokens = sglChunk
	}
	if e.Activations != nil {
		base.Activations = *e.Activations
	}
	if e.PrefixCaching != nil {
		base.PrefixCaching = *e.PrefixCaching
	}
	if e.Defrag != "" {
		if base.Defrag.Policy, err = sim.ParseDefragPolicy(e.Defrag); err != nil {
			return bad("engine.defrag", "%v", err)
		}
	}
	if e.OnOOM != "" {
		if base.OnOOM, err = sim.ParseOnOOM(e.OnOOM); err != nil {
			return bad("engine.on_oom", "%v", err)
		}
	}
	base.MaxContext, base.MaxTokens = e.MaxContext, e.MaxTokens
	return base, nil
}

func build(s *Scenario, open Opener) (*Plan, error) {
	bad := func(field, format string, args ...any) (*Plan, error) {
		return nil, badField(field, format, args...)
	}
	base, err := engineConfig(s)
	if err != nil {
		return nil, err
	}
	m, g := base.Model, base.GPU
	if len(s.Runs) == 0 {
		return bad("runs", "no KV strategy × allocator runs to compare")
	}
	if len(s.Runs) > MaxRuns {
		return bad("runs", "%d runs, more than %d (scenario.MaxRuns): each run simulates the whole workload again", len(s.Runs), MaxRuns)
	}
	p := &Plan{Model: m, GPU: g}
	if base.Profile, p.ProfileFrom, err = LoadProfile(s, g, base.Engine, base.EngineVersion, open); err != nil {
		return nil, err
	}
	if base.Profile == nil && base.SchedulerSteps > 1 {
		// sim.Config.SchedulerSteps spreads a profile's host time; the
		// roofline's fixed step overhead is not spread, so the setting
		// would be reported and change nothing.
		return bad("engine.num_scheduler_steps", "%d spreads the host's time of a step-time profile over the decode steps; the roofline (profile %s) has none to spread: use profile %s or a profile file, or drop it",
			base.SchedulerSteps, ProfileRoofline, ProfileJoint)
	}
	for i, r := range s.Runs {
		c := base
		c.KV, c.Alloc = r.KV.Spec, r.Alloc.Spec
		if c.KV.IsZero() || c.Alloc.IsZero() {
			return bad(fmt.Sprintf("runs[%d]", i), "needs both kv and alloc")
		}
		if r.OnOOM != "" {
			if c.OnOOM, err = sim.ParseOnOOM(r.OnOOM); err != nil {
				return bad(fmt.Sprintf("runs[%d].on_oom", i), "%v", err)
			}
		}
		// The specs were parsed as the scenario was read (Run); the pair
		// is checked here, once, before the workload is read, naming the
		// run. sim.New trusts the plan.
		if err := strategy.CheckPair(c.KV, c.Alloc); err != nil {
			return nil, badField(fmt.Sprintf("runs[%d]", i), "%w", err)
		}
		p.Configs = append(p.Configs, c)
	}
	if err := p.requests(s, base, open); err != nil {
		return nil, err
	}
	limit := 0
	if p.Bench != nil {
		limit = p.Bench.MaxConcurrency
	}
	if mc := s.Workload.MaxConcurrency; mc != nil {
		if *mc < 0 {
			return bad("workload.max_concurrency", "%d is negative (0: no cap)", *mc)
		}
		limit = *mc
	}
	for i := range p.Configs {
		p.Configs[i].MaxConcurrency = limit
		if p.Bench != nil {
			// The benchmark's client sent each request's output length as
			// its max_tokens, as calibrate replays the file.
			p.Configs[i].ForBenchClient()
		}
		if s.Workload.WarmPrompts {
			if !p.Configs[i].PrefixCaching {
				return bad("workload.warm_prompts", "the prompts can start in the prefix cache only with engine.prefix_caching on")
			}
			p.Configs[i].WarmPrompts = true
		}
	}
	return p, nil
}

// v0ChunkedPrefillContext is the longest max_model_len for which vLLM V0
// left chunked prefill off by default (32K: vllm/engine/arg_utils.py,
// use_long_context = max_model_len > 32K).
const v0ChunkedPrefillContext = 32 * 1024

// requests fills p.Requests from s.Workload.
func (p *Plan) requests(s *Scenario, c sim.Config, open Opener) error {
	w := s.Workload
	n := 0
	for _, x := range []bool{w.Trace != nil, w.Requests != nil, w.Sessions != nil} {
		if x {
			n++
		}
	}
	if n != 1 {
		return badField("workload", "want exactly one of trace, requests and sessions (got %d)", n)
	}
	rng := func(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(s.Seed, stream)) }
	var t *workload.Trace
	var err error
	switch {
	case w.Trace != nil:
		t, err = p.readTrace(w.Trace, rng(streamArrivals), open)
	case w.Requests != nil:
		t, err = genRequests(w.Requests, int64(s.Duration), rng(streamArrivals), rng(streamLengths))
	default:
		t, err = genSessions(w.Sessions, int64(s.Duration), rng(streamSessions))
	}
	if err != nil {
		return err
	}
	if w.Bucket < 0 || w.Bucket > workload.MaxTokens {
		return badField("workload.bucket", "%d: want a multiple to round prompts up to, 1 to %d tokens (workload.MaxTokens; 0 turns bucketing off)", w.Bucket, workload.MaxTokens)
	}
	for i, b := range w.Beam {
		if b < 1 || b > workload.MaxN {
			return badField(fmt.Sprintf("workload.beam[%d]", i), "%d: want a width from 1 to %d (workload.MaxN)", b, workload.MaxN)
		}
	}
	if w.Bucket > 0 {
		if err := workload.Bucket(t, w.Bucket); err != nil {
			return badField("workload.bucket", "%w", err)
		}
	}
	if len(w.Beam) > 0 {
		if err := workload.VaryBeam(t, w.Beam, rng(streamBeam)); err != nil {
			return badField("workload.beam", "%w", err)
		}
	}
	p.Requests = t.Requests
	if w.Trace == nil {
		p.Source = fmt.Sprintf("%d generated %s", len(t.Requests), map[bool]string{true: "chat turns", false: "requests"}[w.Sessions != nil])
	}
	return nil
}

func (p *Plan) readTrace(tr *Trace, rng *rand.Rand, open Opener) (*workload.Trace, error) {
	if !(tr.Rate >= 0) || math.IsInf(tr.Rate, 0) {
		return nil, badField("workload.trace.rate", "%v: want a positive number of requests per second (absent or 0: the file's own arrival times)", tr.Rate)
	}
	t, _, err := readTrace(tr, open, false)
	if err != nil {
		return nil, err
	}
	p.Skipped, p.Warnings, p.Dropped = t.Skipped, t.Warnings, t.Summary()
	p.Bench, p.DrawnFrom, p.benchLeftOut = t.Bench, t.DrawnFrom, t.LeftOut
	switch {
	case t.Timed && tr.Rate > 0:
		if err := workload.Rescale(t, tr.Rate); err != nil {
			return nil, badField("workload.trace.rate", "%w", err)
		}
	case !t.Timed:
		if !(tr.Rate > 0) {
			return nil, badField("workload.trace", "%s (%s) has no arrival times; give a rate (--rate) for Poisson arrivals",
				tr.File, t.Format)
		}
		if err := checkSpan("workload.trace.rate", tr.Rate, len(t.Requests), "the trace's "+human.Count(int64(len(t.Requests)), "request"), "requests"); err != nil {
			return nil, err
		}
		ap, err := workload.Poisson(tr.Rate, rng)
		if err != nil {
			return nil, badField("workload.trace.rate", "%w", err)
		}
		if err := workload.AssignArrivals(t, ap); err != nil {
			return nil, err
		}
	}
	p.Source = fmt.Sprintf("trace %s (%s, %s)", tr.File, t.Format, human.Count(int64(len(t.Requests)), "request"))
	return t, nil
}

// ReadTrace reads the trace file a workload.trace section names through
// open, with the SHA-256 of the whole file (workload.ReadDigest): the one
// way in for a trace file, for Build and for advise --trace. The section's
// file, format, run and row options are checked here, with errors that
// name its fields; arrival times are left as the file has them (Build
// rescales them to the section's rate or draws Poisson ones; advise's
// search rescales them itself).
func ReadTrace(tr *Trace, open Opener) (*workload.Trace, string, error) {
	return readTrace(tr, open, true)
}

// readTrace is ReadTrace; without digest (Build's case) it reads no
// further than the reader needs and returns no digest.
func readTrace(tr *Trace, open Opener, digest bool) (*workload.Trace, string, error) {
	if tr.File == "" {
		return nil, "", badField("workload.trace.file", "missing")
	}
	f, err := workload.ParseFormat(tr.Format)
	if err != nil {
		return nil, "", badField("workload.trace.format", "%w", err)
	}
	if open == nil {
		return nil, "", badField("workload.trace", "no way to open %s", tr.File)
	}
	rc, err := open(tr.File)
	if err != nil {
		return nil, "", badField("workload.trace.file", "%w", err)
	}
	defer rc.Close()
	if tr.MaxRows < 0 {
		return nil, "", badField("workload.trace.max_rows", "%d is negative: want a number of requests to read (absent or 0: every row)", tr.MaxRows)
	}
	if tr.Run < 0 {
		return nil, "", badField("workload.trace.run", "%d is negative (1 is a file's first run; 0 reads a file of one run)", tr.Run)
	}
	if tr.Run != 0 && f != workload.Auto && f != workload.VLLMBench {
		return nil, "", badField("workload.trace.run", "%d, but only benchmark result files (format vllm-bench) hold runs, not %s", tr.Run, f)
	}
	if tr.ArrivalSeed != nil && f != workload.Auto && f != workload.VLLMBench {
		return nil, "", badField("workload.trace.arrival_seed", "%d, but only benchmark result files (format vllm-bench) draw their arrivals from a seed, not %s", *tr.ArrivalSeed, f)
	}
	opts := workload.ReadOptions{SkipBadRows: tr.SkipBadRows, MaxRows: tr.MaxRows, Run: tr.Run, ArrivalSeed: tr.ArrivalSeed}
	var t *workload.Trace
	var sum string
	if digest {
		t, sum, err = workload.ReadDigest(rc, tr.File, f, opts)
	} else {
		t, err = workload.Read(rc, tr.File, f, opts)
	}
	if err != nil {
		var we *workload.Error
		if tr.ArrivalSeed != nil && errors.Is(err, workload.ErrConfig) && strings.Contains(err.Error(), "arrival seed ") {
			// The reader names its option; say which field sets it here.
			return nil, "", fmt.Errorf("%w (workload.trace.arrival_seed, --arrival-seed N; a trace without times takes Poisson arrivals at --rate, drawn from --seed)", err)
		}
		if tr.Run != 0 && errors.Is(err, workload.ErrConfig) && strings.Contains(err.Error(), "only benchmark result files (vllm-bench) hold runs") {
			return nil, "", fmt.Errorf("%w (workload.trace.run, --run N)", err)
		}
		if errors.As(err, &we) && errors.Is(err, workload.ErrConfig) {
			// The reader names its option (ReadOptions.Run); say which
			// field sets it here.
			return nil, "", fmt.Errorf("%w (workload.trace.run, --run N)", err)
		}
		return nil, "", err
	}
	return t, sum, nil
}

// checkSpan refuses a rate at which n arrivals drawn at random would not
// fit the simulated clock (workload.MinRate), naming field; what names
// the arrivals ("the trace's 1,000 requests").
func checkSpan(field string, rate float64, n int, what, unit string) error {
	lo := workload.MinRate(n)
	if rate >= lo {
		return nil
	}
	years := float64(n-1) / rate / (365.25 * 86400)
	over := fmt.Sprintf("about %.3g years", years)
	if math.IsInf(years, 1) {
		over = "more years than a float holds"
	}
	return badField(field, "%g %s per second: %s would arrive over %s, past the %.2g years a run's drawn arrivals may span "+
		"(workload.MaxArrivalSpan, a 64th of the %.0f years the simulated clock holds); give at least %.2g %s per second",
		rate, unit, what, over, float64(workload.MaxArrivalSpan)/1e9/(365.25*86400), float64(workload.MaxArrival)/1e9/(365.25*86400), lo, unit)
}

// maxGenerated bounds generated workloads: at most a million requests, for
// sessions counted at their mean number of turns before any is made. The
// bound is on memory: the default long-context chat scenario run for 200 h
// (119,789 requests, contexts to 100K tokens with their prefix ids) peaks
// at 460 MB RSS (`/usr/bin/time -f %M gpufrag simulate --duration 200h --kv
// paged:16`), about 3.5 KB per request, so a million are about 3.5 GB. The
// longest shipped experiment (a week of chat at 0.03 sessions/s) makes
// about 200,000. Before this bound, sessions were bounded at 10 million
// (about 85 million requests): --duration 100000h passed 23 GB.
const maxGenerated = 1_000_000

func genRequests(r *Requests, duration int64, arr, lens *rand.Rand) (*workload.Trace, error) {
	const f = "workload.requests."
	switch {
	case r.Rate == 0:
		return nil, badField(f+"rate", "missing: want a positive number of requests per second")
	case !(r.Rate > 0) || math.IsInf(r.Rate, 0):
		return nil, badField(f+"rate", "%v: want a positive number of requests per second", r.Rate)
	case r.CV != 0 && !(r.CV >= 0.01 && r.CV <= 100):
		return nil, badField(f+"cv", "%v: want a coefficient of variation of the gaps from 0.01 to 100 (1 or absent: Poisson; above 1: bursty)", r.CV)
	case r.Count < 0:
		return nil, badField(f+"count", "%d is negative: want a number of requests (absent or 0: enough to fill duration)", r.Count)
	}
	// With a count, the arrivals run on until the last (without one, the
	// duration ends them).
	if err := checkSpan(f+"rate", r.Rate, r.Count, "the "+human.Count(int64(r.Count), "request")+" of workload.requests.count", "requests"); err != nil {
		return nil, err
	}
	cv := r.CV
	if cv == 0 {
		cv = 1
	}
	var ap workload.ArrivalProcess
	var err error
	if cv == 1 {
		ap, err = workload.Poisson(r.Rate, arr)
	} else {
		ap, err = workload.Gamma(r.Rate, cv, arr)
	}
	if err != nil {
		return nil, badField("workload.requests", "%w", err)
	}
	if err := r.Prompt.check("workload.requests.prompt", 1); err != nil {
		return nil, err
	}
	if err := r.Output.check("workload.requests.output", 0); err != nil {
		return nil, err
	}
	if r.Count == 0 && duration == 0 {
		return nil, badField("workload.requests.count", "give a count or a duration (duration: 30m) for requests to arrive in at the rate")
	}
	if r.Count > maxGenerated || (r.Count == 0 && r.Rate*float64(duration)/1e9 > maxGenerated) {
		return nil, badField("workload.requests", "about %.3g requests is more than %d; lower the rate, the duration or the count",
			max(float64(r.Count), r.Rate*float64(duration)/1e9), maxGenerated)
	}
	t := &workload.Trace{Name: "generated", Format: workload.JSONL, Timed: true}
	var at int64
	for i := 0; r.Count == 0 || i < r.Count; i++ {
		if i > 0 {
			at = min(at+ap.Gap(), workload.MaxArrival) // a gap is at most MaxArrival/2: no overflow
		}
		if r.Count == 0 && at >= duration {
			break
		}
		if i >= maxGenerated {
			return nil, badField("workload.requests", "more than %d requests; lower the rate or the duration", maxGenerated)
		}
		t.Requests = append(t.Requests, workload.Request{ID: fmt.Sprintf("g%d", i), Arrival: at,
			PromptTokens: r.Prompt.draw(lens), OutputTokens: r.Output.draw(lens), N: 1})
	}
	return t, nil
}

func (d Dist) check(field string, lo int) error {
	switch d.Dist {
	case "", "uniform", "loguniform", "fixed", "lognormal":
	default:
		return badField(field+".dist", "%q: want uniform, loguniform, fixed or lognormal", d.Dist)
	}
	if d.Dist != "lognormal" && (d.Mu != 0 || d.Sigma != 0) {
		return badField(field, "mu and sigma belong to dist lognormal")
	}
	hi := d.Max
	if d.Dist == "fixed" {
		hi = d.Min
	}
	if d.Min < lo || hi < d.Min || hi > workload.MaxTokens {
		return badField(field, "want %d ≤ min ≤ max ≤ %d (got min %d, max %d)", lo, workload.MaxTokens, d.Min, d.Max)
	}
	if d.Dist == "loguniform" && d.Min < 1 {
		return badField(field, "loguniform needs min ≥ 1")
	}
	if d.Dist == "lognormal" {
		if !(d.Sigma > 0) || d.Sigma > 10 || math.IsNaN(d.Mu) || math.Abs(d.Mu) > 20 {
			return badField(field, "lognormal wants 0 < sigma ≤ 10 and |mu| ≤ 20 (ln tokens; got mu %g, sigma %g)", d.Mu, d.Sigma)
		}
		if p := d.inRange(); p < minLogNormalMass {
			return badField(field, "only %.2g of lognormal(mu %g, sigma %g) falls in [%d, %d]; move mu or widen the range",
				p, d.Mu, d.Sigma, d.Min, d.Max)
		}
	}
	return nil
}

// minLogNormalMass is the least share of a lognormal that must fall in
// [Min, Max]: draws outside are drawn again, so at 1% a length costs at
// most ~100 draws on average, and maxLogNormalDraws (10,000) is then
// reached with probability 0.99^10000 ≈ 2e-44.
const (
	minLogNormalMass  = 0.01
	maxLogNormalDraws = 10_000
)

// inRange is the probability that round(exp(N(Mu, Sigma²))) lies in [Min,
// Max]: ln X in [ln(Min−½), ln(Max+½)).
func (d Dist) inRange() float64 {
	lo := math.Inf(-1)
	if d.Min > 0 {
		lo = math.Log(float64(d.Min) - 0.5)
	}
	hi := math.Log(float64(d.Max) + 0.5)
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-(x-d.Mu)/(d.Sigma*math.Sqrt2)) }
	return cdf(hi) - cdf(lo)
}

func (d Dist) draw(rng *rand.Rand) int {
	switch d.Dist {
	case "fixed":
		return d.Min
	case "loguniform":
		lo, hi := math.Log(float64(d.Min)), math.Log(float64(d.Max)+1)
		return min(d.Max, int(math.Exp(lo+rng.Float64()*(hi-lo))))
	case "lognormal":
		for range maxLogNormalDraws {
			x := math.Round(math.Exp(d.Mu + d.Sigma*rng.NormFloat64()))
			if x >= float64(d.Min) && x <= float64(d.Max) {
				return int(x)
			}
		}
		// Unreachable in practice (check keeps ≥ 1% of the mass in range);
		// the nearest bound keeps the draw deterministic and in range.
		if d.Mu > math.Log(float64(d.Max)) {
			return d.Max
		}
		return d.Min
	}
	return d.Min + rng.IntN(d.Max-d.Min+1)
}

// check refuses the sessions settings workload.Sessions refuses, naming
// each by its key: that function's errors name its Go fields
// (SessionConfig.MinTurns), which a scenario does not have.
func (s *Sessions) check() error {
	const f = "workload.sessions."
	bad := badField
	switch {
	case s.Rate == 0:
		return bad(f+"rate", "missing: want a positive number of new sessions per second")
	case !(s.Rate > 0) || math.IsInf(s.Rate, 0):
		return bad(f+"rate", "%v: want a positive number of new sessions per second", s.Rate)
	case s.Count < 0:
		return bad(f+"count", "%d is negative: want a number of sessions (absent or 0: enough to fill duration)", s.Count)
	case s.MinTurns < 1:
		return bad(f+"min_turns", "%d: want a number of turns, 1 or more", s.MinTurns)
	case s.MaxTurns < s.MinTurns:
		return bad(f+"max_turns", "%d is below min_turns %d: turns are drawn from min_turns to max_turns", s.MaxTurns, s.MinTurns)
	case s.SystemTokens < 0 || s.SystemTokens > workload.MaxTokens:
		return bad(f+"system_tokens", "%d: want 0 to %d tokens (workload.MaxTokens)", s.SystemTokens, workload.MaxTokens)
	case s.MinUser < 1 || s.MinUser > workload.MaxTokens:
		return bad(f+"min_user", "%d: want 1 to %d tokens (workload.MaxTokens)", s.MinUser, workload.MaxTokens)
	case s.MaxUser < s.MinUser || s.MaxUser > workload.MaxTokens:
		return bad(f+"max_user", "%d: want min_user (%d) to %d tokens (workload.MaxTokens)", s.MaxUser, s.MinUser, workload.MaxTokens)
	case s.MinOutput < 0 || s.MinOutput > workload.MaxTokens:
		return bad(f+"min_output", "%d: want 0 to %d tokens (workload.MaxTokens)", s.MinOutput, workload.MaxTokens)
	case s.MaxOutput < s.MinOutput || s.MaxOutput > workload.MaxTokens:
		return bad(f+"max_output", "%d: want min_output (%d) to %d tokens (workload.MaxTokens)", s.MaxOutput, s.MinOutput, workload.MaxTokens)
	case !(s.ThinkSeconds >= 0) || math.IsInf(s.ThinkSeconds, 0):
		return bad(f+"think_s", "%v: want the mean seconds between a turn and the next, 0 or more", s.ThinkSeconds)
	case s.MaxContext < 0 || s.MaxContext > workload.MaxTokens:
		return bad(f+"max_context", "%d: want 1 to %d tokens (absent or 0: %d, workload.MaxTokens)", s.MaxContext, workload.MaxTokens, workload.MaxTokens)
	}
	return nil
}

func genSessions(s *Sessions, duration int64, rng *rand.Rand) (*workload.Trace, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := checkSpan("workload.sessions.rate", s.Rate, s.Count, "the "+human.Count(int64(s.Count), "session")+" of workload.sessions.count", "sessions"); err != nil {
		return nil, err
	}
	if turns := float64(max(s.MaxTurns-1, 0)) * s.ThinkSeconds; turns*1e9 > float64(workload.MaxArrivalSpan) {
		return nil, badField("workload.sessions.think_s", "%g: a session's %d turns would span about %.3g years, past the %.2g years a run's drawn arrivals may span (workload.MaxArrivalSpan)",
			s.ThinkSeconds, s.MaxTurns, turns/(365.25*86400), float64(workload.MaxArrivalSpan)/1e9/(365.25*86400))
	}
	n := s.Count
	if n == 0 {
		if duration == 0 {
			return nil, badField("workload.sessions", "give a count of sessions, or a duration (duration: 30m) for sessions to start in at the rate")
		}
		sessions := s.Rate * float64(duration) / 1e9
		if sessions > maxGenerated {
			return nil, badField("workload.sessions", "%.3g sessions/s for %s is about %.3g sessions, more than the %d requests a generated workload may have; lower the rate or the duration",
				s.Rate, time.Duration(duration), sessions, maxGenerated)
		}
		n = int(math.Ceil(sessions))
	}
	// Turns are uniform in [MinTurns, MaxTurns]; a session can end early at
	// MaxContext, so this over-counts, never under-counts.
	if reqs := float64(n) * float64(max(s.MinTurns, 1)+max(s.MaxTurns, s.MinTurns, 1)) / 2; reqs > maxGenerated {
		return nil, badField("workload.sessions", "%d sessions of %d-%d turns is about %.3g requests, more than the %d a generated workload may have (about 3.5 KB each); lower the rate, the duration, the count or the turns",
			n, s.MinTurns, s.MaxTurns, reqs, maxGenerated)
	}
	reqs, err := workload.Sessions(workload.SessionConfig{Sessions: n, Rate: s.Rate, MinTurns: s.MinTurns, MaxTurns: s.MaxTurns,
		SystemTokens: s.SystemTokens, MinUser: s.MinUser, MaxUser: s.MaxUser, MinOutput: s.MinOutput, MaxOutput: s.MaxOutput,
		ThinkSeconds: s.ThinkSeconds, MaxContext: s.MaxContext}, rng)
	if err != nil {
		return nil, badField("workload.sessions", "%w", err)
	}
	if duration > 0 {
		// Turns arriving after the window are never simulated.
		k := len(reqs)
		for k > 0 && reqs[k-1].Arrival >= duration {
			k--
		}
		reqs = reqs[:k]
	}
	return &workload.Trace{Name: "sessions", Format: workload.JSONL, Timed: true, Requests: reqs}, nil
}

// AllocsFor is the pairing rule of simulate's and advise's sweeps
// (strategy.AllocsFor) completed with the registry: the allocators of
// allocs that kv can run on, in order, or kv's DefaultAlloc alone when none
// can (vmm:P on vmm:P). ok is false in that last case, for a caller whose
// allocators were asked for explicitly and that refuses to swap them. The
// error says that no allocator can run kv: its default is one the registry
// refuses (vmm:1000B: the vmm allocator maps pages of 64KiB multiples).
func AllocsFor(kv strategy.Spec, allocs []registry.Spec) (fit []registry.Spec, ok bool, err error) {
	if fit = strategy.AllocsFor(kv, allocs); len(fit) > 0 {
		return fit, true, nil
	}
	d, err := registry.Parse(kv.DefaultAlloc())
	if err != nil {
		return nil, false, fmt.Errorf("no allocator can run kv %s: %w", kv, err)
	}
	return []registry.Spec{d}, false, nil
}
