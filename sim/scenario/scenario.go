// Package scenario describes a whole simulation study in one YAML file: the
// model and GPU, the engine settings, the workload (a trace file, synthetic
// requests or multi-turn chat sessions) and the KV strategy × allocator runs
// to compare. `gpufrag simulate` runs Default when given nothing, and
// --scenario FILE otherwise; its flags override the file's fields.
//
// Build turns a Scenario into the requests and one sim.Config per run. It is
// deterministic: the same scenario and seed give the same requests, byte for
// byte; every random draw comes from rand.NewPCG(seed, stream) with a fixed
// stream per use.
//
// Errors name the file and the line of the field at fault (Scenario.File),
// except for a field a flag set (Scenario.Override). Read refuses, before
// decoding, a document of more than untrusted.MaxYAMLNodes values (aliases
// expanded) and more than MaxRuns runs. Files lists the files a scenario
// names, which the CLI checks its outputs against.
//
// Flags override a scenario through its methods (runs.go): PairRuns crosses
// KV strategies with allocators (`--kv ... --alloc ...`), Workload.SetRate,
// Scenario.UseTrace (a trace runs to its end) and Scenario.SetOnOOM (every
// run's policy gives way).
//
// The format (every field optional except as noted; unknown fields are an
// error naming the line):
//
//	name: long-context-chat
//	about: one line shown above the results
//	model: llama-3.1-8b          # preset name or a path to a Hugging Face config.json
//	gpu: h100-80g
//	tp: 1
//	kv_dtype: bf16               # bf16, fp16, fp32, fp8, fp8_e5m2, int8
//	weight_dtype: bf16           # bf16, fp16, fp8, int8, int4; absent: the model's
//	unquantized: self_attn,layers.0  # what quantized weights keep in 16 bits
//	                             # (model.ParseUnquantized); absent: the model's
//	profile: h100-80g            # step-time profile: "roofline", "joint" or a GPU
//	                             # preset's name (the joint model's profile of the
//	                             # scenario's GPU), or a YAML file relative to this
//	                             # scenario; absent: sim.DefaultStepTime's choice
//	seed: 42
//	duration: 30m                # virtual time; 0 or absent: until every request ends
//	engine:
//	  name: vllm-v1              # vllm-v1, vllm-v0, sglang: how steps are composed
//	  version: 0.8.3             # the engine's release (its overheads); absent: a recent one
//	  mixed_chunk: false         # sglang only: decodes join prefill steps
//	  num_scheduler_steps: 0     # vllm-v0 from 0.6.0, chunked prefill off, a profile: multi-step scheduling (0, 1: off)
//	  gpu_memory_utilization: 0.9
//	  max_batch_tokens: 8192
//	  max_seqs: 256
//	  chunked_prefill: true
//	  activations: true
//	  prefix_caching: true       # paged reuses cached prompt blocks (needs prefix ids)
//	  defrag: off                # off, threshold, adaptive, online, offline
//	  on_oom: default            # preempt, reserve, fail
//	  max_context: 0             # 0: the model's
//	  max_tokens: 0              # 0: max_context − prompt
//	workload:                    # exactly one of trace, requests, sessions
//	  trace: {file: conv.csv, format: azure, rate: 0, max_rows: 0, skip_bad_rows: false,
//	          run: 0}            # run: which run of a vllm-bench file of several (1-based)
//	  max_concurrency: 8         # a closed-loop client: at most N in flight (0: none);
//	                             # absent: a vllm-bench trace's own, else none
//	  warm_prompts: false        # the prompts start in the prefix cache (a repeated benchmark)
//	  requests:
//	    rate: 1.5                # requests per second
//	    cv: 1                    # 1: Poisson; > 1 bursty (Gamma)
//	    count: 0                 # 0: enough to fill duration
//	    prompt: {dist: loguniform, min: 1000, max: 100000}
//	    output: {dist: uniform, min: 50, max: 1000}
//	  sessions: {rate: 0.05, min_turns: 1, max_turns: 12, system_tokens: 1000,
//	             min_user: 200, max_user: 8000, min_output: 50, max_output: 800,
//	             think_s: 60, max_context: 100000, count: 0}
//	  bucket: 0                  # round prompts up to a multiple of K tokens
//	  beam: [1]                  # widths drawn per request: [1, 1, 1, 4]
//	runs:                        # the combinations to compare
//	  - {kv: paged:16, alloc: caching}
//	  - {kv: contiguous-grow, alloc: "caching:expandable_segments:True", on_oom: fail}
package scenario

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/model"
)

