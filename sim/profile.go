// Profiles: the step-time model's parameters as data, one per GPU and
// engine, read from and written to YAML. See steptime.go for the model,
// profile_default.go for the embedded profiles.

package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// ErrBadProfile means a profile that cannot be used; the message names the
// file, and the line or the field.
var ErrBadProfile = errors.New("bad profile")

// Unfitted is the FittedTo entry of a profile whose parameters come from
// datasheets and reading, not from a fit to measurements.
const Unfitted = "unfitted"

// Profile is every parameter of the step-time model (Time in steptime.go)
// for one GPU under one serving engine. Units are in the YAML names: FLOP/s,
// bytes/s, ns; efficiencies are shares of a peak, in (0, 1].
//
// Peak holds the GPU's peaks (the joint model's: the preset's datasheet
// figures scaled to what the board sustains, SustainedPeaks); the other
// groups are what a calibration fits. A profile is read-only once in a
// Config; Clone before changing a shared one.
type Profile struct {
	GPU    string     `yaml:"gpu"`    // GPU preset name (model.LookupGPU); must match Config.GPU.Name
	Engine EngineKind `yaml:"engine"` // vllm-v1, vllm-v0, sglang; must match Config.Engine
	// EngineVersion is the engine's release the overheads are for
	// (ParseEngineVersion; optional: absent, the engine's default). A
	// config's release must be of the same overhead class.
	EngineVersion string `yaml:"engine_version,omitempty"`
	// FittedTo lists the measurements the parameters were fitted to, as
	// figure ids (calib/published.yaml), or the single entry "unfitted".
	FittedTo []string `yaml:"fitted_to"`
	Notes    string   `yaml:"notes"` // free text: sources, caveats

	Peak      PeakRates     `yaml:"peak"`
	Linear    LinearTerm    `yaml:"linear"`
	Attention AttentionTerm `yaml:"attention"`
	AllReduce AllReduceTerm `yaml:"all_reduce"`
	Overhead  OverheadTerm  `yaml:"overhead"`
	CUDAGraph CUDAGraphTerm `yaml:"cuda_graph"`
}

// PeakRates are the GPU's peaks the efficiencies are shares of: the
// datasheet's, or in the joint model's profiles SustainedPeaks.
type PeakRates struct {
	BF16FLOPSPerS float64 `yaml:"bf16_flops_per_s"` // dense BF16 tensor FLOP/s
	FP8FLOPSPerS  float64 `yaml:"fp8_flops_per_s"`  // dense FP8 tensor FLOP/s; 0: none (FP8 weights use BF16 math)
	MemBytesPerS  float64 `yaml:"mem_bytes_per_s"`  // memory bandwidth
	LinkBytesPerS float64 `yaml:"link_bytes_per_s"` // GPU-to-GPU bandwidth one way (NVLink, else PCIe)
}

