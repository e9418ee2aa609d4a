// Timing: the step-time profile a scenario names, and what the report says
// about how time was modelled and, for a benchmark file, what it measured.
// See scenario.go for the overview.

package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// ProfileFromEmbedded is Plan.ProfileFrom for an embedded profile.
const ProfileFromEmbedded = "embedded"

// The names Scenario.Profile (simulate --profile) gives the step-time
// models that are not files: the roofline, and the joint model's profile of
// the scenario's GPU (a GPU preset's name names it too).
const (
	ProfileRoofline = "roofline"
	ProfileJoint    = "joint"
)

// IsProfileFile reports whether a profile reference (Scenario.Profile,
// simulate --profile) names a file: it has a dot or a path separator.
// Embedded profiles are named by GPU preset, which have neither.
func IsProfileFile(ref string) bool { return strings.ContainsAny(ref, `./\`) }

// LoadProfile returns the step-time profile s names for its GPU g, the
// engine and its release (a canonical version, "" for the default): the
// roofline (nil), the joint model's profile (sim.DefaultProfile) or a file
// (sim.LoadProfile, opened relative to s.Dir); with none named, the one
// sim.DefaultStepTime chooses. It also says where it came from
// (ProfileFromEmbedded, the path, or "" for the roofline). A profile for
// another GPU, engine or overhead class is an error naming the field and
// what to do.
func LoadProfile(s *Scenario, g model.GPU, engine sim.EngineKind, version string, open Opener) (*sim.Profile, string, error) {
	ref := s.Profile
	switch {
	case ref == "" && sim.DefaultStepTime == sim.StepTimeRoofline, strings.EqualFold(ref, ProfileRoofline):
		return nil, "", nil
	case ref == "", strings.EqualFold(ref, ProfileJoint):
		p, err := sim.DefaultProfile(g.Name, engine, version)
		if err != nil {
			return nil, "", badField("profile", "%w", err)
		}
		return p, ProfileFromEmbedded, nil
	case !IsProfileFile(ref):
		if _, err := model.LookupGPU(ref); err != nil {
			return nil, "", badField("profile", "%q is not %s, %s, a GPU preset (%s) or a file (a path with a dot or a slash)",
				ref, ProfileRoofline, ProfileJoint, strings.Join(sim.ProfileGPUs(), ", "))
		}
		p, err := sim.DefaultProfile(ref, engine, version)
		if err != nil {
			return nil, "", badField("profile", "%w", err)
		}
		if !strings.EqualFold(p.GPU, g.Name) {
			return nil, "", badField("profile", "%s is the embedded profile of gpu %s, but the scenario's gpu is %s: use profile %s (or joint), or set gpu %s",
				ref, p.GPU, g.Name, g.Name, p.GPU)
		}
		return p, ProfileFromEmbedded, nil
	}
	path := s.profilePath()
	if open == nil {
		return nil, "", badField("profile", "no way to open %s", path)
	}
	rc, err := open(path)
	if err != nil {
		return nil, "", badField("profile", "%w", err)
	}
	defer rc.Close()
	p, j, err := sim.ReadStepModel(rc, path)
	if err != nil {
		return nil, "", badField("profile", "%w", err)
	}
	if j != nil {
		// A joint model: its profile for the scenario's GPU, engine and
		// release, as the embedded one gives (calibrate's --profile takes
		// the same files).
		p, err := j.ProfileFor(g.Name, engine, version)
		if err != nil {
			return nil, "", badField("profile", "%s, a joint model: %w", path, err)
		}
		return p, path, nil
	}
	if !strings.EqualFold(p.GPU, g.Name) {
		return nil, "", badField("profile", "%s is for gpu %s, but the scenario's gpu is %s: calibrate one for %s (gpufrag calibrate), or set gpu %s",
			path, p.GPU, g.Name, g.Name, p.GPU)
	}
	if p.Engine != engine {
		return nil, "", badField("profile", "%s is for engine %v, but the scenario's engine is %v: set engine.name %v (--engine), or calibrate one for %v",
			path, p.Engine, engine, p.Engine, engine)
	}
	if p.EngineVersion != "" {
		pv, _ := sim.ParseEngineVersion(p.Engine, p.EngineVersion) // LoadProfile validated it
		v, err := sim.ParseEngineVersion(engine, version)
		if err != nil {
			return nil, "", badField("engine.version", "%w", err)
		}
		if a, b := sim.OverheadClass(p.Engine, pv), sim.OverheadClass(engine, v); a != b {
			return nil, "", badField("profile", "%s is for %v %s (overheads of %s), but the scenario's release is %s (%s): set engine.version %s (--engine-version), or calibrate one for %s",
				path, p.Engine, pv, a, v, b, pv, v)
		}
	}
	return p, path, nil
}

// Timing is how the runs' step time was modelled, in the Report (the
// same for every run of a plan).
type Timing struct {
	Engine string `json:"engine"` // vllm-v1, vllm-v0 or sglang: how steps are composed
	// EngineVersion is the engine's release the step time stands for
	// (its overheads, under a profile).
	EngineVersion string `json:"engine_version"`
	MixedChunk    bool   `json:"mixed_chunk"`
	// SchedulerSteps is vLLM V0's --num-scheduler-steps when above 1.
	SchedulerSteps int `json:"num_scheduler_steps,omitempty"`
	// StepTime is "roofline" (sim.Roofline) or "profile" (Profile says
	// which).
	StepTime string         `json:"step_time"`
	Profile  *ProfileReport `json:"profile,omitempty"`
	// WeightDType is the weights' element type as run: the override, or
	// the model's own.
	WeightDType string `json:"weight_dtype"`
	// Unquantized is what quantized weights keep in 16 bits beyond the
	// embedding, lm_head and norms (model.Unquantized's form); absent when
	// nothing more, or when the weights are 16-bit.
	Unquantized string `json:"unquantized,omitempty"`
	// MaxConcurrency is the client's cap on requests in flight; 0: none
	// (an open loop).
	MaxConcurrency int `json:"max_concurrency"`
	// WarmPrompts is true when the run started with its prompts in the
	// prefix cache.
	WarmPrompts bool `json:"warm_prompts,omitempty"`
}

// ProfileReport identifies the profile that timed the steps.
type ProfileReport struct {
	GPU    string `json:"gpu"`
	Engine string `json:"engine"`
	// EngineVersion is the release the profile's overheads are for (""
	// when it names none).
	EngineVersion string `json:"engine_version,omitempty"`
	// FittedTo lists a profile file's measurements (figure ids or the
	// user's files), or ["unfitted"]; absent for the embedded joint model,
	// which Fitted summarises.
	FittedTo []string `json:"fitted_to,omitempty"`
	Fitted   string   `json:"fitted,omitempty"`
	From     string   `json:"from"` // "embedded" or the file's path
}

// newTiming describes plan's timing.
func newTiming(plan *Plan) *Timing {
	if len(plan.Configs) == 0 {
		return nil
	}
	c := plan.Configs[0]
	v, _ := sim.ParseEngineVersion(c.Engine, c.EngineVersion) // Build checked it
	t := &Timing{Engine: c.Engine.String(), EngineVersion: v.String(), MixedChunk: c.MixedChunk, StepTime: "roofline",
		MaxConcurrency: c.MaxConcurrency, WarmPrompts: c.WarmPrompts}
	if c.SchedulerSteps > 1 {
		t.SchedulerSteps = c.SchedulerSteps
	}
	rc := c
	rc.Model = plan.Model
	m := rc.RunModel()
	t.WeightDType = m.WeightDType.String()
	if m.WeightDType.Bits() < 16 {
		t.Unquantized = m.Unquantized.String()
	}
	if p := c.Profile; p != nil {
		t.StepTime = "profile"
		t.Profile = &ProfileReport{GPU: p.GPU, Engine: p.Engine.String(), EngineVersion: p.EngineVersion, From: plan.ProfileFrom}
		if plan.ProfileFrom == ProfileFromEmbedded {
			t.Profile.Fitted = fmt.Sprintf("%s: %d figures of calib/published.yaml", sim.JointPath, len(p.FittedTo))
			if slices.Equal(p.FittedTo, []string{sim.Unfitted}) {
				t.Profile.Fitted = sim.JointPath + ": unfitted"
			}
		} else {
			t.Profile.FittedTo = append([]string{}, p.FittedTo...)
		}
	}
	return t
}

// BenchReport is a benchmark run's own figures (a vllm-bench trace), to
// hold the simulated ones against: the same names and units as a result's
// (seconds, tokens per second). A figure the file lacks is absent. The
// clients' medians and p99s interpolate (numpy), a result's are nearest
// rank; on a few hundred requests the two differ by less than the gap
// between neighbouring requests.
type BenchReport struct {
	File    string `json:"file"`
	Run     int    `json:"run"` // 1-based, of Runs in the file
	Runs    int    `json:"runs"`
	Harness string `json:"harness"`            // vllm or sglang: the client that wrote it
	ModelID string `json:"model_id,omitempty"` // the client's model label
	// MaxConcurrency is the client's own cap (0: none); Timing says which
	// cap the runs had.
	MaxConcurrency    int          `json:"max_concurrency"`
	Completed         *int         `json:"requests_completed,omitempty"`
	Failed            *int         `json:"requests_failed,omitempty"`
	TTFT              BenchLatency `json:"ttft_s"`
	TPOT              BenchLatency `json:"tpot_s"`
	ITL               BenchLatency `json:"itl_s"`
	E2E               BenchLatency `json:"e2e_s"`
	OutputTokensPerS  *float64     `json:"output_tokens_per_s,omitempty"`
	RequestsPerS      *float64     `json:"requests_per_s,omitempty"`
	MeasuredDurationS *float64     `json:"duration_s,omitempty"`
	// ArrivalSeed is the seed the replay drew the run's arrivals from
	// when the run saved no send times (the run's own seed, or
	// workload.trace.arrival_seed); absent when the arrivals are the
	// run's own (saved, or all at once).
	ArrivalSeed *uint64 `json:"arrival_seed,omitempty"`
	// NotComparable says why the replay is not of the run as it ran, so
	// that its simulated figures are not to be set against these (another
	// arrival rate, part of its requests, another client cap); absent when
	// the replay is the run's.
	NotComparable string `json:"not_comparable,omitempty"`
}

// BenchLatency is a measured latency distribution; absent figures are
// omitted.
type BenchLatency struct {
	P50 *float64 `json:"p50,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
}

// newBenchReport returns b's figures, or nil for no benchmark run.
func newBenchReport(b *workload.BenchResult) *BenchReport {
	if b == nil {
		return nil
	}
	fig := func(m workload.BenchMetric) *float64 {
		v, ok := b.Metrics[m]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil // JSON has neither; docs/json.md: never null, NaN or infinite
		}
		return &v
	}
	count := func(n int) *int {
		if n < 0 {
			return nil
		}
		return &n
	}
	return &BenchReport{File: b.File, Run: b.Run, Runs: b.Runs, Harness: b.Harness, ModelID: b.Model,
		MaxConcurrency: b.MaxConcurrency, Completed: count(b.Completed), Failed: count(b.Failed),
		TTFT:             BenchLatency{P50: fig(workload.MedianTTFT), P99: fig(workload.P99TTFT)},
		TPOT:             BenchLatency{P50: fig(workload.MedianTPOT), P99: fig(workload.P99TPOT)},
		ITL:              BenchLatency{P50: fig(workload.MedianITL), P99: fig(workload.P99ITL)},
		E2E:              BenchLatency{P50: fig(workload.MedianE2E), P99: fig(workload.P99E2E)},
		OutputTokensPerS: fig(workload.OutputThroughput), RequestsPerS: fig(workload.RequestThroughput),
		MeasuredDurationS: fig(workload.Duration)}
}