// ErrBadScenario means a scenario that cannot run; the message names the
// field (and the line, for YAML errors).
var ErrBadScenario = errors.New("bad scenario")

// MaxScenarioBytes bounds a scenario file (1 MiB: scenarios are short).
const MaxScenarioBytes = 1 << 20

// MaxRuns bounds a scenario's runs (64): each run simulates the whole
// workload again, so the runs multiply a study's time and memory. The
// default scenario compares 6, the shipped experiments at most 7, and
// every KV strategy crossed with every allocator (--kv, --alloc) under 50.
// Before, a 600 KB scenario of 20,000 runs took 17 s (150,000 aliases of
// one run: 170 s and 1.1 GB).
const MaxRuns = 64

// Scenario is one study.
type Scenario struct {
	Name    string `yaml:"name"`
	About   string `yaml:"about"`
	Model   string `yaml:"model"`
	GPU     string `yaml:"gpu"`
	TP      int    `yaml:"tp"`
	KVDType string `yaml:"kv_dtype"`
	// WeightDType stores the weights in another type (sim.Config.WeightDType).
	WeightDType string `yaml:"weight_dtype"`
	// Unquantized names what quantized weights keep in 16 bits
	// (sim.Config.Unquantized, model.ParseUnquantized's form).
	Unquantized string `yaml:"unquantized"`
	// Profile names the step-time model: "roofline" (sim.Config.Roofline),
	// "joint" or a GPU preset's name (the joint model's profile of GPU for
	// Engine.Name and Engine.Version: sim.DefaultProfile); anything with a
	// dot or a slash is a profile file (sim.Profile), relative to Dir.
	// Empty: sim.DefaultStepTime's choice.
	Profile  string   `yaml:"profile"`
	Seed     uint64   `yaml:"seed"`
	Duration Duration `yaml:"duration"`
	Engine   Engine   `yaml:"engine"`
	Workload Workload `yaml:"workload"`
	Runs     []Run    `yaml:"runs"`

	// Dir is the directory a relative profile file is read from: the
	// scenario file's, set by whoever read it (the CLI); empty is the
	// working directory. Trace files are relative to the working directory.
	Dir string `yaml:"-"`

	// File is the name Read was given, which Build's errors about a field
	// start with, with the field's line; empty for a scenario made in code
	// and for the embedded default.
	File string `yaml:"-"`
	// doc is the document Read parsed, for the lines of fields; set lists
	// the fields given elsewhere (Override).
	doc *yaml.Node
	set []string
}

// Engine holds the engine settings; zero values take sim.DefaultConfig's.
type Engine struct {
	// Name is the serving engine whose step composition is modelled
	// (sim.ParseEngine: vllm-v1, vllm-v0, sglang); empty is vllm-v1.
	Name string `yaml:"name"`
	// Version is the engine's release (sim.ParseEngineVersion: "0.8.3");
	// empty is sim.DefaultEngineVersion. It picks the step-time model's
	// overheads.
	Version string `yaml:"version"`
	// MixedChunk is SGLang's --enable-mixed-chunk (needs name sglang).
	MixedChunk bool `yaml:"mixed_chunk"`
	// SchedulerSteps is vLLM V0's --num-scheduler-steps (multi-step
	// scheduling, sim.Config.SchedulerSteps; needs name vllm-v0 at 0.6.0
	// or later, chunked prefill off and a step-time profile, not the
	// roofline); 0 or 1 is off.
	SchedulerSteps       int     `yaml:"num_scheduler_steps"`
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization"`
	MaxBatchTokens       int     `yaml:"max_batch_tokens"`
	MaxSeqs              int     `yaml:"max_seqs"`
	ChunkedPrefill       *bool   `yaml:"chunked_prefill"`
	Activations          *bool   `yaml:"activations"`
	PrefixCaching        *bool   `yaml:"prefix_caching"`
	Defrag               string  `yaml:"defrag"`
	OnOOM                string  `yaml:"on_oom"`
	MaxContext           int     `yaml:"max_context"`
	MaxTokens            int     `yaml:"max_tokens"`
}