// LinearTerm is the projections' and MLPs' share: compute-bound at many
// tokens, weight-read bound at few.
type LinearTerm struct {
	// ComputeEffMax is the share of the peak FLOP/s large GEMMs reach.
	ComputeEffMax float64 `yaml:"compute_eff_max"`
	// FP8ComputeEffMax is the share of the FP8 peak large GEMMs of FP8
	// weights reach, their activations quantized on the fly (W8A8); it
	// replaces ComputeEffMax where FP8 weights run at the FP8 peak.
	FP8ComputeEffMax float64 `yaml:"fp8_compute_eff_max"`
	// ComputeHalfTokens is n½: at n tokens the GEMMs reach
	// ComputeEffMax × n ÷ (n + n½) of the peak, so one step of n tokens
	// costs (n + n½) tokens' FLOPs at ComputeEffMax.
	ComputeHalfTokens float64 `yaml:"compute_half_tokens"`
	// WeightBWEff is the share of the memory bandwidth weight reads reach.
	WeightBWEff float64 `yaml:"weight_bw_eff"`
	// BlendExponent is p of the linear layers' time (c^p + w^p)^(1/p) from
	// their compute time c and weight reads w: how sharply a GEMM turns
	// from weight-bound to compute-bound. 2 (a Euclidean norm) matches
	// Vidur's operator profiles on both A100 and H100 within 7% from 1 to
	// 8,192 tokens; large p tends to max(c, w).
	BlendExponent float64 `yaml:"blend_exponent"`
	// GEMMFixedNs is one GEMM kernel's fixed device time, in ns, beside
	// its weight reads: at a decode's few rows a GEMM of b bytes takes
	// GEMMFixedNs + b ÷ (bandwidth × WeightBWEff). It is a time, the same
	// on every GPU (like Attention.KVSeqNs), paid by the GEMMs NewShape
	// counts (Shape.GEMMs: 4 a layer, GEMMsPerLayer; the lm_head, an MoE
	// router and MLA's extra projections are not counted), on the weights
	// side of the linear blend, so a compute-bound prefill hides it. The joint model's is
	// drawn from Vidur's operator profiles (sim/profiles/prior.yaml;
	// TestPriorGEMMFixedNsFromVidur); 0 (older profiles, which omit it):
	// no such term.
	GEMMFixedNs float64 `yaml:"gemm_fixed_ns,omitempty"`
	// LayerKernelsNs is the device time of a layer's kernels outside the
	// GEMMs and attention, in ns: its two RMSNorms (each with the
	// residual add fused, as vLLM and SGLang run them), the rotary
	// embedding and the gated activation, at decode sizes, where they are
	// each a few µs whatever their bytes. A time, the same on every GPU,
	// paid by every step, graphed or not (it is the kernels' own time, not
	// their launches: Overhead.EagerPerLayerNs); Breakdown.LayerKernelsNs.
	// Drawn from the same profiles (TestPriorLayerKernelsNsFromVidur); 0
	// (older profiles): no such term.
	LayerKernelsNs float64 `yaml:"layer_kernels_ns,omitempty"`
}

// AttentionTerm is attention's share, apart from the linear layers.
type AttentionTerm struct {
	// PrefillComputeEff is the share of the BF16 peak causal prefill
	// attention (FlashAttention) reaches on its QKᵀ and AV FLOPs.
	// With PrefillTokNs set it is the asymptote a long prompt reaches.
	PrefillComputeEff float64 `yaml:"prefill_compute_eff"`
	// PrefillTokNs is prefill attention's fixed work per query token,
	// query head (per GPU) and layer, in ns, beside the per-pair cost:
	// loading the query tile, the softmax epilogue, writing O and the
	// causal diagonal tile, which a short prompt pays on fewer pairs. So a
	// prompt of L tokens runs at PrefillComputeEff × (L+1)/2 ÷ ((L+1)/2 +
	// t_tok ÷ t_pair) of the peak. It is a time, the same on every GPU, like
	// KVSeqNs. The joint model's is drawn from FlashAttention-3's forward
	// table (sim/profiles/prior.yaml; TestPriorPrefillTokNsFromFlashTable);
	// 0 (older profiles, which omit it): no such term.
	PrefillTokNs float64 `yaml:"prefill_tok_ns,omitempty"`
	// KVBWEff is the share of the memory bandwidth KV-cache traffic reaches:
	// decode attention reading each sequence's context (paged, in blocks)
	// and every token's K and V written.
	KVBWEff float64 `yaml:"kv_bw_eff"`
	// KVSeqNs is the decode attention kernel's fixed work per decoding
	// sequence, KV head (per GPU, at its tensor parallelism) and layer, in
	// ns: the paged kernel splits its work by (sequence, KV head), and each
	// pair has its block-table reads, its split-KV reduction and a partial
	// last block, whatever its context. It is a time, not a count of KV
	// tokens, so the same kernel costs as much on a slower GPU, and a model
	// with more KV heads a GPU (MHA) pays it more often. The joint model's
	// is drawn from a kernel table (sim/profiles/prior.yaml;
	// TestPriorKVSeqNsFromKernelTable).
	KVSeqNs float64 `yaml:"kv_seq_ns"`
	// KVHalfContext is the older form of the same cost, read from profiles
	// written before kv_seq_ns: ctx½ tokens of KV reads a decoding
	// sequence, so that one attending to ctx tokens reads them at KVBWEff
	// × ctx ÷ (ctx + ctx½) of the bandwidth. A profile sets kv_seq_ns or
	// this (both add up when both are set); new profiles write 0 here and
	// omit it, and no fit moves it.
	KVHalfContext float64 `yaml:"kv_half_context,omitempty"`
}

