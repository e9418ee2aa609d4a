// Package calib fits gpufrag's step-time model (sim.Profile) to
// measurements and says how well it fits:
//
//   - Published and Parse: the published timing figures it is fitted to or
//     judged against, published.yaml, embedded and validated (calib/README.md
//     says what each source is, how each figure was read and how the
//     figures split into fitting and held-out sets);
//   - Calibrate: a profile fitted to benchmark runs (vLLM --save-result,
//     SGLang bench_serving) replayed as their clients ran them, the work of
//     gpufrag calibrate (docs/calibrate.md);
//   - ReadOps and FitOps: the linear-layer and attention terms fitted to
//     operator timings taken on a GPU by calib/device/steptime.py
//     (gpufrag calibrate --ops);
//   - Fidelity: every published figure simulated under the profiles and
//     the roofline, the generated docs/fidelity.md.
package calib

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/model"
)

//go:embed published.yaml
var publishedYAML []byte

// publishedName names the embedded file in errors.
const publishedName = "calib/published.yaml"

// maxReported bounds the problems one error lists: enough to fix a batch
// of edits at once, short enough to read (a whole-file mistake such as a
// renamed key would otherwise repeat once per figure, 192 times).
const maxReported = 10

// ErrInvalid is wrapped by every error of Parse: the dataset does not parse
// or a figure lacks what makes it traceable and usable.
var ErrInvalid = errors.New("invalid published dataset")

// Dataset is the whole file: the sources and the figures read from them.
type Dataset struct {
	Version int      `yaml:"version"`
	Sources []Source `yaml:"sources"`
	Figures []Figure `yaml:"figures"`
}

// Source is one paper, repository or page.
type Source struct {
	ID       string `yaml:"id"`
	Title    string `yaml:"title"`
	URL      string `yaml:"url"`
	Revision string `yaml:"revision"`
	Licence  string `yaml:"licence"`
}

// Figure is one published value with where it is, what it measures and the
// setup needed to simulate it.
type Figure struct {
	ID         string  `yaml:"id"`
	Source     string  `yaml:"source"`
	Ref        string  `yaml:"ref"`      // figure, table or file path and field
	Revision   string  `yaml:"revision"` // commit, arXiv version or build
	URL        string  `yaml:"url"`
	Metric     string  `yaml:"metric"`
	Unit       string  `yaml:"unit"`
	Value      float64 `yaml:"value"`
	Read       string  `yaml:"read"` // printed, plot or computed
	Precision  string  `yaml:"precision"`
	Verified   bool    `yaml:"verified"`
	VerifyNote string  `yaml:"verify_note"`
	Use        string  `yaml:"use"` // fit, holdout, cross-check or workload
	UseNote    string  `yaml:"use_note"`
	Setup      Setup   `yaml:"setup"`

	Line int `yaml:"-"` // line of the figure in the file
}

// Setup is what a simulation of the figure needs.
type Setup struct {
	Model         string   `yaml:"model"`
	GPU           string   `yaml:"gpu"`
	GPUs          int      `yaml:"gpus"`
	TP            int      `yaml:"tp"`
	Engine        string   `yaml:"engine"`
	EngineVersion string   `yaml:"engine_version"`
	DType         string   `yaml:"dtype"`
	System        string   `yaml:"system"`
	Options       string   `yaml:"options"`
	GPUNote       string   `yaml:"gpu_note"`
	Workload      Workload `yaml:"workload"`
	Unknown       []string `yaml:"unknown"` // setup facts the source does not state
	// WeightDType is how the weights are stored when not in DType (fp8,
	// int8, int4: model.ParseDType's names); empty: DType.
	WeightDType string `yaml:"weight_dtype"`
	// Unquantized is what quantized weights keep in 16 bits beyond the
	// embedding, lm_head and norms (model.ParseUnquantized's form: the
	// checkpoint's modules_to_not_convert); empty: nothing more.
	Unquantized string `yaml:"unquantized"`
	// KVDType is the KV cache's element type (model.ParseKVDType's names);
	// empty: not stated, the engine's default for DType.
	KVDType string `yaml:"kv_dtype"`
}

