// The joint step-time model: one set of parameters for every GPU and
// engine, from which the Profile of any GPU preset, engine and release is
// derived. The GPU's own figures are its sustained peaks (SustainedPeaks:
// model.GPU's datasheet peaks scaled by its measured share of them over
// the H100's); the efficiencies of those peaks are shared by every GPU (the kernels are the
// same; a GEMM's efficiency depends on its token count, the decode
// attention's on its context); the software overheads are the engine's,
// per overhead class (engine_version.go). calib fits it to every
// published figure at once (calib/joint.go) and writes
// sim/profiles/joint.yaml, which DefaultProfile derives from.

package sim

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/model"
)

// JointModel holds the step-time model's parameters for every GPU and
// engine: Linear, Attention and AllReduce are efficiencies and latencies
// shared by all GPUs, Engines the overheads of each overhead class
// (OverheadClasses, every one present).
type JointModel struct {
	// FittedTo lists the figures of calib/published.yaml the parameters
	// were fitted to, or the single entry "unfitted" (the hand-written
	// prior).
	FittedTo  []string      `yaml:"fitted_to"`
	Notes     string        `yaml:"notes"`
	Linear    LinearTerm    `yaml:"linear"`
	Attention AttentionTerm `yaml:"attention"`
	// AllReduce is the all-reduce over NVLink (or another GPU-to-GPU
	// fabric); AllReducePCIe over PCIe, the link of a preset without one
	// (model.GPU.LinkBandwidth at most PCIeLinkBytesPerS), where NCCL's
	// rings cross the host's root complex.
	AllReduce     AllReduceTerm           `yaml:"all_reduce"`
	AllReducePCIe AllReduceTerm           `yaml:"all_reduce_pcie"`
	Engines       map[string]OverheadTerm `yaml:"engines"`
}

// PCIeLinkBytesPerS is the fastest one-way link a GPU preset has over
// PCIe (Gen5 x16: 64 GB/s); a faster link is a GPU-to-GPU fabric.
const PCIeLinkBytesPerS = 64e9

// Clone returns a deep copy of j.
func (j *JointModel) Clone() *JointModel {
	c := *j
	c.FittedTo = slices.Clone(j.FittedTo)
	c.Engines = make(map[string]OverheadTerm, len(j.Engines))
	for k, v := range j.Engines {
		c.Engines[k] = v
	}
	return &c
}

// referenceGPU gives Validate peaks to check the shared terms against.
var referenceGPU = model.GPU{Name: "h100-80g", MemBandwidth: 3.35e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12, LinkBandwidth: 450e9}

// Validate checks every parameter, naming the first bad one by its YAML
// path (engines.CLASS.FIELD for an overhead); errors wrap ErrBadProfile.
func (j *JointModel) Validate() error {
	if err := checkFitted(j.FittedTo); err != nil {
		return fmt.Errorf("%w: fitted_to: %w", ErrBadProfile, err)
	}
	if len(j.Notes) > maxNoteBytes {
		return fmt.Errorf("%w: notes: %d bytes, more than %d", ErrBadProfile, len(j.Notes), maxNoteBytes)
	}
	for k := range j.Engines {
		if !slices.Contains(OverheadClasses(), k) {
			return fmt.Errorf("%w: engines: %q is not an overhead class: want %s", ErrBadProfile, clip(k), strings.Join(OverheadClasses(), ", "))
		}
	}
	for _, class := range OverheadClasses() {
		o, ok := j.Engines[class]
		if !ok {
			return fmt.Errorf("%w: engines.%s missing: every overhead class must be set (%s)", ErrBadProfile, class, strings.Join(OverheadClasses(), ", "))
		}
		p := j.profile(referenceGPU, EngineVLLMV1, "")
		p.Overhead = o
		err := p.Validate()
		if err == nil {
			q := *p
			q.AllReduce = j.AllReducePCIe
			if err = q.Validate(); err != nil {
				err = fmt.Errorf("%w: %s", ErrBadProfile, strings.Replace(strings.TrimPrefix(err.Error(), ErrBadProfile.Error()+": "), "all_reduce.", "all_reduce_pcie.", 1))
			}
		}
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), ErrBadProfile.Error()+": ")
			return fmt.Errorf("%w: %s", ErrBadProfile, strings.Replace(msg, "overhead.", "engines."+class+".", 1))
		}
	}
	return nil
}