// AllReduceTerm is tensor parallelism's two all-reduces per layer.
type AllReduceTerm struct {
	BWEff     float64 `yaml:"bw_eff"`     // share of the link bandwidth a ring all-reduce reaches
	LatencyNs int64   `yaml:"latency_ns"` // fixed cost of one all-reduce call
}

// OverheadTerm is time the GPU's kernels do not account for.
type OverheadTerm struct {
	StepNs   int64 `yaml:"step_ns"`    // per step: scheduling, sampling, input preparation
	PerSeqNs int64 `yaml:"per_seq_ns"` // per sequence in the step: its metadata, sampling and output
	// EagerPerLayerNs is the launch cost per layer of a step that is not
	// one full CUDA graph (mixed and prefill steps, decode batches above
	// the largest capture size).
	EagerPerLayerNs int64 `yaml:"eager_per_layer_ns"`
	// RequestNs is each request's latency outside the engine's steps: the
	// serving front end's tokenization and HTTP, the first token's way back
	// to the client. It is added to every request's TTFT and E2E, and
	// takes no GPU time. Exact for an open-loop client (every arrival
	// shifts alike); under a closed-loop client (Config.MaxConcurrency)
	// the next request would also be sent that much later, which the
	// engine does not model.
	RequestNs int64 `yaml:"request_ns"`
	// PerTokenNs is the CPU time per output token the engine streams:
	// detokenizing it and the API server's response chunk.
	PerTokenNs int64 `yaml:"per_token_ns"`
	// OutputOverlap says the output work (PerTokenNs) runs beside the
	// steps, in a process or thread of its own (vLLM from 0.6.0, SGLang's
	// detokenizer): a step then takes max(its GPU and scheduler time, its
	// output work). Without it (vLLM V0 before 0.6.0) the two add up.
	OutputOverlap bool `yaml:"output_overlap"`
	// ScheduleOverlap says the engine prepares each step on the CPU while
	// the GPU runs the one before (vLLM V1's async scheduling, the default
	// from 0.14.0; SGLang's overlap scheduler, the default from 0.4.0): the
	// per-step and per-sequence work (StepNs, PerSeqNs) then costs a step
	// only where it exceeds the GPU's time, and a request that arrives
	// while a step runs misses the step already prepared, joining the one
	// after it. Not a fitted parameter: the joint model sets it from the
	// engine and release (ScheduleOverlap); false in a profile file that
	// does not set it.
	ScheduleOverlap bool `yaml:"schedule_overlap,omitempty"`
}

// CUDAGraphTerm is which steps the engine replays from CUDA graphs.
type CUDAGraphTerm struct {
	// Sizes are the capture sizes, ascending (empty: no graphs). A
	// pure-decode step of b ≤ the largest size runs padded to the next
	// size, as one graph.
	Sizes []int `yaml:"sizes,flow"`
	// PadMixed: steps with prefill work of at most the largest size are
	// padded too (vLLM V1's piecewise graphs), though not as one graph.
	PadMixed bool `yaml:"pad_mixed"`
	// SmallTPMax, when set, is the largest size captured at tensor
	// parallelism below 4: only the sizes up to it are (SGLang's
	// cuda_graph_max_bs by TP, profile_engine.go SGLangDefault).
	SmallTPMax int `yaml:"small_tp_max,omitempty"`
}

