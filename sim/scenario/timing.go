// Timing: the step-time profile a scenario names, and what the report says
// about how time was modelled and, for a benchmark file, what it measured.
// See scenario.go for the overview.

package scenario

import (
	"math"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// ProfileFromEmbedded is Plan.ProfileFrom for an embedded profile.
const ProfileFromEmbedded = "embedded"

// IsProfileFile reports whether a profile reference (Scenario.Profile,
// simulate --profile) names a file: it has a dot or a path separator.
// Embedded profiles are named by GPU preset, which have neither.
func IsProfileFile(ref string) bool { return strings.ContainsAny(ref, `./\`) }

// LoadProfile returns the profile s names for its GPU g and the engine:
// an embedded one (sim.DefaultProfile) or a file (sim.LoadProfile, opened
// relative to s.Dir), and where it came from (ProfileFromEmbedded or the
// path). It returns nil and "" when s names none. A profile for another
// GPU or engine is an error naming the field and what to do.
func LoadProfile(s *Scenario, g model.GPU, engine sim.EngineKind, open Opener) (*sim.Profile, string, error) {
	ref := s.Profile
	if ref == "" {
		return nil, "", nil
	}
	if !IsProfileFile(ref) {
		p, err := sim.DefaultProfile(ref, engine)
		if err != nil {
			return nil, "", badField("profile", "%w; or give a profile file (a path with a dot or a slash)", err)
		}
		if !strings.EqualFold(p.GPU, g.Name) {
			return nil, "", badField("profile", "%s is the embedded profile of gpu %s, but the scenario's gpu is %s: use profile %s, or set gpu %s",
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
	p, err := sim.LoadProfile(rc, path)
	if err != nil {
		return nil, "", badField("profile", "%w", err)
	}
	if !strings.EqualFold(p.GPU, g.Name) {
		return nil, "", badField("profile", "%s is for gpu %s, but the scenario's gpu is %s: calibrate one for %s (gpufrag calibrate), or set gpu %s",
			path, p.GPU, g.Name, g.Name, p.GPU)
	}
	if p.Engine != engine {
		return nil, "", badField("profile", "%s is for engine %v, but the scenario's engine is %v: set engine.name %v (--engine), or calibrate one for %v",
			path, p.Engine, engine, p.Engine, engine)
	}
	return p, path, nil
}

// Timing is how the runs' step time was modelled, in the Report (the
// same for every run of a plan).
type Timing struct {
	Engine     string `json:"engine"` // vllm-v1, vllm-v0 or sglang: how steps are composed
	MixedChunk bool   `json:"mixed_chunk"`
	// StepTime is "roofline" (sim.Roofline, the default until profiles are
	// fitted) or "profile" (Profile says which).
	StepTime string         `json:"step_time"`
	Profile  *ProfileReport `json:"profile,omitempty"`
	// WeightDType is the weights' element type as run: the override, or
	// the model's own.
	WeightDType string `json:"weight_dtype"`
	// MaxConcurrency is the client's cap on requests in flight; 0: none
	// (an open loop).
	MaxConcurrency int `json:"max_concurrency"`
	// WarmPrompts is true when the run started with its prompts in the
	// prefix cache.
	WarmPrompts bool `json:"warm_prompts,omitempty"`
}

// ProfileReport identifies the profile that timed the steps.
type ProfileReport struct {
	GPU      string   `json:"gpu"`
	Engine   string   `json:"engine"`
	FittedTo []string `json:"fitted_to"` // figure ids, or ["unfitted"]
	From     string   `json:"from"`      // "embedded" or the file's path
}

// newTiming describes plan's timing, or returns nil when it is the one
// every run had before profiles existed: vllm-v1 steps on the roofline,
// the model's weights and an open loop (so that output stays as it was).
func newTiming(plan *Plan) *Timing {
	if len(plan.Configs) == 0 {
		return nil
	}
	c := plan.Configs[0]
	if c.Engine == sim.EngineVLLMV1 && !c.MixedChunk && c.Profile == nil && c.WeightDType == 0 &&
		c.MaxConcurrency == 0 && plan.Bench == nil && !c.WarmPrompts {
		return nil
	}
	t := &Timing{Engine: c.Engine.String(), MixedChunk: c.MixedChunk, StepTime: "roofline",
		WeightDType: plan.Model.WeightDType.String(), MaxConcurrency: c.MaxConcurrency, WarmPrompts: c.WarmPrompts}
	if c.WeightDType != 0 {
		t.WeightDType = c.WeightDType.String()
	}
	if p := c.Profile; p != nil {
		t.StepTime = "profile"
		t.Profile = &ProfileReport{GPU: p.GPU, Engine: p.Engine.String(), FittedTo: append([]string{}, p.FittedTo...), From: plan.ProfileFrom}
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
	E2E               BenchLatency `json:"e2e_s"`
	OutputTokensPerS  *float64     `json:"output_tokens_per_s,omitempty"`
	RequestsPerS      *float64     `json:"requests_per_s,omitempty"`
	MeasuredDurationS *float64     `json:"duration_s,omitempty"`
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
		E2E:              BenchLatency{P50: fig(workload.MedianE2E), P99: fig(workload.P99E2E)},
		OutputTokensPerS: fig(workload.OutputThroughput), RequestsPerS: fig(workload.RequestThroughput),
		MeasuredDurationS: fig(workload.Duration)}
}
