package experiments

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var embedded embed.FS

// MaxFileBytes bounds one experiment file.
const MaxFileBytes = 1 << 20

// ErrBadExperiment is wrapped by every error about an experiment file.
var ErrBadExperiment = errors.New("bad experiment file")

// Experiment is one claim and the setup that tests it (one YAML file).
type Experiment struct {
	Name   string `yaml:"name"`
	Claim  string `yaml:"claim"`
	Source string `yaml:"source"`
	// Setup: exactly one of Scenario, ScenarioFile, Cluster, Arithmetic.
	Scenario     *scenario.Scenario `yaml:"scenario"`
	ScenarioFile string             `yaml:"scenario_file"`
	Cluster      *ClusterSetup      `yaml:"cluster"`
	Arithmetic   bool               `yaml:"arithmetic"`
	Runs         []Run              `yaml:"runs"`
	Show         []string           `yaml:"show"`
	Decide       []Check            `yaml:"decide"`
	// CannotSimulate says which part of the claim needs real hardware.
	CannotSimulate string   `yaml:"cannot_simulate"`
	Reduced        *Reduced `yaml:"reduced"`
	Plot           *Plot    `yaml:"plot"`
	Notes          string   `yaml:"notes"`

	// File is the file name the experiment was read from.
	File string `yaml:"-"`
}

// Run is one configuration of an experiment. Which fields apply depends on
// the setup: kv … offline_gap for scenarios, policy for clusters, model …
// tokens for arithmetic.
type Run struct {
	Name string `yaml:"name"`
	// Scenario runs.
	KV         scenario.KVSpec    `yaml:"kv"`    // parsed as the file is read
	Alloc      scenario.AllocSpec `yaml:"alloc"` // parsed as the file is read
	OnOOM      string             `yaml:"on_oom"`
	Util       float64            `yaml:"gpu_memory_utilization"`
	KVDType    string             `yaml:"kv_dtype"`
	Bucket     int                `yaml:"bucket"`
	Beam       []int              `yaml:"beam"`
	MaxSeqs    int                `yaml:"max_seqs"`
	MaxContext int                `yaml:"max_context"`
	Defrag     string             `yaml:"defrag"`
	DefragLow  float64            `yaml:"defrag_low"`
	DefragHigh float64            `yaml:"defrag_high"`
	Floor      *float64           `yaml:"defrag_floor"`
	OfflineGap scenario.Duration  `yaml:"offline_gap"`
	// NoReactive stops the policy from also compacting for a request that
	// just failed, so that only its own trigger acts.
	NoReactive bool `yaml:"defrag_no_reactive"`
	// Duration overrides the scenario's duration for this run.
	Duration scenario.Duration `yaml:"duration"`
	// Cluster runs.
	Policy string `yaml:"policy"`
	// Arithmetic runs.
	Model  string `yaml:"model"`
	TP     int    `yaml:"tp"`
	Tokens int64  `yaml:"tokens"`
}

// ClusterSetup is a cluster experiment with the FGD paper's protocol.
type ClusterSetup struct {
	Nodes string  `yaml:"nodes"` // path from the repository root
	Pods  string  `yaml:"pods"`
	Seed  uint64  `yaml:"seed"`  // first seed (42)
	Seeds int     `yaml:"seeds"` // how many (1)
	Ratio float64 `yaml:"ratio"` // 0: protocol.DefaultRatio
}

// Reduced are the overrides of a reduced run (tests, --reduced).
type Reduced struct {
	Duration scenario.Duration `yaml:"duration"`
	Seeds    int               `yaml:"seeds"`
	Nodes    string            `yaml:"nodes"`
	Pods     string            `yaml:"pods"`
	Count    int               `yaml:"count"` // requests or sessions of a generated workload
}

// Plot says which series the experiment's chart draws.
type Plot struct {
	Series string `yaml:"series"` // frag, waste, kv_held, running (scenario); alloc_ratio, frag_total, stranded_nodes (cluster)
	Title  string `yaml:"title"`
}

// Check is one decision rule: the metric of a run (optionally combined with
// the same metric of a reference run) compared with bounds.
type Check struct {
	Label  string `yaml:"label"`
	Metric string `yaml:"metric"`
	Run    string `yaml:"run"`
	Ref    string `yaml:"ref"`
	// RefMetric compares with another metric (of Ref, or of Run itself
	// when Ref is empty); it needs combine.
	RefMetric string   `yaml:"ref_metric"`
	Combine   string   `yaml:"combine"` // ratio, diff, reduction (with ref)
	Op        string   `yaml:"op"`      // lt, le, gt, ge, between, approx
	Value     *float64 `yaml:"value"`
	Low       *float64 `yaml:"low"`
	High      *float64 `yaml:"high"`
	Tol       float64  `yaml:"tol"` // approx: relative tolerance (0.1)
}