// Limits a profile must stay within. They are far outside any real
// figure; they catch typos (a rate in GB/s written as bytes/s, a step in
// seconds written as ns) and keep every product finite.
const (
	// MaxProfileBytes bounds a profile file (1 MiB; the embedded ones are
	// under 4 KiB).
	MaxProfileBytes = 1 << 20
	// maxFLOPS is 1e18 FLOP/s, 200× the fastest dense FP8 peak (B200, 4.5e15).
	maxFLOPS = 1e18
	// maxBytesPerS is 1e15 bytes/s, 125× the fastest memory (B200, 8e12).
	maxBytesPerS = 1e15
	// maxHalfTokens is 1e6 tokens, 100× the largest step budget in use (8,192-16,384).
	maxHalfTokens = 1e6
	// maxSeqHeadNs is 1 ms a sequence, KV head and layer: 10⁵ times the
	// kernel table's 11.4 ns.
	maxSeqHeadNs = 1e6
	// maxKernelNs is 1 ms for one kernel's fixed time (a GEMM's, a
	// layer's small kernels'): 200 times the ~5 µs Vidur's profiles give.
	maxKernelNs = 1e6
	// maxBlend bounds linear.blend_exponent: at 64 the blend is max(c, w)
	// within 1.1%.
	maxBlend = 64
	// maxNs is 10 s for any one overhead or latency: a step takes ms.
	maxNs = 10_000_000_000
	// maxGraphSizes is 4,096 capture sizes (vLLM's default list has 51,
	// SGLang's 32); maxGraphSize is 1 Mi tokens.
	maxGraphSizes = 4096
	maxGraphSize  = 1 << 20
	// maxFitted bounds fitted_to at 10,000 ids of at most 256 bytes; notes at 64 KiB.
	maxFitted    = 10_000
	maxIDBytes   = 256
	maxNoteBytes = 64 << 10
	maxGPUName   = 64
)

// Validate checks every field; the error wraps ErrBadProfile and names the
// first bad field by its YAML path.
func (p *Profile) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadProfile, field, fmt.Sprintf(format, args...))
	}
	if p.GPU == "" || len(p.GPU) > maxGPUName {
		return bad("gpu", "want a GPU preset name of 1 to %d bytes, got %q", maxGPUName, clip(p.GPU))
	}
	if !p.Engine.Valid() {
		return bad("engine", "%v: want one of %s", p.Engine, strings.Join(engineNames[:], ", "))
	}
	if p.EngineVersion != "" {
		if _, err := ParseEngineVersion(p.Engine, p.EngineVersion); err != nil {
			return bad("engine_version", "%s", strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": "))
		}
	}
	if err := checkFitted(p.FittedTo); err != nil {
		return bad("fitted_to", "%s", err)
	}
	if len(p.Notes) > maxNoteBytes {
		return bad("notes", "%d bytes, more than %d", len(p.Notes), maxNoteBytes)
	}
	type num struct {
		field     string
		v, lo, hi float64
		zeroOK    bool // lo itself is allowed
	}
	nums := []num{
		{"peak.bf16_flops_per_s", p.Peak.BF16FLOPSPerS, 0, maxFLOPS, false},
		{"peak.fp8_flops_per_s", p.Peak.FP8FLOPSPerS, 0, maxFLOPS, true},
		{"peak.mem_bytes_per_s", p.Peak.MemBytesPerS, 0, maxBytesPerS, false},
		{"peak.link_bytes_per_s", p.Peak.LinkBytesPerS, 0, maxBytesPerS, false},
		{"linear.compute_eff_max", p.Linear.ComputeEffMax, 0, 1, false},
		{"linear.fp8_compute_eff_max", p.Linear.FP8ComputeEffMax, 0, 1, false},
		{"linear.compute_half_tokens", p.Linear.ComputeHalfTokens, 0, maxHalfTokens, true},
		{"linear.weight_bw_eff", p.Linear.WeightBWEff, 0, 1, false},
		{"linear.blend_exponent", p.Linear.BlendExponent, 1, maxBlend, true},
		{"linear.gemm_fixed_ns", p.Linear.GEMMFixedNs, 0, maxKernelNs, true},
		{"linear.layer_kernels_ns", p.Linear.LayerKernelsNs, 0, maxKernelNs, true},
		{"attention.prefill_compute_eff", p.Attention.PrefillComputeEff, 0, 1, false},
		{"attention.prefill_tok_ns", p.Attention.PrefillTokNs, 0, maxSeqHeadNs, true},
		{"attention.kv_bw_eff", p.Attention.KVBWEff, 0, 1, false},
		{"attention.kv_seq_ns", p.Attention.KVSeqNs, 0, maxSeqHeadNs, true},
		{"attention.kv_half_context", p.Attention.KVHalfContext, 0, maxHalfTokens, true},
		{"all_reduce.bw_eff", p.AllReduce.BWEff, 0, 1, false},
		{"all_reduce.latency_ns", float64(p.AllReduce.LatencyNs), 0, maxNs, true},
		{"overhead.step_ns", float64(p.Overhead.StepNs), 0, maxNs, true},
		{"overhead.per_seq_ns", float64(p.Overhead.PerSeqNs), 0, maxNs, true},
		{"overhead.eager_per_layer_ns", float64(p.Overhead.EagerPerLayerNs), 0, maxNs, true},
		{"overhead.request_ns", float64(p.Overhead.RequestNs), 0, maxNs, true},
		{"overhead.per_token_ns", float64(p.Overhead.PerTokenNs), 0, maxNs, true},
	}
	for _, n := range nums {
		lower := "("
		if n.zeroOK {
			lower = "["
		}
		ok := !math.IsNaN(n.v) && n.v <= n.hi && (n.v > n.lo || (n.zeroOK && n.v == n.lo))
		if !ok {
			return bad(n.field, "%v is not in %s%g, %g]", n.v, lower, n.lo, n.hi)
		}
	}
	if p.Peak.FP8FLOPSPerS > 0 && p.Peak.FP8FLOPSPerS < p.Peak.BF16FLOPSPerS {
		return bad("peak.fp8_flops_per_s", "%g is below bf16_flops_per_s (%g); want 0 (no FP8) or a faster peak",
			p.Peak.FP8FLOPSPerS, p.Peak.BF16FLOPSPerS)
	}
	s := p.CUDAGraph.Sizes
	if len(s) > maxGraphSizes {
		return bad("cuda_graph.sizes", "%d sizes, more than %d", len(s), maxGraphSizes)
	}
	for i, v := range s {
		if v < 1 || v > maxGraphSize {
			return bad("cuda_graph.sizes", "size %d (entry %d) is not in [1, %d]", v, i, maxGraphSize)
		}
		if i > 0 && v <= s[i-1] {
			return bad("cuda_graph.sizes", "%d (entry %d) follows %d: want ascending sizes without repeats", v, i, s[i-1])
		}
	}
	if m := p.CUDAGraph.SmallTPMax; m != 0 && (len(s) == 0 || !slices.Contains(s, m)) {
		return bad("cuda_graph.small_tp_max", "%d is not one of the sizes; want 0 (every size at any TP) or one of them", m)
	}
	return nil
}