// Workload is where the requests come from: exactly one of Trace, Requests
// and Sessions, then the optional transformations.
type Workload struct {
	Trace    *Trace    `yaml:"trace"`
	Requests *Requests `yaml:"requests"`
	Sessions *Sessions `yaml:"sessions"`
	Bucket   int       `yaml:"bucket"`
	Beam     []int     `yaml:"beam"`
	// MaxConcurrency is the client's cap on requests in flight
	// (sim.Config.MaxConcurrency), 0 for none; nil keeps a vllm-bench
	// trace's own max_concurrency (and no cap for anything else).
	MaxConcurrency *int `yaml:"max_concurrency"`
	// WarmPrompts starts the run with the requests' prompts in the prefix
	// cache (sim.Config.WarmPrompts): a benchmark repeated against one
	// server, which sends the same prompts on every run of one seed.
	WarmPrompts bool `yaml:"warm_prompts"`
}

// Trace reads a request trace file (workload.Read).
type Trace struct {
	File string `yaml:"file"`
	// Format is azure, mooncake, vidur, fineserve, burstgpt, jsonl or
	// vllm-bench; empty detects it from the file's start.
	Format string `yaml:"format"`
	// Rate in requests per second: Poisson arrivals for a length-only
	// trace, a rescaling of time for a timed one; 0 keeps the file's times
	// (a length-only trace then needs a rate).
	Rate        float64 `yaml:"rate"`
	MaxRows     int     `yaml:"max_rows"`
	SkipBadRows bool    `yaml:"skip_bad_rows"`
	// Run picks the run of a vllm-bench file that holds several
	// (workload.ReadOptions.Run, 1-based); 0 reads a file of one run.
	Run int `yaml:"run"`
	// ArrivalSeed draws a vllm-bench run's arrivals from this seed instead
	// of the run's own (workload.ReadOptions.ArrivalSeed): another draw of a
	// run that saved no start times.
	ArrivalSeed *uint64 `yaml:"arrival_seed"`
}

// Requests generates independent requests.
type Requests struct {
	Rate   float64 `yaml:"rate"`
	CV     float64 `yaml:"cv"`
	Count  int     `yaml:"count"`
	Prompt Dist    `yaml:"prompt"`
	Output Dist    `yaml:"output"`
}

// Dist is a length distribution over [Min, Max] tokens: uniform, loguniform
// (uniform in log space: as many 1K-2K as 50K-100K prompts), fixed (Min),
// or lognormal: round(exp(N(Mu, Sigma²))) drawn again until it lies in
// [Min, Max] (a truncated log-normal, the shape of ShareGPT's lengths; see
// calib/README.md for the parameters that give the vLLM paper's means).
type Dist struct {
	Dist  string  `yaml:"dist"`
	Min   int     `yaml:"min"`
	Max   int     `yaml:"max"`
	Mu    float64 `yaml:"mu"`    // lognormal: mean of ln(tokens)
	Sigma float64 `yaml:"sigma"` // lognormal: standard deviation of ln(tokens), > 0
}

// Sessions generates multi-turn chat (workload.Sessions).
type Sessions struct {
	Rate         float64 `yaml:"rate"`
	Count        int     `yaml:"count"` // sessions; 0: enough to fill duration
	MinTurns     int     `yaml:"min_turns"`
	MaxTurns     int     `yaml:"max_turns"`
	SystemTokens int     `yaml:"system_tokens"`
	MinUser      int     `yaml:"min_user"`
	MaxUser      int     `yaml:"max_user"`
	MinOutput    int     `yaml:"min_output"`
	MaxOutput    int     `yaml:"max_output"`
	ThinkSeconds float64 `yaml:"think_s"`
	MaxContext   int     `yaml:"max_context"`
}