// Workload is the client side of the setup. Absent fields are unset.
type Workload struct {
	Dataset          string   `yaml:"dataset"`
	Arrival          string   `yaml:"arrival"`
	RequestRate      *float64 `yaml:"request_rate"` // req/s; +Inf: all at once
	Burstiness       *float64 `yaml:"burstiness"`
	MaxConcurrency   int      `yaml:"max_concurrency"`
	NumPrompts       int      `yaml:"num_prompts"`
	Batch            int      `yaml:"batch"`
	InputLen         int      `yaml:"input_len"`
	OutputLen        int      `yaml:"output_len"`
	RandomInputLen   int      `yaml:"random_input_len"`
	RandomOutputLen  int      `yaml:"random_output_len"`
	RandomRangeRatio *float64 `yaml:"random_range_ratio"`
	// LengthSpread is a closed-loop run's spread of lengths around
	// input_len and output_len: each request's drawn uniformly within
	// ±spread of them (vllm bench serve's --random-range-ratio; a source
	// that states a variance without its draw). Absent: every request has
	// exactly input_len and output_len.
	LengthSpread         *float64 `yaml:"length_spread"`
	TotalInputTokens     int      `yaml:"total_input_tokens"`
	TotalOutputTokens    int      `yaml:"total_output_tokens"`
	Lengths              string   `yaml:"lengths"`
	IgnoreEOS            *bool    `yaml:"ignore_eos"`
	MaxTokens            int      `yaml:"max_tokens"`
	Temperature          *float64 `yaml:"temperature"`
	PrefixCaching        *bool    `yaml:"prefix_caching"`
	ChunkedPrefill       *bool    `yaml:"chunked_prefill"`
	MaxNumSeqs           int      `yaml:"max_num_seqs"`
	MaxNumBatchedTokens  int      `yaml:"max_num_batched_tokens"`
	MaxModelLen          int      `yaml:"max_model_len"`
	MaxSeqLen            int      `yaml:"max_seq_len"`
	BlockSize            int      `yaml:"block_size"`
	NumSchedulerSteps    *int     `yaml:"num_scheduler_steps"`
	GPUMemoryUtilization *float64 `yaml:"gpu_memory_utilization"`
	NumIters             int      `yaml:"num_iters"`
	RunsPooled           int      `yaml:"runs_pooled"`
	NumTokens            int      `yaml:"num_tokens"`
	Elements             int      `yaml:"elements"`
	Bytes                int      `yaml:"bytes"`
	SLO                  string   `yaml:"slo"`
	Notes                string   `yaml:"notes"`
	LocalCopy            string   `yaml:"local_copy"` // path under shared/ of a copied source file
	// WarmFrom is the local copy of a run that sent the same prompts to
	// the same server before this one (a repeated benchmark), so that with
	// prefix caching they were cached: the replay starts warm.
	WarmFrom string `yaml:"warm_from"`
}

// Known values of the enumerated fields; a value outside them is a typo.
// knownGPU holds the GPU presets and the GPUs figures name that have none
// ("h100" of unknown variant, a100-80g-pcie, the GPUs of cross-check figures).
var (
	knownRead = set("printed", "plot", "computed")
	knownUse  = set("fit", "holdout", "cross-check", "workload")
	knownGPU  = set("a100-40g", "a100-80g", "a100-80g-pcie", "h100-80g", "h100", "h200-141g", "l40s-48g",
		"a10g-24g", "a800-80g", "b200-192g", "h20-3e-141g", "l4-24g", "mi300x-192g", "rtx-6000-ada-48g", "rtx-a6000-48g",
		"rtx3090-24g", "rtx4090-24g", "rtx4090d-24g", "v100s-32g")
	knownMetric = set("allreduce_time_median", "dataset_mean_input_len", "dataset_mean_output_len",
		"decode_rate_per_request", "duration", "e2e_latency_batch", "e2e_latency_mean", "itl_median",
		"kv_cache_slots", "kv_external_frag_share", "kv_token_state_share", "latency_per_token_p50",
		"linear_layers_time_per_layer", "mean_batch", "normalized_latency_mean", "op_time_median",
		"output_throughput", "request_rate_at_slo", "step_time", "throughput_ratio", "tpot_median",
		"ttft_mean", "ttft_median", "ttft_p99")
	idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// published is the embedded dataset, parsed once: with some two thousand
// figures a parse takes about half a second.
var published struct {
	sync.Once
	d   *Dataset
	err error
}

// Published returns the embedded dataset, validated: a copy of its
// sources and figures (their setups' pointer fields are shared and must
// not be written through).
func Published() (*Dataset, error) {
	published.Do(func() { published.d, published.err = Parse(publishedName, publishedYAML) })
	if published.err != nil {
		return nil, published.err
	}
	d := *published.d
	d.Sources, d.Figures = slices.Clone(d.Sources), slices.Clone(d.Figures)
	return &d, nil
}

// Parse decodes and validates a dataset; name is used in errors. Unknown
// fields are refused (a misspelt key would otherwise drop a setup fact).
func Parse(name string, data []byte) (*Dataset, error) {
	var d Dataset
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	if lines := figureLines(&root); len(lines) == len(d.Figures) {
		for i := range d.Figures {
			d.Figures[i].Line = lines[i]
		}
	}
	if err := d.validate(name); err != nil {
		return nil, err
	}
	return &d, nil
}

// figureLines returns the line of each item of the top-level "figures".
func figureLines(root *yaml.Node) []int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "figures" {
			var lines []int
			for _, it := range m.Content[i+1].Content {
				lines = append(lines, it.Line)
			}
			return lines
		}
	}
	return nil
}