// profile is the Profile of g under engine at release version (a
// canonical string, "" for none) with j's shared terms and the engine
// overheads left zero.
func (j *JointModel) profile(g model.GPU, engine EngineKind, version string) *Profile {
	ar := j.AllReduce
	if g.LinkBandwidth <= PCIeLinkBytesPerS {
		ar = j.AllReducePCIe
	}
	return &Profile{
		GPU: g.Name, Engine: engine, EngineVersion: version,
		FittedTo: slices.Clone(j.FittedTo),
		Peak:     SustainedPeaks(g),
		Linear:   j.Linear, Attention: j.Attention, AllReduce: ar,
	}
}

// shareReference is the GPU whose measured shares of its datasheet the
// joint model's efficiencies are relative to: the h100-80g preset, which
// has all three measured figures (model.TestGPUMeasured).
var shareReference = func() model.GPU {
	g, err := model.LookupGPU("h100-80g")
	if err != nil {
		panic(err) // a preset of this package's own dependency
	}
	return g
}()

// SustainedPeaks is the peaks the joint model's shared efficiencies
// multiply for g: each datasheet peak (bandwidth, BF16, FP8) times the
// share of its datasheet g sustains in an independent microbenchmark
// (model.GPU's Measured* fields: STREAM triad or copy, large square GEMMs)
// over the share the h100-80g sustains, 1 where either figure is unknown.
// So an efficiency keeps its meaning relative to the H100, and a board
// whose datasheet understates what it runs at (the RTX 4090's BF16 rate:
// 165 TFLOPS measured, 100% of its whitepaper, against the H100's 80%:
// ×1.25) or overstates it (the H200's bandwidth: ×0.975) is timed by what
// it sustains. The figures and their sources: model/gpu.go and
// docs/calibrate.md ("what GPUs really sustain"); none is an LLM-serving
// run. The link bandwidth is the datasheet's.
func SustainedPeaks(g model.GPU) PeakRates {
	ref := shareReference
	return PeakRates{
		BF16FLOPSPerS: g.BF16FLOPS * sustainedScale(g.MeasuredBF16FLOPS, g.BF16FLOPS, ref.MeasuredBF16FLOPS, ref.BF16FLOPS),
		FP8FLOPSPerS:  g.FP8FLOPS * sustainedScale(g.MeasuredFP8FLOPS, g.FP8FLOPS, ref.MeasuredFP8FLOPS, ref.FP8FLOPS),
		MemBytesPerS:  g.MemBandwidth * sustainedScale(g.MeasuredMemBandwidth, g.MemBandwidth, ref.MeasuredMemBandwidth, ref.MemBandwidth),
		LinkBytesPerS: g.LinkBandwidth,
	}
}

// sustainedScale is (measured / datasheet) over (refMeasured /
// refDatasheet), 1 where any figure is missing.
func sustainedScale(measured, datasheet, refMeasured, refDatasheet float64) float64 {
	if !(measured > 0 && datasheet > 0 && refMeasured > 0 && refDatasheet > 0) {
		return 1
	}
	return (measured / datasheet) / (refMeasured / refDatasheet)
}

// Profile derives the profile of GPU g under engine at release v: g's
// sustained peaks (SustainedPeaks), j's shared terms, the overheads of v's class and the
// engine's CUDA-graph capture sizes at that release.
func (j *JointModel) Profile(g model.GPU, engine EngineKind, v Version) (*Profile, error) {
	return j.ClassProfile(g, engine, v, OverheadClass(engine, v))
}