// Run is one KV strategy × allocator combination. Its specs are parsed as
// the file is read (KVSpec, AllocSpec), or by the command line from its
// flags: the plan holds them typed, and nothing after parses their text.
type Run struct {
	KV    KVSpec    `yaml:"kv"`
	Alloc AllocSpec `yaml:"alloc"`
	OnOOM string    `yaml:"on_oom"` // overrides engine.on_oom for this run
}

// Duration is a time.Duration written as "30m", "90s" or "1h30m" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: duration %q: want a non-negative duration such as 30m or 90s", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

//go:embed default.yaml
var defaultYAML []byte

// Default returns the embedded default scenario: a mixed long-context chat
// service on one 80 GB GPU (see default.yaml).
func Default() *Scenario {
	s, err := Read(bytes.NewReader(defaultYAML), "default.yaml")
	if err != nil {
		panic(fmt.Errorf("scenario: embedded default does not parse: %w", err))
	}
	s.File, s.doc = "", nil // not a file the user has
	return s
}

// DefaultYAML returns the embedded default scenario's text.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Read parses a scenario; name is used in messages and kept as File.
// Unknown fields, several YAML documents, files over MaxScenarioBytes,
// documents of more than untrusted.MaxYAMLNodes values and keys (aliases
// expanded) and more than MaxRuns runs are errors, found before the document is decoded.
func Read(r io.Reader, name string) (*Scenario, error) {
	r, err := untrusted.Sniff(r, untrusted.CheckText) // random bytes fail in the first 4 KiB
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadScenario, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadScenario, name, err)
	}
	if len(data) > MaxScenarioBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrBadScenario, name, MaxScenarioBytes)
	}
	root, err := untrusted.CheckYAML(data)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: empty file", ErrBadScenario, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadScenario, name, untrusted.YAMLDecodeError(err, nil))
	}
	if len(root.Content) == 1 && root.Content[0].Kind != yaml.MappingNode {
		top := root.Content[0]
		return nil, fmt.Errorf("%w: %s", ErrBadScenario, untrusted.Format(name, top.Line, "",
			"not a scenario: want a YAML mapping of fields (model:, gpu:, engine:, workload:, runs:; "+
				"`gpufrag simulate --print-scenario` prints one), not "+describeNode(top, data)))
	}
	if k, v := mappingKey(root, "runs"); v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > MaxRuns {
		return nil, fmt.Errorf("%w: %s", ErrBadScenario, untrusted.Format(name, k.Line, "runs",
			fmt.Sprintf("%d runs, more than %d (scenario.MaxRuns): each run simulates the whole workload again", len(v.Content), MaxRuns)))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadScenario, name, untrusted.YAMLDecodeError(err, root))
	}
	s.File, s.doc = name, root
	return &s, nil
}

// describeNode says what a YAML node of data that should have been a
// mapping is: "a list", "text ("sn,cpu_milli,...")" (its first line, as
// the file has it: a plain scalar's lines are joined), "a number (3)".
func describeNode(n *yaml.Node, data []byte) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "a number (" + untrusted.Clip(n.Value) + ")"
		case "!!bool":
			return "true or false (" + untrusted.Clip(n.Value) + ")"
		case "!!null":
			return "null (" + untrusted.Clip(n.Value) + ")"
		}
		text := n.Value
		if lines := bytes.Split(data, []byte("\n")); n.Style == 0 && n.Line >= 1 && n.Line <= len(lines) {
			text = strings.TrimSpace(string(lines[n.Line-1])) // a plain scalar: its first line
		}
		return "text (" + untrusted.Quote(text) + ")"
	}
	return "an alias"
}

// Override records that fields (paths such as "model", "workload" or
// "engine.defrag") were set from elsewhere than the file, such as the
// CLI's flags: Build's errors about them, or about fields below them,
// name neither the file nor a line of it.
func (s *Scenario) Override(fields ...string) { s.set = append(s.set, fields...) }

