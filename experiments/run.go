package experiments

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/lists"
	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// Options configure RunAll.
type Options struct {
	// Root is the repository root: scenario_file, cluster data and trace
	// paths are relative to it ("" is the current directory).
	Root string
	// Reduced applies each experiment's reduced: overrides.
	Reduced bool
	// Parallel is the number of jobs run at once (0: GOMAXPROCS). Results
	// do not depend on it.
	Parallel int
	// Start is called once with the number of jobs; Done after each job.
	// Both may be nil; Done is called from several goroutines.
	Start func(total int)
	Done  func()
}

// Outcome is what one experiment measured and concluded.
type Outcome struct {
	Name           string        `json:"name"`
	File           string        `json:"file"`
	Claim          string        `json:"claim"`
	Source         string        `json:"source,omitempty"`
	Kind           string        `json:"kind"`
	Setup          string        `json:"setup"`
	Reduced        bool          `json:"reduced"`
	Runs           []RunOutcome  `json:"runs"`
	Checks         []CheckResult `json:"checks"`
	Verdict        string        `json:"verdict"`
	Why            string        `json:"why"`
	CannotSimulate string        `json:"cannot_simulate,omitempty"`
	Skipped        string        `json:"skipped,omitempty"`

	exp   *Experiment
	plots []plotLine
}

// RunOutcome is one run's description and figures.
type RunOutcome struct {
	Name    string             `json:"name"`
	Desc    string             `json:"desc"`
	Figures map[string]float64 `json:"figures"`
}

// plotLine is one line of an experiment's chart.
type plotLine struct {
	name string
	x, y []float64
}

// MarshalJSON writes figures that are not finite as null.
func (r RunOutcome) MarshalJSON() ([]byte, error) {
	figs := make(map[string]*float64, len(r.Figures))
	for k, v := range r.Figures {
		figs[k] = finiteOrNil(v)
	}
	type plain struct {
		Name    string              `json:"name"`
		Desc    string              `json:"desc"`
		Figures map[string]*float64 `json:"figures"`
	}
	return json.Marshal(plain{r.Name, r.Desc, figs})
}

// Figures returns the outcome's figures by run.
func (o *Outcome) Figures() Figures {
	f := Figures{}
	for _, r := range o.Runs {
		f[r.Name] = r.Figures
	}
	return f
}

// Select returns the experiments with the given names, in their order; all
// of them when names is empty.
func Select(exps []*Experiment, names []string) ([]*Experiment, error) {
	if len(names) == 0 {
		return exps, nil
	}
	var out []*Experiment
	for _, n := range names {
		i := slices.IndexFunc(exps, func(e *Experiment) bool { return e.Name == n })
		if i < 0 {
			var all []string
			for _, e := range exps {
				all = append(all, e.Name)
			}
			return nil, fmt.Errorf("no experiment %q (have: %s)", n, strings.Join(all, ", "))
		}
		if !slices.Contains(out, exps[i]) {
			out = append(out, exps[i])
		}
	}
	return out, nil
}

// job is one unit of work for the pool.
type job struct {
	run func() error
}

// RunAll runs the experiments, their jobs up to opts.Parallel at once, and
// returns one outcome per experiment in the given order. The outcomes do
// not depend on the parallelism.
func RunAll(exps []*Experiment, opts Options) ([]*Outcome, error) {
	outs := make([]*Outcome, len(exps))
	var jobs []job
	var finish []func()
	for i, e := range exps {
		o, js, fin, err := prepare(e, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.File, err)
		}
		outs[i] = o
		jobs = append(jobs, js...)
		finish = append(finish, fin)
	}
	if opts.Start != nil {
		opts.Start(len(jobs))
	}
	err := par.Do(context.Background(), len(jobs), par.Options{Workers: opts.Parallel, OnDone: opts.Done},
		func(_ context.Context, i int) error { return jobs[i].run() })
	if err != nil {
		return nil, err
	}
	for i, fin := range finish {
		if fin != nil {
			fin()
		}
		o := outs[i]
		if o.Skipped != "" {
			o.Verdict, o.Why = Skipped, o.Skipped
			continue
		}
		f := o.Figures()
		o.Checks = nil
		for _, c := range exps[i].Decide {
			o.Checks = append(o.Checks, c.Evaluate(f))
		}
		o.Verdict, o.Why = Decide(o.Checks, exps[i].CannotSimulate)
	}
	return outs, nil
}