// ClassProfile is Profile with the overheads of class instead of those of
// v's own (a calibration's figures of an engine no Config runs, such as
// lmdeploy's, scheduled like engine). When class is not v's, the profile
// names no release.
func (j *JointModel) ClassProfile(g model.GPU, engine EngineKind, v Version, class string) (*Profile, error) {
	if !engine.Valid() {
		return nil, fmt.Errorf("%w: engine %v", ErrBadProfile, engine)
	}
	o, ok := j.Engines[class]
	if !ok {
		return nil, fmt.Errorf("%w: the joint model has no overheads for %q", ErrBadProfile, clip(class))
	}
	version := v.String()
	if class != OverheadClass(engine, v) {
		version = ""
	}
	p := j.profile(g, engine, version)
	p.Overhead = o
	p.Overhead.ScheduleOverlap = version != "" && ScheduleOverlap(engine, v)
	p.CUDAGraph = engineGraphs(engine, v, g.Capacity)
	p.Notes = fmt.Sprintf("Derived from the joint step-time model (%s) for %s under %s %s (overheads of class %s): the peaks are the GPU preset's datasheet figures.",
		jointOrigin(j), g.Name, engine, v, class)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// jointOrigin says in a few words what j was fitted to.
func jointOrigin(j *JointModel) string {
	if slices.Equal(j.FittedTo, []string{Unfitted}) {
		return "the hand-written prior, unfitted"
	}
	return fmt.Sprintf("fitted to %d published figures", len(j.FittedTo))
}

// engineGraphs is engine's default CUDA-graph capture at release v on a GPU
// of capacity bytes: vLLM before 0.2.5 had none (profile_engine.go has the
// rest).
func engineGraphs(engine EngineKind, v Version, capacity int64) CUDAGraphTerm {
	switch engine {
	case EngineVLLMV0:
		if v.less(Version{0, 2, 5}) {
			return CUDAGraphTerm{}
		}
		return CUDAGraphTerm{Sizes: vllmV0GraphSizes()}
	case EngineSGLang:
		return sglangGraphs(v, capacity)
	}
	return CUDAGraphTerm{Sizes: vllmV1GraphSizes(), PadMixed: true}
}

// jointFields are the keys a joint model file must set, by section ("" is
// the top level; "engines.*" is each class).
var jointFields = map[string][]string{
	"":           {"fitted_to", "notes", "linear", "attention", "all_reduce", "engines"},
	"linear":     profileFields["linear"],
	"attention":  profileFields["attention"],
	"all_reduce": profileFields["all_reduce"],
	"engines":    OverheadClasses(),
	"engines.*":  profileFields["overhead"],
}

// LoadJointModel reads a joint model in YAML from r and validates it; name
// is the file's name in messages. Unknown fields, a missing field or
// class, several documents and more than MaxProfileBytes are errors
// wrapping ErrBadProfile.
func LoadJointModel(r io.Reader, name string) (*JointModel, error) {
	var j JointModel
	if err := decodeComplete(r, name, checkJointComplete, &j); err != nil {
		return nil, err
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadProfile, name, strings.TrimPrefix(err.Error(), ErrBadProfile.Error()+": "))
	}
	return &j, nil
}

// checkJointComplete reports the first key of jointFields that root lacks,
// with the line of the mapping that lacks it.
func checkJointComplete(root *yaml.Node) error { return completeWith(jointFields, root) }

// WriteYAML writes j as LoadJointModel reads it, the classes in
// OverheadClasses' order.
func (j *JointModel) WriteYAML(w io.Writer) error {
	if err := j.Validate(); err != nil {
		return err
	}
	var doc yaml.Node
	if err := doc.Encode(j); err != nil {
		return fmt.Errorf("sim: write joint model: %w", err)
	}
	// yaml.v3 sorts map keys; put the classes in their own order.
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "engines" {
			continue
		}
		m := doc.Content[i+1]
		var sorted []*yaml.Node
		for _, class := range OverheadClasses() {
			for k := 0; k+1 < len(m.Content); k += 2 {
				if m.Content[k].Value == class {
					sorted = append(sorted, m.Content[k], m.Content[k+1])
				}
			}
		}
		m.Content = sorted
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("sim: write joint model: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("sim: write joint model: %w", err)
	}
	return nil
}

// ReadStepModel reads a step-time model file of either shape: a profile
// (it names its gpu:, as calibrate -o writes) or a joint model (it has an
// engines: mapping, as sim/profiles/joint.yaml and calib/loso's), and
// returns the one it holds. At most MaxProfileBytes are read. A document of
// neither shape is an error wrapping ErrBadProfile that says what each
// looks like; a file whose YAML does not parse is reported as a profile's,
// with its line.
func ReadStepModel(r io.Reader, name string) (*Profile, *JointModel, error) {
	// One byte over the loaders' bound, so that they report the size.
	data, err := io.ReadAll(io.LimitReader(r, MaxProfileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	var shape struct {
		GPU     string    `yaml:"gpu"`
		Engines yaml.Node `yaml:"engines"`
	}
	parsed := yaml.Unmarshal(data, &shape) == nil
	switch {
	case parsed && shape.GPU == "" && shape.Engines.Kind != yaml.MappingNode && len(bytes.TrimSpace(data)) > 0:
		return nil, nil, fmt.Errorf("%w: %s: neither a profile (it names its gpu:, as calibrate -o writes) nor a joint step-time model "+
			"(it has an engines: mapping, as sim/profiles/joint.yaml and calib/loso/*.yaml)", ErrBadProfile, name)
	case !parsed || shape.GPU != "" || shape.Engines.Kind != yaml.MappingNode:
		p, err := LoadProfile(bytes.NewReader(data), name)
		return p, nil, err
	}
	j, err := LoadJointModel(bytes.NewReader(data), name)
	return nil, j, err
}