// NamedFile is a file a scenario names: the field and the path as Build
// opens it.
type NamedFile struct{ Field, Path string }

// Files returns the files Build reads for s: the model's config.json
// (model.ConfigPath; none for a preset), a profile file (relative to Dir)
// and the trace. A caller that writes files checks them against these, as
// against the files its flags name.
func (s *Scenario) Files() []NamedFile {
	var out []NamedFile
	if p := model.ConfigPath(s.Model); p != "" {
		out = append(out, NamedFile{"model", p})
	}
	if p := s.profilePath(); p != "" {
		out = append(out, NamedFile{"profile", p})
	}
	if t := s.Workload.Trace; t != nil && t.File != "" {
		out = append(out, NamedFile{"workload.trace.file", t.File})
	}
	return out
}

// profilePath is the file s.Profile names, relative to s.Dir, or "" when
// it names none (an embedded profile, or none).
func (s *Scenario) profilePath() string {
	if !IsProfileFile(s.Profile) {
		return ""
	}
	if s.Dir != "" && !filepath.IsAbs(s.Profile) {
		return filepath.Join(s.Dir, s.Profile)
	}
	return s.Profile
}

// fieldError is a bad value of one field of a scenario; Build adds where
// the field is (locate).
type fieldError struct {
	field string
	err   error // what is wrong; it may wrap another package's error
	file  string
	line  int // 0: the field is not in the file
}

func badField(field, format string, args ...any) error {
	return &fieldError{field: field, err: fmt.Errorf(format, args...)}
}

func (e *fieldError) Error() string {
	switch {
	case e.file == "":
		return fmt.Sprintf("%v: %s: %v", ErrBadScenario, e.field, e.err)
	case e.line == 0:
		return fmt.Sprintf("%v: %s: field %q: %v", ErrBadScenario, e.file, e.field, e.err)
	}
	return fmt.Sprintf("%v: %s", ErrBadScenario, untrusted.Format(e.file, e.line, e.field, e.err.Error()))
}

func (e *fieldError) Unwrap() []error { return []error{ErrBadScenario, e.err} }

// FieldOf returns the field an error of Build or EngineConfig is about (a
// path such as "engine.gpu_memory_utilization") and what is wrong with its
// value, without the file, line and field; ok is false for an error about
// no one field. A caller whose flag set the field (Override) says it of
// the flag.
func FieldOf(err error) (field string, what error, ok bool) {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return "", nil, false
	}
	return fe.field, fe.err, true
}

// locate adds s's file and the field's line to a fieldError about a
// field the file set.
func (s *Scenario) locate(err error) error {
	fe, ok := err.(*fieldError)
	if !ok || s.File == "" {
		return err
	}
	for _, f := range s.set {
		if fe.field == f || strings.HasPrefix(fe.field, f+".") || strings.HasPrefix(fe.field, f+"[") {
			return err
		}
	}
	return &fieldError{field: fe.field, err: fe.err, file: s.File, line: s.lineOf(fe.field)}
}

// lineOf returns the line of field (mapping keys and sequence indices,
// "runs[2].on_oom") in the document Read parsed, or of its nearest parent
// there; 0 when not even the first key is in the file.
func (s *Scenario) lineOf(field string) int {
	if s.doc == nil {
		return 0
	}
	n, line := s.doc, 0
	for _, part := range strings.Split(field, ".") {
		key, rest, _ := strings.Cut(part, "[")
		k, v := mappingKey(n, key)
		if k == nil {
			return line
		}
		n, line = v, k.Line
		for rest != "" {
			var i int
			var more string
			if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil {
				return line
			}
			_, more, _ = strings.Cut(rest, "[")
			if n.Kind == yaml.AliasNode {
				n = n.Alias
			}
			if n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line, rest = n.Content[i], n.Content[i].Line, more
		}
	}
	return line
}

// mappingKey returns the key and value nodes of key in the mapping n (the
// document's top mapping for a document node; through an alias), or nils.
func mappingKey(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