// Kind is the setup kind of an experiment.
func (e *Experiment) Kind() string {
	switch {
	case e.Cluster != nil:
		return "cluster"
	case e.Arithmetic:
		return "arithmetic"
	default:
		return "scenario"
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Parse reads one experiment file; file names it in errors. Unknown fields,
// wrong types and invalid rules are errors naming the file, the line and
// the field.
func Parse(data []byte, file string) (*Experiment, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than %d", ErrBadExperiment, file, len(data), MaxFileBytes)
	}
	// One document, whose aliases expand to a bounded size (untrusted.MaxYAMLNodes).
	root, err := untrusted.CheckYAML(data)
	if err == io.EOF {
		return nil, fmt.Errorf("%w: %s: empty file", ErrBadExperiment, file)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadExperiment, file, untrusted.YAMLDecodeError(err, nil))
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s: line 1: want a mapping of fields", ErrBadExperiment, file)
	}
	var e Experiment
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadExperiment, file, untrusted.YAMLDecodeError(err, root))
	}
	e.File = file
	if err := e.validate(root.Content[0]); err != nil {
		return nil, err
	}
	return &e, nil
}

// lineOf returns the line of the value at path (mapping keys and sequence
// indices), or of the deepest node found on the way.
func lineOf(n *yaml.Node, path ...any) int {
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						line = n.Content[i].Line
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

func (e *Experiment) errf(root *yaml.Node, field string, path []any, format string, args ...any) error {
	return fmt.Errorf("%w: %s: line %d: field %q: %s", ErrBadExperiment, e.File, lineOf(root, path...), field, fmt.Sprintf(format, args...))
}

func (e *Experiment) validate(root *yaml.Node) error {
	if !nameRE.MatchString(e.Name) {
		return e.errf(root, "name", []any{"name"}, "want lower-case letters, digits and dashes, got %q", e.Name)
	}
	if strings.TrimSpace(e.Claim) == "" {
		return e.errf(root, "claim", []any{"claim"}, "the claim is missing")
	}
	setups := 0
	for _, b := range []bool{e.Scenario != nil, e.ScenarioFile != "", e.Cluster != nil, e.Arithmetic} {
		if b {
			setups++
		}
	}
	if setups != 1 {
		return e.errf(root, "scenario", nil, "want exactly one of scenario, scenario_file, cluster and arithmetic, got %d", setups)
	}
	if e.ScenarioFile != "" && (path.IsAbs(e.ScenarioFile) || strings.Contains(e.ScenarioFile, "..")) {
		return e.errf(root, "scenario_file", []any{"scenario_file"}, "want a path inside the repository, got %q", e.ScenarioFile)
	}
	if c := e.Cluster; c != nil {
		if c.Nodes == "" || c.Pods == "" {
			return e.errf(root, "cluster", []any{"cluster"}, "want nodes and pods")
		}
		if c.Seeds < 0 || c.Seeds > 100 {
			return e.errf(root, "cluster.seeds", []any{"cluster", "seeds"}, "want 1 to 100 seeds, got %d", c.Seeds)
		}
		if c.Ratio < 0 || c.Ratio > 10 {
			return e.errf(root, "cluster.ratio", []any{"cluster", "ratio"}, "want a ratio in (0, 10], got %v", c.Ratio)
		}
	}
	if len(e.Runs) == 0 && e.CannotSimulate == "" {
		return e.errf(root, "runs", []any{"runs"}, "want at least one run (or cannot_simulate)")
	}
	if len(e.Runs) > scenario.MaxRuns {
		return e.errf(root, "runs", []any{"runs"}, "%d runs, more than %d (scenario.MaxRuns): each run is a simulation of its own", len(e.Runs), scenario.MaxRuns)
	}
	seen := map[string]bool{}
	for i, r := range e.Runs {
		at := []any{"runs", i}
		if !nameRE.MatchString(r.Name) {
			return e.errf(root, fmt.Sprintf("runs[%d].name", i), at, "want lower-case letters, digits and dashes, got %q", r.Name)
		}
		if seen[r.Name] {
			return e.errf(root, fmt.Sprintf("runs[%d].name", i), at, "run %q defined twice", r.Name)
		}
		seen[r.Name] = true
		switch e.Kind() {
		case "cluster":
			if r.Policy == "" {
				return e.errf(root, fmt.Sprintf("runs[%d].policy", i), at, "a cluster run needs a policy")
			}
		case "arithmetic":
			if r.Model == "" || r.Tokens <= 0 {
				return e.errf(root, fmt.Sprintf("runs[%d]", i), at, "an arithmetic run needs a model and tokens > 0")
			}
		default:
			if r.Util < 0 || r.Util > 1 {
				return e.errf(root, fmt.Sprintf("runs[%d].gpu_memory_utilization", i), at, "want a share in (0, 1], got %v", r.Util)
			}
			if r.Bucket < 0 || r.MaxSeqs < 0 || r.MaxContext < 0 || r.OfflineGap < 0 || r.Duration < 0 {
				return e.errf(root, fmt.Sprintf("runs[%d]", i), at, "negative bucket, max_seqs, max_context, offline_gap or duration")
			}
		}
	}
	for _, m := range e.Show {
		if _, err := parseMetric(m, e.Kind()); err != nil {
			return e.errf(root, "show", []any{"show"}, "%v", err)
		}
	}
	if len(e.Decide) == 0 && e.CannotSimulate == "" {
		return e.errf(root, "decide", []any{"decide"}, "want at least one rule (or cannot_simulate)")
	}
	for i, c := range e.Decide {
		if err := c.validate(e.Kind(), seen); err != nil {
			return e.errf(root, fmt.Sprintf("decide[%d]", i), []any{"decide", i}, "%v", err)
		}
	}
	if p := e.Plot; p != nil && !slices.Contains(plotSeries[e.Kind()], p.Series) {
		return e.errf(root, "plot.series", []any{"plot", "series"}, "want one of %s, got %q", strings.Join(plotSeries[e.Kind()], ", "), p.Series)
	}
	if r := e.Reduced; r != nil && (r.Duration < 0 || r.Seeds < 0 || r.Count < 0) {
		return e.errf(root, "reduced", []any{"reduced"}, "negative duration, seeds or count")
	}
	return nil
}

var plotSeries = map[string][]string{
	"scenario":   {"frag", "waste", "kv_held", "running"},
	"cluster":    {"alloc_ratio", "frag_total", "stranded_nodes"},
	"arithmetic": {},
}

var ops = []string{"lt", "le", "gt", "ge", "between", "approx"}

func (c *Check) validate(kind string, runs map[string]bool) error {
	if _, err := parseMetric(c.Metric, kind); err != nil {
		return err
	}
	if !runs[c.Run] {
		return fmt.Errorf("run %q is not one of the experiment's runs", c.Run)
	}
	if c.Ref != "" && !runs[c.Ref] {
		return fmt.Errorf("ref %q is not one of the experiment's runs", c.Ref)
	}
	if c.RefMetric != "" {
		if _, err := parseMetric(c.RefMetric, kind); err != nil {
			return fmt.Errorf("ref_metric: %w", err)
		}
	}
	switch c.Combine {
	case "":
		if c.Ref != "" || c.RefMetric != "" {
			return errors.New("ref and ref_metric need combine: ratio, diff or reduction")
		}
	case "ratio", "diff", "reduction":
		if c.Ref == "" && c.RefMetric == "" {
			return fmt.Errorf("combine %q needs ref or ref_metric", c.Combine)
		}
	default:
		return fmt.Errorf("combine %q: want ratio, diff or reduction", c.Combine)
	}
	switch c.Op {
	case "lt", "le", "gt", "ge":
		if c.Value == nil {
			return fmt.Errorf("op %q needs value", c.Op)
		}
	case "between":
		if c.Low == nil || c.High == nil || *c.Low > *c.High {
			return errors.New("op between needs low <= high")
		}
	case "approx":
		if c.Value == nil || c.Tol < 0 {
			return errors.New("op approx needs value and tol >= 0")
		}
	default:
		return fmt.Errorf("op %q: want one of %s", c.Op, strings.Join(ops, ", "))
	}
	return nil
}

// Load reads the embedded experiment files, sorted by file name.
func Load() ([]*Experiment, error) {
	files, err := embeddedFiles()
	if err != nil {
		return nil, err
	}
	var out []*Experiment
	names := map[string]string{}
	for _, f := range files {
		e, err := Parse(f.data, "experiments/"+f.name)
		if err != nil {
			return nil, err
		}
		if prev, ok := names[e.Name]; ok {
			return nil, fmt.Errorf("%w: %s: name %q already used by %s", ErrBadExperiment, e.File, e.Name, prev)
		}
		names[e.Name] = e.File
		out = append(out, e)
	}
	return out, nil
}

type file struct {
	name string
	data []byte
}

func embeddedFiles() ([]file, error) {
	ents, err := embedded.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("reading embedded experiments: %w", err)
	}
	var out []file
	for _, de := range ents {
		b, err := embedded.ReadFile(de.Name())
		if err != nil {
			return nil, fmt.Errorf("reading embedded experiment %s: %w", de.Name(), err)
		}
		out = append(out, file{de.Name(), b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// Digest is the sha256, in hex, over the experiment files in sorted order
// (each as its name, a newline, its length, a newline and its bytes) and the
// scenario files they reference, read with readFile (paths from the
// repository root), in the same form.
func Digest(exps []*Experiment, readFile func(string) ([]byte, error)) (string, error) {
	files, err := embeddedFiles()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\n%d\n", f.name, len(f.data))
		h.Write(f.data)
	}
	var refs []string
	for _, e := range exps {
		if e.ScenarioFile != "" && !slices.Contains(refs, e.ScenarioFile) {
			refs = append(refs, e.ScenarioFile)
		}
	}
	sort.Strings(refs)
	for _, r := range refs {
		b, err := readFile(r)
		if err != nil {
			return "", fmt.Errorf("digest: %w", err)
		}
		fmt.Fprintf(h, "%s\n%d\n", r, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
