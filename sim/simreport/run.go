package simreport

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// Run describes what a `gpufrag simulate` invocation ran, whatever the
// scenario it started from says of itself: the "run" object of the --json
// document (docs/json.md) and the source of the text header and the HTML
// title. The embedded scenario's own name and description stand only when
// it ran as written.
type Run struct {
	// Title names the run in one line: the scenario's name when it ran as
	// written; else the trace's file name, the model and the GPU ("conv.csv:
	// qwen2.5-7b on h100-80g"), or the scenario's name with the flags that
	// changed it. The report's "scenario" field and the HTML title are it.
	Title string `json:"title"`
	// FromScenario is the name of the scenario the flags were applied to
	// (the embedded one, or --scenario FILE's); Embedded says which.
	FromScenario string `json:"from_scenario"`
	Embedded     bool   `json:"embedded"`
	// Changed lists the flags that changed the scenario ("--trace", ...),
	// in name order; empty when it ran as written.
	Changed []string `json:"changed_flags"`
	// Trace is the request trace that replaced the scenario's workload;
	// absent for a generated workload.
	Trace *Trace `json:"trace,omitempty"`
	// Workload is the report's "source": what the requests are.
	Workload string  `json:"workload"`
	Model    string  `json:"model"`
	GPU      string  `json:"gpu"`
	TP       int     `json:"tp"`
	KVDType  string  `json:"kv_dtype"` // the KV cache's element type (bf16, fp16, fp32, fp8, fp8_e5m2, int8)
	Duration float64 `json:"duration_s"`
	// Span says in words how long the run simulated ("30m0s", "to the end
	// of the trace").
	Span string `json:"span"`
}

// Trace is the trace a run read.
type Trace struct {
	Path     string  `json:"path"`
	Format   string  `json:"format"`
	Requests int     `json:"requests"`
	Rate     float64 `json:"rate,omitempty"` // --rate: requests per second, 0 when the trace's own
	// ArrivalSeed is --arrival-seed: the seed a benchmark run's arrivals
	// were drawn from instead of the run's own; absent when not given.
	ArrivalSeed *uint64 `json:"arrival_seed,omitempty"`
}

// Doc is the --json document: the scenario.Report's keys, then "run".
type Doc struct {
	*scenario.Report
	Run Run `json:"run"`
}

// Describe says what ran: s is the scenario after the flags, plan what it
// built to, embedded whether s started as the embedded scenario. changed
// lists the flags that changed s ("--gpu", in name order) and shown the
// same flags with their values ("--gpu a100-40g", "--activations=false"),
// for the title of a run that a --trace did not make.
func Describe(s *scenario.Scenario, plan *scenario.Plan, embedded bool, changed, shown []string) Run {
	r := Run{FromScenario: s.Name, Embedded: embedded, Changed: append([]string{}, changed...), Workload: plan.Source,
		Model: plan.Model.Name, GPU: plan.GPU.Name, TP: max(s.TP, 1), Duration: time.Duration(s.Duration).Seconds()}
	if len(plan.Configs) > 0 {
		r.KVDType = kvDTypeOf(plan.Configs[0]).String()
	}
	tr := s.Workload.Trace
	if tr != nil {
		r.Trace = &Trace{Path: tr.File, Format: tracedFormat(plan.Source, tr), Requests: len(plan.Requests), Rate: tr.Rate,
			ArrivalSeed: tr.ArrivalSeed}
	}
	r.Span = "to the end of the workload"
	if r.Duration > 0 {
		r.Span = time.Duration(s.Duration).String()
	}
	switch {
	case len(r.Changed) == 0:
		r.Title = s.Name
	case tr != nil && slices.Contains(r.Changed, "--trace"):
		m := r.Model
		if strings.ContainsAny(m, `/\`) || strings.HasSuffix(strings.ToLower(m), ".json") { // a config.json's path
			m = filepath.Base(m)
		}
		r.Title = fmt.Sprintf("%s: %s on %s", filepath.Base(tr.File), m, r.GPU)
		if r.TP > 1 {
			r.Title += fmt.Sprintf(" (tp %d)", r.TP)
		}
	default:
		r.Title = s.Name + " with " + strings.Join(shown, ", ")
	}
	return r
}

// tracedFormat is the format a trace was read as: the one the plan's
// source names ("trace FILE (FORMAT, N requests)", scenario.Build's
// wording), else the one asked for, else "detected".
func tracedFormat(source string, tr *scenario.Trace) string {
	if rest, ok := strings.CutPrefix(source, "trace "+tr.File+" ("); ok {
		if f, _, ok := strings.Cut(rest, ","); ok && f != "" {
			return f
		}
	}
	if tr.Format != "" {
		return tr.Format
	}
	return "detected"
}

// kvDTypeOf is the KV cache type a config runs with (sim.Config's rule for
// 0: the model's weight type when it is FP16, else BF16).
func kvDTypeOf(c sim.Config) model.DType {
	if c.KVDType != 0 {
		return c.KVDType
	}
	if c.Model.WeightDType == model.FP16 {
		return model.FP16
	}
	return model.BF16
}

// about is the report's "about" for a run that flags changed: where it
// started from and what the header's second line does not say.
func (r Run) about() string {
	from := "the embedded scenario " + r.FromScenario
	if !r.Embedded {
		from = "the scenario " + r.FromScenario
	}
	parts := []string{fmt.Sprintf("%s changed by %s", from, strings.Join(r.Changed, ", ")), "KV cache " + r.KVDType}
	if r.Trace != nil && r.Trace.Rate > 0 {
		parts = append(parts, fmt.Sprintf("arrivals at %g requests/s", r.Trace.Rate))
	}
	return strings.Join(parts, "; ")
}

// Apply makes the report say what ran: a run that flags changed gets the
// run's title and description in place of the scenario's own, which
// describe another workload, model or GPU. The text header and the HTML
// title print these fields.
func (r Run) Apply(o *scenario.Report) {
	if len(r.Changed) == 0 {
		return
	}
	o.Scenario, o.About = r.Title, r.about()
}

// New assembles the documents of a simulation: scenario s (after the
// flags), built into plan, ran results (in plan.Configs' order); the report
// says what ran (Describe, with embedded, changed and shown as Describe
// takes them, then Apply), recommends a run, and carries the error bands
// of its figures (AddBands).
func New(s *scenario.Scenario, plan *scenario.Plan, results []sim.Result, embedded bool, changed, shown []string) (*Doc, error) {
	d := &Doc{Report: scenario.NewReport(s, plan, results), Run: Describe(s, plan, embedded, changed, shown)}
	d.Run.Apply(d.Report)
	if err := AddBands(d.Report); err != nil {
		return nil, err
	}
	return d, nil
}