func newOutcome(e *Experiment, reduced bool) *Outcome {
	return &Outcome{Name: e.Name, File: e.File, Claim: strings.TrimSpace(e.Claim), Source: e.Source, Kind: e.Kind(),
		Reduced: reduced, CannotSimulate: strings.TrimSpace(e.CannotSimulate), exp: e}
}

// neededMetrics are the metrics an experiment reports: those of its rules,
// then those it asks to show.
func neededMetrics(e *Experiment) []string {
	var out []string
	for _, c := range e.Decide {
		for _, m := range []string{c.Metric, c.RefMetric} {
			if m != "" && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	for _, m := range e.Show {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func prepare(e *Experiment, opts Options) (*Outcome, []job, func(), error) {
	o := newOutcome(e, opts.Reduced)
	switch e.Kind() {
	case "arithmetic":
		return o, nil, nil, runArithmetic(e, o)
	case "cluster":
		return prepareCluster(e, o, opts)
	default:
		return prepareScenario(e, o, opts)
	}
}

func runArithmetic(e *Experiment, o *Outcome) error {
	o.Setup = "arithmetic on model presets: KV bytes per token × tokens"
	for _, r := range e.Runs {
		m, err := model.Preset(r.Model)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		dt := m.WeightDType
		if r.KVDType != "" {
			if dt, err = model.ParseKVDType(r.KVDType); err != nil {
				return fmt.Errorf("run %s: %w", r.Name, err)
			}
		}
		tp := max(r.TP, 1)
		if err := m.ValidateTP(tp); err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		per := m.KVBytesPerToken(dt, tp)
		total := float64(per) * float64(r.Tokens)
		o.Runs = append(o.Runs, RunOutcome{Name: r.Name,
			Desc:    fmt.Sprintf("%s, %s KV, tp %d, %d tokens", m.Name, dt, tp, r.Tokens),
			Figures: map[string]float64{"kv_bytes_per_token": float64(per), "kv_total_bytes": total, "kv_total_gb": total / 1e9}})
	}
	return nil
}

func (o *Options) path(p string) string { return filepath.Join(o.Root, filepath.FromSlash(p)) }

// absent is why an experiment whose input p (a kind: "trace", "data",
// "scenario file") is not under the root is skipped, with what to do: the
// root may be the wrong directory.
func (o *Options) absent(kind, p string) string {
	root, _ := filepath.Abs(o.Root)
	return fmt.Sprintf("%s %s is not present under %s: run from the repository's root or give it with --root DIR", kind, p, root)
}

func readScenario(e *Experiment, opts Options) (*scenario.Scenario, error) {
	if e.Scenario != nil {
		c := *e.Scenario
		return &c, nil
	}
	fh, err := os.Open(opts.path(e.ScenarioFile))
	if errors.Is(err, fs.ErrNotExist) {
		root, _ := filepath.Abs(opts.Root)
		return nil, fmt.Errorf("experiment %s runs the scenario file %s of the gpufrag repository, which is not under %s: run from the repository's root or give it with --root DIR: %w",
			e.Name, e.ScenarioFile, root, err)
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return scenario.Read(fh, e.ScenarioFile)
}

// runScenario is the scenario a run simulates: the experiment's with the
// run's overrides.
func runScenario(base *scenario.Scenario, r Run, red *Reduced) scenario.Scenario {
	s := *base
	s.Runs = []scenario.Run{{KV: r.KV, Alloc: r.Alloc, OnOOM: r.OnOOM}}
	if r.KV.IsZero() && len(base.Runs) == 1 {
		s.Runs = []scenario.Run{base.Runs[0]}
	}
	if r.Util > 0 {
		s.Engine.GPUMemoryUtilization = r.Util
	}
	if r.KVDType != "" {
		s.KVDType = r.KVDType
	}
	if r.Bucket > 0 {
		s.Workload.Bucket = r.Bucket
	}
	if len(r.Beam) > 0 {
		s.Workload.Beam = slices.Clone(r.Beam)
	}
	if r.MaxSeqs > 0 {
		s.Engine.MaxSeqs = r.MaxSeqs
	}
	if r.MaxContext > 0 {
		s.Engine.MaxContext = r.MaxContext
	}
	if r.Defrag != "" {
		s.Engine.Defrag = r.Defrag
	}
	if r.Duration > 0 {
		s.Duration = r.Duration
	}
	if red != nil {
		if red.Duration > 0 {
			s.Duration = red.Duration
		}
		if red.Count > 0 {
			switch w := &s.Workload; {
			case w.Requests != nil:
				q := *w.Requests
				q.Count = red.Count
				w.Requests = &q
			case w.Sessions != nil:
				q := *w.Sessions
				q.Count = red.Count
				w.Sessions = &q
			case w.Trace != nil:
				q := *w.Trace
				q.MaxRows = red.Count
				w.Trace = &q
			}
		}
	}
	return s
}

func prepareScenario(e *Experiment, o *Outcome, opts Options) (*Outcome, []job, func(), error) {
	if e.Scenario == nil {
		if _, err := os.Stat(opts.path(e.ScenarioFile)); errors.Is(err, fs.ErrNotExist) {
			o.Skipped = opts.absent("scenario file", e.ScenarioFile)
			return o, nil, nil, nil
		}
	}
	base, err := readScenario(e, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	var red *Reduced
	if opts.Reduced {
		red = e.Reduced
	}
	if t := base.Workload.Trace; t != nil && !filepath.IsAbs(t.File) {
		if _, err := os.Stat(opts.path(t.File)); errors.Is(err, fs.ErrNotExist) {
			o.Skipped = opts.absent("trace", t.File)
			return o, nil, nil, nil
		}
	}
	open := func(name string) (io.ReadCloser, error) {
		if filepath.IsAbs(name) {
			return os.Open(name)
		}
		return os.Open(opts.path(name))
	}
	need := neededMetrics(e)
	o.Runs = make([]RunOutcome, len(e.Runs))
	results := make([]sim.Result, len(e.Runs))
	durations := make([]float64, len(e.Runs))
	var jobs []job
	for i, r := range e.Runs {
		s := runScenario(base, r, red)
		plan, err := scenario.Build(&s, open)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("run %s: %w", r.Name, err)
		}
		if len(plan.Configs) != 1 {
			return nil, nil, nil, fmt.Errorf("run %s: want one kv/alloc pair, the scenario gives %d", r.Name, len(plan.Configs))
		}
		cfg := plan.Configs[0]
		if r.DefragLow > 0 {
			cfg.Defrag.Low = r.DefragLow
		}
		if r.DefragHigh > 0 {
			cfg.Defrag.High = r.DefragHigh
		}
		if r.Floor != nil {
			cfg.Defrag.Floor = *r.Floor
		}
		if r.OfflineGap > 0 {
			cfg.Defrag.OfflineGap = int64(time.Duration(r.OfflineGap))
		}
		cfg.Defrag.NoReactive = cfg.Defrag.NoReactive || r.NoReactive
		if i == 0 {
			o.Setup = scenarioSetup(&s, plan)
		}
		o.Runs[i] = RunOutcome{Name: r.Name, Desc: runDesc(&s, &cfg, r)}
		durations[i] = time.Duration(s.Duration).Seconds()
		jobs = append(jobs, job{run: func() error {
			eng, err := sim.New(cfg, plan.Requests)
			if err != nil {
				return fmt.Errorf("%s: run %s: %w", e.File, r.Name, err)
			}
			res, err := eng.Run()
			if err != nil {
				return fmt.Errorf("%s: run %s: %w", e.File, r.Name, err)
			}
			results[i] = res
			return nil
		}})
	}
	fin := func() {
		series := "frag"
		if e.Plot != nil {
			series = e.Plot.Series
		}
		for i := range o.Runs {
			res := &results[i]
			figs := map[string]float64{}
			for _, name := range need {
				m, _ := parseMetric(name, "scenario")
				if m.windowed {
					figs[name] = seriesValue(m, res, durations[i])
				} else {
					figs[name] = scalarMetrics[name](res)
				}
			}
			o.Runs[i].Figures = figs
			x, y := downsample(res, series, 600)
			o.plots = append(o.plots, plotLine{name: o.Runs[i].Name, x: x, y: y})
			results[i] = sim.Result{} // free the series
		}
	}
	return o, jobs, fin, nil
}

// downsample averages a series into at most n buckets of equal sample
// counts, for plotting.
func downsample(r *sim.Result, series string, n int) (x, y []float64) {
	s := &r.Series
	total := len(s.Time)
	if total == 0 {
		return nil, nil
	}
	per := (total + n - 1) / n
	for i := 0; i < total; i += per {
		end := min(i+per, total)
		var sx, sy float64
		for j := i; j < end; j++ {
			sx += s.Time[j]
			sy += seriesPoint(series, s, j)
		}
		k := float64(end - i)
		x = append(x, sx/k)
		y = append(y, sy/k)
	}
	return x, y
}

func scenarioSetup(s *scenario.Scenario, plan *scenario.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s", plan.Model.Name, plan.GPU.Name)
	if s.TP > 1 {
		fmt.Fprintf(&b, " (tp %d)", s.TP)
	}
	fmt.Fprintf(&b, ", %s", plan.Source)
	if s.Duration > 0 {
		fmt.Fprintf(&b, ", %s simulated", fmtDuration(time.Duration(s.Duration)))
	}
	fmt.Fprintf(&b, ", seed %d", s.Seed)
	return b.String()
}

func runDesc(s *scenario.Scenario, cfg *sim.Config, r Run) string {
	parts := []string{cfg.KV.String() + " on " + cfg.Alloc.String(), "on_oom " + onOOMName(cfg.OnOOM), cfg.KVDType.String() + " KV",
		fmt.Sprintf("gpu_memory_utilization %.2f", cfg.GPUMemoryUtilization)}
	if s.Workload.Bucket > 0 {
		parts = append(parts, fmt.Sprintf("prompts bucketed to %d", s.Workload.Bucket))
	}
	if len(s.Workload.Beam) > 0 {
		parts = append(parts, fmt.Sprintf("beam widths %v", s.Workload.Beam))
	}
	if r.MaxSeqs > 0 {
		parts = append(parts, fmt.Sprintf("max_seqs %d", cfg.MaxSeqs))
	}
	if r.MaxContext > 0 {
		parts = append(parts, fmt.Sprintf("max_context %d", cfg.MaxContext))
	}
	if r.Duration > 0 {
		parts = append(parts, fmtDuration(time.Duration(s.Duration))+" simulated")
	}
	if cfg.Defrag.Policy != sim.DefragOff {
		d := "defrag " + cfg.Defrag.Policy.String()
		// Zero fields take sim.DefaultDefrag's values in the engine; show
		// the values it runs with.
		def, dc := sim.DefaultDefrag(), cfg.Defrag
		switch dc.Policy.String() {
		case "threshold":
			d += fmt.Sprintf(" (act below health %.2f, re-arm above %.2f, floor %.2f)",
				cmp.Or(dc.Low, def.Low), cmp.Or(dc.High, def.High), cmp.Or(dc.Floor, def.Floor))
		case "offline":
			d += " (at most every " + fmtDuration(time.Duration(cmp.Or(dc.OfflineGap, def.OfflineGap))) + ")"
		}
		if cfg.Defrag.NoReactive {
			d += ", not reactive"
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, ", ")
}

func onOOMName(x sim.OnOOM) string {
	for _, n := range []string{"preempt", "reserve", "fail"} {
		if v, err := sim.ParseOnOOM(n); err == nil && v == x {
			return n
		}
	}
	return "by KV strategy"
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func prepareCluster(e *Experiment, o *Outcome, opts Options) (*Outcome, []job, func(), error) {
	c := *e.Cluster
	seeds := max(c.Seeds, 1)
	if opts.Reduced && e.Reduced != nil {
		if e.Reduced.Nodes != "" {
			c.Nodes = e.Reduced.Nodes
		}
		if e.Reduced.Pods != "" {
			c.Pods = e.Reduced.Pods
		}
		if e.Reduced.Seeds > 0 {
			seeds = e.Reduced.Seeds
		}
	}
	for _, p := range []string{c.Nodes, c.Pods} {
		if _, err := os.Stat(opts.path(p)); errors.Is(err, fs.ErrNotExist) {
			o.Skipped = opts.absent("data", p)
			return o, nil, nil, nil
		}
	}
	nodes, err := lists.ReadNodesFile(opts.path(c.Nodes))
	if err != nil {
		return nil, nil, nil, err
	}
	pods, err := lists.ReadPodsFile(opts.path(c.Pods))
	if err != nil {
		return nil, nil, nil, err
	}
	first := c.Seed
	if first == 0 {
		first = 42
	}
	o.Setup = fmt.Sprintf("FGD protocol: %d nodes (%d GPUs) from %s, pods from %s inflated to %.0f%% of GPU capacity, seeds %d-%d",
		len(nodes), cluster.GPUCapacity(nodes), c.Nodes, c.Pods, 100*ratioOr(c.Ratio), first, first+uint64(seeds)-1)
	policies := make([]string, len(e.Runs))
	for i, r := range e.Runs {
		policies[i] = r.Policy
		o.Runs = append(o.Runs, RunOutcome{Name: r.Name, Desc: "policy " + r.Policy})
	}
	seedList := make([]uint64, seeds)
	for s := range seedList {
		seedList[s] = first + uint64(s)
	}
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: policies, Seeds: seedList,
		Options: protocol.Options{Ratio: c.Ratio}})
	// The grid's cells join the suite's jobs, so that every experiment
	// runs on the one pool of RunAll.
	jobs := make([]job, g.Len())
	for k := range jobs {
		jobs[k] = job{run: func() error {
			if err := g.RunCell(k); err != nil {
				i, seed := g.Cell(k)
				return fmt.Errorf("%s: run %s seed %d: %w", e.File, e.Runs[i].Name, seed, err)
			}
			return nil
		}}
	}
	need := neededMetrics(e)
	fin := func() {
		series := "alloc_ratio"
		if e.Plot != nil {
			series = e.Plot.Series
		}
		sums := g.Summaries()
		for i := range o.Runs {
			sum := sums[i]
			figs := map[string]float64{}
			for _, name := range need {
				m, _ := parseMetric(name, "cluster")
				figs[name] = clusterValue(m, &sum)
			}
			o.Runs[i].Figures = figs
			var x, y []float64
			for p := range sum.Curve {
				x = append(x, float64(p))
				y = append(y, clusterValue(metric{name: series, at: p}, &sum))
			}
			o.plots = append(o.plots, plotLine{name: o.Runs[i].Name, x: x, y: y})
		}
	}
	return o, jobs, fin, nil
}

func ratioOr(r float64) float64 {
	if r <= 0 || math.IsNaN(r) {
		return protocol.DefaultRatio
	}
	return r
}