// checkFitted checks a fitted_to list.
func checkFitted(ids []string) error {
	if len(ids) == 0 {
		return fmt.Errorf("empty: list the measurement ids the profile was fitted to, or [%s]", Unfitted)
	}
	if len(ids) > maxFitted {
		return fmt.Errorf("%d ids, more than %d", len(ids), maxFitted)
	}
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		switch {
		case id == "" || len(id) > maxIDBytes || strings.TrimSpace(id) != id:
			return fmt.Errorf("entry %d %q: want an id of 1 to %d bytes without surrounding spaces", i, clip(id), maxIDBytes)
		case id == Unfitted && len(ids) > 1:
			return fmt.Errorf("%q must be the only entry when present", Unfitted)
		case seen[id]:
			return fmt.Errorf("entry %d %q repeats an earlier one", i, clip(id))
		}
		seen[id] = true
	}
	return nil
}

// clip cuts an echoed value to 64 bytes.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:64], len(s))
}

// Clone returns a deep copy of p.
func (p *Profile) Clone() *Profile {
	c := *p
	c.FittedTo = append([]string(nil), p.FittedTo...)
	c.CUDAGraph.Sizes = append([]int(nil), p.CUDAGraph.Sizes...)
	return &c
}

// LoadProfile reads one profile in YAML from r and validates it; name is
// the file's name in messages. Unknown fields, a missing field, several
// documents and more than MaxProfileBytes are errors wrapping ErrBadProfile.
func LoadProfile(r io.Reader, name string) (*Profile, error) {
	var p Profile
	if err := decodeComplete(r, name, checkComplete, &p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

// decodeComplete reads one YAML document of at most MaxProfileBytes from
// r, checks with complete that it sets every key, and decodes it into v,
// refusing unknown fields; errors wrap ErrBadProfile and name the file.
func decodeComplete(r io.Reader, name string, complete func(*yaml.Node) error, v any) error {
	r, err := untrusted.Sniff(r, untrusted.CheckText) // random bytes fail in the first 4 KiB
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadProfile, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxProfileBytes+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadProfile, name, err)
	}
	if len(data) > MaxProfileBytes {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrBadProfile, name, MaxProfileBytes)
	}
	// One document, whose aliases expand to a bounded size (untrusted.MaxYAMLNodes).
	root, err := untrusted.CheckYAML(data)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: empty file", ErrBadProfile, name)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadProfile, name, err)
	}
	if err := complete(root); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadProfile, name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadProfile, name, err)
	}
	return nil
}