func (d *Dataset) validate(name string) error {
	var errs []string
	bad := func(line int, what, id, field, msg string) {
		errs = append(errs, fmt.Sprintf("%s: line %d: %s %q: field %q: %s", name, line, what, id, field, msg))
	}
	if d.Version != 1 {
		errs = append(errs, fmt.Sprintf("%s: field \"version\": %d, want 1", name, d.Version))
	}
	sources := map[string]bool{}
	for _, s := range d.Sources {
		switch {
		case s.ID == "" || sources[s.ID]:
			bad(0, "source", s.ID, "id", "empty or repeated: give each source its own id")
		case s.URL == "":
			bad(0, "source", s.ID, "url", "missing: give the address of the paper, repository or page")
		case s.Revision == "":
			bad(0, "source", s.ID, "revision", "missing: give the commit, arXiv version or build")
		case s.Licence == "":
			bad(0, "source", s.ID, "licence", "missing: say what may be copied")
		}
		sources[s.ID] = true
	}
	used := map[string]bool{}
	ids := map[string]int{}
	for _, f := range d.Figures {
		req := func(field, v, msg string) {
			if strings.TrimSpace(v) == "" {
				bad(f.Line, "figure", f.ID, field, "missing: "+msg)
			}
		}
		if !idPattern.MatchString(f.ID) {
			bad(f.Line, "figure", f.ID, "id", "want lower-case letters, digits, '.' and '-'")
		} else if l, dup := ids[f.ID]; dup {
			bad(f.Line, "figure", f.ID, "id", fmt.Sprintf("repeats the figure at line %d: ids are unique", l))
		}
		ids[f.ID] = f.Line
		if !sources[f.Source] {
			bad(f.Line, "figure", f.ID, "source", fmt.Sprintf("%q is not in sources", f.Source))
		}
		used[f.Source] = true
		req("ref", f.Ref, "name the figure, table or file path and field")
		req("revision", f.Revision, "give the commit, arXiv version or build")
		if !strings.HasPrefix(f.URL, "https://") {
			bad(f.Line, "figure", f.ID, "url", "want an https:// address of the source")
		}
		if !knownMetric[f.Metric] {
			bad(f.Line, "figure", f.ID, "metric", fmt.Sprintf("%q is not a known metric: add it to knownMetric with its meaning in README.md", f.Metric))
		}
		req("unit", f.Unit, "give the unit of value")
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value <= 0 {
			bad(f.Line, "figure", f.ID, "value", fmt.Sprintf("%v: want a finite positive number", f.Value))
		}
		if !knownRead[f.Read] {
			bad(f.Line, "figure", f.ID, "read", fmt.Sprintf("%q: want printed, plot or computed", f.Read))
		}
		req("precision", f.Precision, "say how exact the value is")
		if !f.Verified && strings.TrimSpace(f.VerifyNote) == "" {
			bad(f.Line, "figure", f.ID, "verify_note", "missing: an unverified figure says why")
		}
		if !knownUse[f.Use] {
			bad(f.Line, "figure", f.ID, "use", fmt.Sprintf("%q: want fit, holdout, cross-check or workload", f.Use))
		} else if f.Use == "fit" && !f.Verified {
			bad(f.Line, "figure", f.ID, "use", "fit needs a verified figure: hold it out or verify it")
		}
		req("setup.model", f.Setup.Model, "name the model")
		req("setup.engine", f.Setup.Engine, "name the engine")
		if !knownGPU[f.Setup.GPU] {
			bad(f.Line, "figure", f.ID, "setup.gpu", fmt.Sprintf("%q is not a known GPU", f.Setup.GPU))
		}
		if w := f.Setup.WeightDType; w != "" {
			if _, err := model.ParseDType(w); err != nil {
				bad(f.Line, "figure", f.ID, "setup.weight_dtype", err.Error())
			}
		}
		if u := f.Setup.Unquantized; u != "" {
			if _, err := model.ParseUnquantized(u); err != nil {
				bad(f.Line, "figure", f.ID, "setup.unquantized", err.Error())
			}
		}
		if k := f.Setup.KVDType; k != "" {
			if _, err := model.ParseKVDType(k); err != nil {
				bad(f.Line, "figure", f.ID, "setup.kv_dtype", err.Error())
			}
		}
		if f.Setup.GPUs < 1 || f.Setup.TP < 1 || f.Setup.TP > f.Setup.GPUs {
			bad(f.Line, "figure", f.ID, "setup.tp", fmt.Sprintf("gpus %d, tp %d: want 1 <= tp <= gpus", f.Setup.GPUs, f.Setup.TP))
		}
	}
	for _, s := range d.Sources {
		if !used[s.ID] {
			bad(0, "source", s.ID, "id", "no figure cites it: remove it or add its figures")
		}
	}
	if len(errs) > maxReported {
		errs = append(errs[:maxReported], fmt.Sprintf("and %d more", len(errs)-maxReported))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}
