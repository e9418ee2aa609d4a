package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// simulateRun describes what a `gpufrag simulate` invocation ran, whatever
// the scenario it started from says of itself: the "run" object of the
// --json document (docs/json.md) and the source of the text header and the
// HTML title. The embedded scenario's own name and description stand only
// when it ran as written.
type simulateRun struct {
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
	Trace *runTrace `json:"trace,omitempty"`
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

// runTrace is the trace a run read.
type runTrace struct {
	Path     string  `json:"path"`
	Format   string  `json:"format"`
	Requests int     `json:"requests"`
	Rate     float64 `json:"rate,omitempty"` // --rate: requests per second, 0 when the trace's own
}

// simulateDoc is the --json document: the scenario.Report's keys, then
// "run".
type simulateDoc struct {
	*scenario.Report
	Run simulateRun `json:"run"`
}

// outputFlags change what simulate prints, not what it runs.
var outputFlags = map[string]bool{"json": true, "html": true, "parallel": true, "scenario": true,
	"print-scenario": true, "print-profile": true}

// describeSimulateRun says what ran: s is the scenario after the flags,
// plan what it built to.
func describeSimulateRun(cmd *cobra.Command, s *scenario.Scenario, plan *scenario.Plan, embedded bool) simulateRun {
	r := simulateRun{FromScenario: s.Name, Embedded: embedded, Changed: []string{}, Workload: plan.Source,
		Model: plan.Model.Name, GPU: plan.GPU.Name, TP: max(s.TP, 1), Duration: time.Duration(s.Duration).Seconds()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !outputFlags[f.Name] {
			r.Changed = append(r.Changed, "--"+f.Name)
		}
	})
	if len(plan.Configs) > 0 {
		r.KVDType = kvDTypeOf(plan.Configs[0]).String()
	}
	if tr := s.Workload.Trace; tr != nil {
		r.Trace = &runTrace{Path: tr.File, Format: tracedFormat(plan.Source, tr), Requests: len(plan.Requests), Rate: tr.Rate}
	}
	r.Span = "to the end of the workload"
	if r.Duration > 0 {
		r.Span = time.Duration(s.Duration).String()
	}
	switch {
	case len(r.Changed) == 0:
		r.Title = s.Name
	case cmd.Flags().Changed("trace"):
		m := r.Model
		if looksLikePath(m) {
			m = filepath.Base(m)
		}
		r.Title = fmt.Sprintf("%s: %s on %s", filepath.Base(s.Workload.Trace.File), m, r.GPU)
		if r.TP > 1 {
			r.Title += fmt.Sprintf(" (tp %d)", r.TP)
		}
	default:
		r.Title = s.Name + " with " + strings.Join(flagValues(cmd, r.Changed), ", ")
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

// flagValues prints changed flags with their values ("--duration 1m0s").
func flagValues(cmd *cobra.Command, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		f := cmd.Flags().Lookup(strings.TrimPrefix(n, "--"))
		v := strings.Trim(f.Value.String(), "[]")
		if f.Value.Type() == "bool" {
			out = append(out, n+"="+v)
			continue
		}
		out = append(out, n+" "+v)
	}
	return out
}

// about is the report's "about" for a run that flags changed: where it
// started from and what the header's second line does not say.
func (r simulateRun) about() string {
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

// applyRun makes the report say what ran: a run that flags changed gets
// the run's title and description in place of the scenario's own, which
// describe another workload, model or GPU. The text header and the HTML
// title print these fields.
func applyRun(o *scenario.Report, r simulateRun) {
	if len(r.Changed) == 0 {
		return
	}
	o.Scenario, o.About = r.Title, r.about()
}

// writeSimulateNotes prints what the tables cannot: each run's compaction
// (with --defrag) and, where fragmentation is reported, whether it matters
// (frag.Judge weighs the ratio by the bytes at stake) and why a setup shows
// it.
func writeSimulateNotes(sb *strings.Builder, o *scenario.Report, capacity int64) {
	var lines []string
	for _, r := range o.Results {
		if d := r.Defrag; d != nil {
			lines = append(lines, human.WrapHang("  "+runName(r)+": "+compactionSummary(r), 80, 6))
		}
	}
	if len(lines) > 0 {
		sb.WriteString("\nCompaction (--defrag " + o.Results[0].Defrag.Policy + "):\n" + strings.Join(lines, "\n") + "\n")
	}
	lines = lines[:0]
	for _, r := range o.Results {
		v, ok := judgeRun(r, capacity)
		if !ok {
			continue
		}
		line := fmt.Sprintf("  %s: %s (%s)", runName(r), v.Label, v.Why)
		if r.KVPoolBytes > 0 && v.Level != frag.LevelHealthy {
			line += fmt.Sprintf("; the KV pool is one %s block, so the free memory the ratio sees is the activation buffers' scratch beside it, not KV memory",
				human.Bytes(r.KVPoolBytes))
		}
		lines = append(lines, human.WrapHang(line, 80, 6))
	}
	if len(lines) > 0 {
		sb.WriteString("\nFragmentation at the lowest health, weighed by the memory at stake:\n" + strings.Join(lines, "\n") + "\n")
	}
}

// judgeRun weighs a run's worst sample (the lowest health) by the free
// memory then outside the largest free block; false when the run has no
// samples.
func judgeRun(r sim.Result, capacity int64) (frag.Verdict, bool) {
	s := r.Series
	worst := -1
	for i, h := range s.Health {
		if worst < 0 || h < s.Health[worst] {
			worst = i
		}
	}
	if worst < 0 || worst >= len(s.Reserved) || worst >= len(s.Allocated) {
		return frag.Verdict{}, false
	}
	ooms := r.RequestsFailedOOM // the table's OOM column
	return frag.Judge(frag.Stake{Health: s.Health[worst], CachedFree: s.Reserved[worst] - s.Allocated[worst],
		Reserved: s.Reserved[worst], Capacity: capacity, OOMs: ooms}), true
}

// compactionSummary says what a run's compaction did: runs, bytes moved,
// pauses, and the OOMs of the same run without compaction.
func compactionSummary(r sim.Result) string {
	d := r.Defrag
	if d.Skipped != "" {
		return "did not run: " + d.Skipped
	}
	s := fmt.Sprintf("%s run%s, %s moved (lower bound %s), %s freed", human.Thousands(d.Runs), human.PluralS(d.Runs),
		human.Bytes(d.BytesMoved), human.Bytes(d.LowerBound), human.Bytes(d.FreedBytes))
	if d.Runs > 0 {
		s += fmt.Sprintf(", pauses p50 %s, p99 %s, max %s, %s in all", human.Seconds(d.Pause.P50), human.Seconds(d.Pause.P99),
			human.Seconds(d.Pause.Max), human.Seconds(d.PauseTotal))
	}
	return s + fmt.Sprintf("; requests failed with OOM: %s with compaction, %s without", human.Thousands(r.RequestsFailedOOM), human.Thousands(d.OOMsWithout))
}