// profileFields are the keys every profile must set, by section ("" is the
// top level): a missing key would silently be 0, which is either invalid
// or (fp8 peak, n½, an overhead) a real but unintended value.
var profileFields = map[string][]string{
	"":           {"gpu", "engine", "fitted_to", "notes", "peak", "linear", "attention", "all_reduce", "overhead", "cuda_graph"},
	"peak":       {"bf16_flops_per_s", "fp8_flops_per_s", "mem_bytes_per_s", "link_bytes_per_s"},
	"linear":     {"compute_eff_max", "fp8_compute_eff_max", "compute_half_tokens", "weight_bw_eff", "blend_exponent"},
	"attention":  {"prefill_compute_eff", "kv_bw_eff", "kv_seq_ns|kv_half_context"},
	"all_reduce": {"bw_eff", "latency_ns"},
	"overhead":   {"step_ns", "per_seq_ns", "eager_per_layer_ns", "request_ns", "per_token_ns", "output_overlap"},
	"cuda_graph": {"sizes", "pad_mixed"},
}

// checkComplete reports the first key of profileFields that root (a
// decoded document) lacks, with the line of the mapping that lacks it.
func checkComplete(root *yaml.Node) error { return completeWith(profileFields, root) }

// completeWith reports the first key of fields (by section, "" the top
// level; "SECTION.*" the keys of every mapping inside SECTION) that root
// lacks, with the line of the mapping that lacks it.
func completeWith(fields map[string][]string, root *yaml.Node) error {
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping of %s", strings.Join(fields[""], ", "))
	}
	top := root.Content[0]
	if err := hasKeys(top, "", fields[""]); err != nil {
		return err
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		sec := top.Content[i].Value
		keys, ok := fields[sec]
		if !ok || sec == "" {
			continue
		}
		v := top.Content[i+1]
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: field %s: want a mapping of %s", v.Line, sec, strings.Join(keys, ", "))
		}
		if err := hasKeys(v, sec, keys); err != nil {
			return err
		}
		inner, ok := fields[sec+".*"]
		if !ok {
			continue
		}
		for k := 0; k+1 < len(v.Content); k += 2 {
			name, cv := sec+"."+clip(v.Content[k].Value), v.Content[k+1]
			if cv.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: field %s: want a mapping of %s", cv.Line, name, strings.ReplaceAll(strings.Join(inner, ", "), "|", " or "))
			}
			if err := hasKeys(cv, name, inner); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasKeys reports the first of keys m lacks. A key "a|b" is satisfied by
// either: a, or the older field b it replaces (attention.kv_seq_ns, or
// kv_half_context in a profile written before it).
func hasKeys(m *yaml.Node, sec string, keys []string) error {
	for _, k := range keys {
		alts := strings.Split(k, "|")
		found := false
		for i := 0; i+1 < len(m.Content); i += 2 {
			if slices.Contains(alts, m.Content[i].Value) {
				found = true
				break
			}
		}
		if !found {
			path := alts[0]
			if sec != "" {
				path = sec + "." + alts[0]
			}
			older := ""
			if len(alts) > 1 {
				older = " (or the older " + strings.Join(alts[1:], ", ") + ")"
			}
			return fmt.Errorf("line %d: field %s missing%s: every parameter must be set (see sim/profiles/*.yaml)", m.Line, path, older)
		}
	}
	return nil
}

// WriteYAML writes p as LoadProfile reads it.
func (p *Profile) WriteYAML(w io.Writer) error {
	if err := p.Validate(); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("sim: write profile: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("sim: write profile: %w", err)
	}
	return nil
}

// UnmarshalYAML reads an engine name, naming the line on error.
func (k *EngineKind) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: field engine: want one of %s", n.Line, strings.Join(engineNames[:], ", "))
	}
	v, err := ParseEngine(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: field engine: %q is not an engine: want one of %s", n.Line, clip(n.Value), strings.Join(engineNames[:], ", "))
	}
	*k = v
	return nil
}
