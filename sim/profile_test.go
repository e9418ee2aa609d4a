package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
	"github.com/gpufrag/gpufrag/model"
)

// TestEmbeddedProfiles: every GPU preset has a profile, derived from the
// embedded joint model, that validates, states what it was fitted to,
// carries the preset's datasheet peaks and the engine's capture sizes, and
// the overheads of the release's class; both embedded joint models load.
func TestEmbeddedProfiles(t *testing.T) {
	if got, want := ProfileGPUs(), model.GPUNames(); !slices.Equal(got, want) {
		t.Fatalf("embedded profiles for %v, want one per GPU preset %v", got, want)
	}
	joint, prior := DefaultJoint(), PriorJoint()
	if !slices.Equal(prior.FittedTo, []string{Unfitted}) {
		t.Errorf("the prior is fitted to %v", prior.FittedTo)
	}
	for _, gpu := range ProfileGPUs() {
		g, err := model.LookupGPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		for _, eng := range []EngineKind{EngineVLLMV1, EngineVLLMV0, EngineSGLang} {
			p, err := DefaultProfile(strings.ToUpper(gpu), eng, "")
			if err != nil {
				t.Fatalf("%s %v: %v", gpu, eng, err)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("%s %v: %v", gpu, eng, err)
			}
			v := DefaultEngineVersion(eng)
			if p.GPU != gpu || p.Engine != eng || p.EngineVersion != v.String() || !slices.Equal(p.FittedTo, joint.FittedTo) || p.Notes == "" {
				t.Errorf("%s %v: gpu %q engine %v %s fitted_to %v notes %q", gpu, eng, p.GPU, p.Engine, p.EngineVersion, p.FittedTo, p.Notes)
			}
			if want := SustainedPeaks(g); p.Peak != want {
				t.Errorf("%s: peaks %+v, want the preset's sustained ones %+v", gpu, p.Peak, want)
			}
			ar := joint.AllReduce
			if g.LinkBandwidth <= PCIeLinkBytesPerS {
				ar = joint.AllReducePCIe
			}
			wantOv := joint.Engines[OverheadClass(eng, v)]
			wantOv.ScheduleOverlap = eng != EngineVLLMV0 // the default V1 and SGLang releases prepare a step during the last
			if p.Linear != joint.Linear || p.Attention != joint.Attention || p.AllReduce != ar || p.Overhead != wantOv {
				t.Errorf("%s %v: %+v is not the joint model's terms", gpu, eng, p)
			}
			var sizes []int
			small := 0
			switch eng {
			case EngineVLLMV1:
				sizes = vllmV1GraphSizes()
			case EngineVLLMV0:
				sizes = vllmV0GraphSizes()
			case EngineSGLang:
				sg := sglangGraphs(v, g.Capacity)
				sizes, small = sg.Sizes, sg.SmallTPMax
			}
			if !slices.Equal(p.CUDAGraph.Sizes, sizes) || p.CUDAGraph.SmallTPMax != small || p.CUDAGraph.PadMixed != (eng == EngineVLLMV1) {
				t.Errorf("%s %v: cuda_graph %+v, want sizes %v", gpu, eng, p.CUDAGraph, sizes)
			}
			pr, err := PriorProfile(gpu, eng, "")
			wantOv = prior.Engines[OverheadClass(eng, v)]
			wantOv.ScheduleOverlap = eng != EngineVLLMV0
			if err != nil || pr.Linear != prior.Linear || pr.Overhead != wantOv {
				t.Errorf("%s %v: prior %+v, %v", gpu, eng, pr, err)
			}
		}
	}
	// Schedule overlap from vLLM 0.14.0 (async scheduling by default) and
	// SGLang 0.4.0 (its overlap scheduler), never in V0.
	for _, c := range []struct {
		engine  EngineKind
		version string
		want    bool
	}{
		{EngineVLLMV1, "0.13.2", false}, {EngineVLLMV1, "0.14.0", true}, {EngineVLLMV1, "0.8.3", false},
		{EngineSGLang, "0.3.6", false}, {EngineSGLang, "0.4.0", true}, {EngineVLLMV0, "0.10.2", false},
	} {
		p, err := DefaultProfile("a100-40g", c.engine, c.version)
		if err != nil || p.Overhead.ScheduleOverlap != c.want {
			t.Errorf("%v %s: schedule overlap %v, want %v (%v)", c.engine, c.version, p != nil && p.Overhead.ScheduleOverlap, c.want, err)
		}
	}
	// The release picks the overheads; vLLM before 0.2.5 had no CUDA graphs.
	p, err := DefaultProfile("a100-40g", EngineVLLMV0, "0.1.7")
	if err != nil || p.Overhead != joint.Engines[ClassVLLMV0Sync] || len(p.CUDAGraph.Sizes) != 0 || p.EngineVersion != "0.1.7" {
		t.Errorf("vLLM 0.1.7: %+v, %v", p, err)
	}
	if _, err := DefaultProfile("a100-40g", EngineVLLMV1, "0.24"); !errors.Is(err, ErrBadProfile) || !strings.Contains(err.Error(), `did you mean "0.23"`) {
		t.Errorf("unknown release: %v", err)
	}
	if _, err := DefaultProfile("v100-16g", EngineVLLMV1, ""); !errors.Is(err, ErrNoProfile) || !strings.Contains(err.Error(), "h100-80g") {
		t.Errorf("unknown GPU: %v, want ErrNoProfile listing the profiles", err)
	}
	if _, err := DefaultProfile("../profiles/h100-80g", EngineVLLMV1, ""); !errors.Is(err, ErrNoProfile) {
		t.Errorf("a path: %v, want ErrNoProfile", err)
	}
	// A copy: changing it leaves the next one alone.
	p, _ = DefaultProfile("h100-80g", EngineVLLMV1, "")
	p.CUDAGraph.Sizes[0] = 99
	if q, _ := DefaultProfile("h100-80g", EngineVLLMV1, ""); q.CUDAGraph.Sizes[0] != 1 {
		t.Error("DefaultProfile returned shared state")
	}
}

// TestEngineGraphSizes pins the capture lists to the engines' sources.
func TestEngineGraphSizes(t *testing.T) {
	v1 := vllmV1GraphSizes()
	// [1, 2, 4] + range(8, 256, 8) + range(256, 513, 16): 3 + 31 + 17.
	if len(v1) != 51 || v1[3] != 8 || v1[33] != 248 || v1[34] != 256 || v1[50] != 512 {
		t.Errorf("vLLM V1 sizes %v", v1)
	}
	v0 := vllmV0GraphSizes()
	// [1, 2, 4] + [8 × i for i in 1..32].
	if len(v0) != 35 || v0[3] != 8 || v0[34] != 256 {
		t.Errorf("vLLM V0 sizes %v", v0)
	}
	// SGLang's, by release, memory and TP: TestSGLangDefaultsByTier.
}

// TestProfileRoundTrip: WriteYAML then LoadProfile gives the same profile,
// for every embedded one and for a hand-made one.
func TestProfileRoundTrip(t *testing.T) {
	ps := []*Profile{toyProfile()}
	withIDs := toyProfile()
	withIDs.FittedTo = []string{"vllm-paper/fig12a", "lambda/h100-10-prompts"}
	withIDs.Notes = "line one\nline two: with a colon"
	withIDs.CUDAGraph = CUDAGraphTerm{}
	ps = append(ps, withIDs)
	for _, gpu := range ProfileGPUs() {
		for _, eng := range []EngineKind{EngineVLLMV1, EngineVLLMV0, EngineSGLang} {
			p, err := DefaultProfile(gpu, eng, "")
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
	}
	for _, p := range ps {
		var buf bytes.Buffer
		if err := p.WriteYAML(&buf); err != nil {
			t.Fatalf("%s: %v", p.GPU, err)
		}
		q, err := LoadProfile(bytes.NewReader(buf.Bytes()), "round-trip.yaml")
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", p.GPU, p.Engine, err, buf.Bytes())
		}
		if len(p.CUDAGraph.Sizes) == 0 {
			p.CUDAGraph.Sizes = nil // an empty flow list reads back as nil
			q.CUDAGraph.Sizes = nil
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("%s %v: round trip changed the profile\nwrote %+v\nread  %+v", p.GPU, p.Engine, p, q)
		}
	}
	bad := toyProfile()
	bad.Linear.ComputeEffMax = 2
	if err := bad.WriteYAML(&bytes.Buffer{}); !errors.Is(err, ErrBadProfile) {
		t.Errorf("WriteYAML of an invalid profile: %v", err)
	}
}

// TestProfileValidate: each bad field is refused, naming it.
func TestProfileValidate(t *testing.T) {
	tests := []struct {
		field string
		set   func(*Profile)
	}{
		{"gpu", func(p *Profile) { p.GPU = "" }},
		{"gpu", func(p *Profile) { p.GPU = strings.Repeat("g", 65) }},
		{"engine", func(p *Profile) { p.Engine = 9 }},
		{"fitted_to", func(p *Profile) { p.FittedTo = nil }},
		{"fitted_to", func(p *Profile) { p.FittedTo = []string{"a", Unfitted} }},
		{"fitted_to", func(p *Profile) { p.FittedTo = []string{"a", "a"} }},
		{"fitted_to", func(p *Profile) { p.FittedTo = []string{" a"} }},
		{"fitted_to", func(p *Profile) { p.FittedTo = []string{""} }},
		{"notes", func(p *Profile) { p.Notes = strings.Repeat("n", 64<<10+1) }},
		{"peak.bf16_flops_per_s", func(p *Profile) { p.Peak.BF16FLOPSPerS = 0 }},
		{"peak.bf16_flops_per_s", func(p *Profile) { p.Peak.BF16FLOPSPerS = 2e18 }},
		{"peak.fp8_flops_per_s", func(p *Profile) { p.Peak.FP8FLOPSPerS = -1 }},
		{"peak.fp8_flops_per_s", func(p *Profile) { p.Peak.FP8FLOPSPerS = 1e14 }}, // below the BF16 peak
		{"peak.mem_bytes_per_s", func(p *Profile) { p.Peak.MemBytesPerS = nan() }},
		{"peak.link_bytes_per_s", func(p *Profile) { p.Peak.LinkBytesPerS = 0 }},
		{"linear.compute_eff_max", func(p *Profile) { p.Linear.ComputeEffMax = 1.01 }},
		{"linear.compute_eff_max", func(p *Profile) { p.Linear.ComputeEffMax = 0 }},
		{"linear.compute_half_tokens", func(p *Profile) { p.Linear.ComputeHalfTokens = -1 }},
		{"linear.compute_half_tokens", func(p *Profile) { p.Linear.ComputeHalfTokens = inf() }},
		{"linear.weight_bw_eff", func(p *Profile) { p.Linear.WeightBWEff = -0.5 }},
		{"attention.prefill_compute_eff", func(p *Profile) { p.Attention.PrefillComputeEff = 0 }},
		{"attention.kv_bw_eff", func(p *Profile) { p.Attention.KVBWEff = 3 }},
		{"all_reduce.bw_eff", func(p *Profile) { p.AllReduce.BWEff = 0 }},
		{"all_reduce.latency_ns", func(p *Profile) { p.AllReduce.LatencyNs = -1 }},
		{"overhead.step_ns", func(p *Profile) { p.Overhead.StepNs = 20_000_000_000 }},
		{"overhead.per_seq_ns", func(p *Profile) { p.Overhead.PerSeqNs = -5 }},
		{"overhead.eager_per_layer_ns", func(p *Profile) { p.Overhead.EagerPerLayerNs = -1 }},
		{"cuda_graph.sizes", func(p *Profile) { p.CUDAGraph.Sizes = []int{1, 4, 2} }},
		{"cuda_graph.sizes", func(p *Profile) { p.CUDAGraph.Sizes = []int{1, 1} }},
		{"cuda_graph.sizes", func(p *Profile) { p.CUDAGraph.Sizes = []int{0, 1} }},
		{"cuda_graph.sizes", func(p *Profile) { p.CUDAGraph.Sizes = make([]int, 4097) }},
	}
	for _, tt := range tests {
		p := toyProfile()
		tt.set(p)
		err := p.Validate()
		if !errors.Is(err, ErrBadProfile) || !strings.Contains(err.Error(), tt.field+":") {
			t.Errorf("%s: error %v, want ErrBadProfile naming the field", tt.field, err)
		}
	}
	if err := toyProfile().Validate(); err != nil {
		t.Errorf("toy profile: %v", err)
	}
}

// h100ProfileYAML is a profile file as a user's calibration writes one
// (the old hand-written h100-80g prior with today's fields).
const h100ProfileYAML = `# Step-time profile of h100-80g under vLLM V1.
gpu: h100-80g
engine: vllm-v1
engine_version: 0.8.3
fitted_to: [unfitted]
notes: >-
  Initial values.
peak:
  bf16_flops_per_s: 989e12
  fp8_flops_per_s: 1979e12
  mem_bytes_per_s: 3.35e12
  link_bytes_per_s: 450e9
linear:
  compute_eff_max: 0.5
  fp8_compute_eff_max: 0.5
  compute_half_tokens: 32
  weight_bw_eff: 0.85
  blend_exponent: 2
attention:
  prefill_compute_eff: 0.45
  kv_bw_eff: 0.7
  kv_half_context: 64
all_reduce:
  bw_eff: 0.7
  latency_ns: 8000
overhead:
  step_ns: 1700000
  per_seq_ns: 15000
  eager_per_layer_ns: 10000
  request_ns: 10000000
  per_token_ns: 20000
  output_overlap: true
cuda_graph:
  sizes: [1, 2, 4, 8, 16, 24, 32]
  pad_mixed: true
`

func nan() float64 { var z float64; return z / z }
func inf() float64 { var z float64; return 1 / z }

// TestLoadProfileErrors: bad files are refused with the file's name and the
// line or field.
func TestLoadProfileErrors(t *testing.T) {
	good := []byte(h100ProfileYAML)
	if _, err := LoadProfile(bytes.NewReader(good), "h100.yaml"); err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		s := string(good)
		if !strings.Contains(s, old) {
			t.Fatalf("the embedded profile has no %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	// The line the embedded file sets the engine on.
	engineLine := fmt.Sprintf("line %d:", 1+strings.Count(string(good[:bytes.Index(good, []byte("\nengine:"))+1]), "\n"))
	tests := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"my.yaml", "empty file"}},
		{"not a mapping", "[1, 2]\n", []string{"my.yaml", "want a mapping"}},
		{"unknown field", edit("  weight_bw_eff: 0.85\n", "  weight_bw_eff: 0.85\n  weight_bw: 1\n"), []string{"my.yaml", "line", "weight_bw"}},
		{"missing field", edit("  kv_bw_eff: 0.7\n", ""), []string{"my.yaml", "attention.kv_bw_eff missing", "line"}},
		{"missing section", edit("all_reduce:\n  bw_eff: 0.7\n  latency_ns: 8000\n", ""), []string{"my.yaml", "all_reduce missing"}},
		{"section not a mapping", edit("overhead:\n", "overhead: 3\nx:\n"), []string{"my.yaml", "field overhead: want a mapping"}},
		{"bad engine", edit("engine: vllm-v1", "engine: tgi"), []string{"my.yaml", engineLine, "engine", "tgi"}},
		{"bad number", edit("step_ns: 1700000", "step_ns: fast"), []string{"my.yaml", "line", "fast"}},
		{"bad value", edit("compute_eff_max: 0.5", "compute_eff_max: 5"), []string{"my.yaml", "linear.compute_eff_max", "5"}},
		{"missing new field", edit("  per_token_ns: 20000\n", ""), []string{"my.yaml", "overhead.per_token_ns missing"}},
		{"unknown release", edit("engine_version: 0.8.3", "engine_version: 0.7.3"), []string{"my.yaml", "engine_version", "V1 engine arrived in 0.8"}},
		{"bad release", edit("engine_version: 0.8.3", "engine_version: 1.9"), []string{"my.yaml", "engine_version", `did you mean "0.23"`}},
		{"two documents", string(good) + "---\ngpu: x\n", []string{"my.yaml", "more than one YAML document"}},
		{"too large", strings.Repeat("#", MaxProfileBytes+1), []string{"my.yaml", "larger than"}},
		{"binary", "\x00\x01\x02", []string{"my.yaml"}},
		// Issue 28: CUDA-graph sizes as aliases of aliases (8^5 values from
		// 180 bytes) are refused before they are decoded.
		{"aliases that multiply", edit("cuda_graph:\n", "x: &a [1, 1, 1, 1, 1, 1, 1, 1]\ny: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"+
			"z: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nw: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ncuda_graph:\n  sizes: [*d, *d, *d, *d, *d, *d, *d, *d]\n"),
			[]string{"my.yaml", "the aliases up to *d expand the document to more than 16384 values and keys"}},
	}
	for _, tt := range tests {
		_, err := LoadProfile(strings.NewReader(tt.text), "my.yaml")
		if !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: error %v, want ErrBadProfile", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, w)
			}
		}
	}
}

// FuzzLoadProfile feeds arbitrary bytes to LoadProfile: it never panics,
// every error wraps ErrBadProfile, and what it accepts validates, writes
// back and reads back equal.
//
//	go test -run '^$' -fuzz FuzzLoadProfile -fuzztime 20s -fuzzminimizetime 2s ./sim/
//
// (-fuzzminimizetime: minimizing a 4 KB profile for the default 60 s stalls
// the run.)
func FuzzLoadProfile(f *testing.F) {
	f.Add([]byte(h100ProfileYAML))
	for _, gpu := range []string{"l40s-48g", "a100-40g"} {
		p, err := DefaultProfile(gpu, EngineVLLMV0, "0.5.4")
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := p.WriteYAML(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("gpu: x\n"))
	f.Add([]byte("&a [*a, *a]\n"))
	f.Add([]byte("x: &a [1, 1, 1, 1, 1, 1, 1, 1]\ny: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nz: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"w: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ncuda_graph: {sizes: [*d, *d, *d, *d, *d, *d, *d, *d]}\n"))
	f.Add([]byte("gpu: toy\nengine: sglang\nfitted_to: [a]\nnotes: ''\npeak: {bf16_flops_per_s: 1, fp8_flops_per_s: 0, mem_bytes_per_s: 1, link_bytes_per_s: 1}\n" +
		"linear: {compute_eff_max: 1, fp8_compute_eff_max: 1, compute_half_tokens: 0, weight_bw_eff: 1, blend_exponent: 1}\nattention: {prefill_compute_eff: 1, kv_bw_eff: 1, kv_half_context: 0}\n" +
		"all_reduce: {bw_eff: 1, latency_ns: 0}\noverhead: {step_ns: 0, per_seq_ns: 0, eager_per_layer_ns: 0, request_ns: 0, per_token_ns: 0, output_overlap: false}\ncuda_graph: {sizes: [], pad_mixed: false}\n"))
	// Issue 28: random bytes after a first key.
	f.Add([]byte("gpu: \x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadProfile(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadProfile) {
				t.Fatalf("error %v does not wrap ErrBadProfile", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted a profile that does not validate: %v", err)
		}
		var buf bytes.Buffer
		if err := p.WriteYAML(&buf); err != nil {
			t.Fatal(err)
		}
		q, err := LoadProfile(&buf, "again.yaml")
		if err != nil {
			t.Fatalf("written profile does not read back: %v\n%s", err, buf.Bytes())
		}
		if len(p.CUDAGraph.Sizes) == 0 {
			p.CUDAGraph.Sizes, q.CUDAGraph.Sizes = nil, nil
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the profile\n%+v\n%+v", p, q)
		}
		// Any valid profile times any step without panicking or a
		// non-positive time.
		if b := p.StepTime(toyShape(), Step{PrefillTokens: 10, PrefillSeqs: 1, PrefillPairs: 55, Sampled: 1}); b.TotalNs < 1 {
			t.Fatalf("step time %d", b.TotalNs)
		}
	})
}

// TestJointModel: both embedded joint models round-trip through WriteYAML
// and LoadJointModel; bad files are refused naming the field.
func TestJointModel(t *testing.T) {
	for _, j := range []*JointModel{DefaultJoint(), PriorJoint()} {
		var b bytes.Buffer
		if err := j.WriteYAML(&b); err != nil {
			t.Fatal(err)
		}
		back, err := LoadJointModel(&b, "rt.yaml")
		if err != nil || !reflect.DeepEqual(back, j) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, back, j)
		}
	}
	good := string(PriorYAML())
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the prior has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"missing class", edit("  lmdeploy:\n", "  lmdeploy2:\n"), []string{"j.yaml", "engines.lmdeploy missing"}},
		{"missing field", edit("    per_token_ns: 30000\n", ""), []string{"j.yaml", "engines.vllm-v0.per_token_ns missing", "line"}},
		{"bad value", edit("    step_ns: 500000\n", "    step_ns: -5\n"), []string{"j.yaml", "engines.vllm-v1.step_ns", "-5"}},
		{"bad shared value", edit("  kv_bw_eff: 0.8\n", "  kv_bw_eff: 1.8\n"), []string{"j.yaml", "attention.kv_bw_eff", "1.8"}},
		{"unknown field", edit("  kv_bw_eff: 0.8\n", "  kv_bw_eff: 0.8\n  kv_bw: 1\n"), []string{"j.yaml", "kv_bw"}},
		{"empty", "", []string{"j.yaml", "empty file"}},
	} {
		_, err := LoadJointModel(strings.NewReader(tc.text), "j.yaml")
		if !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: %v, want ErrBadProfile", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// TestLoadProfileRandomBytes (issue 28, item 10): random bytes, bare or
// after a profile's first key, are refused within the first 4 KiB.
func TestLoadProfileRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, err := LoadProfile(r, name)
		return err
	}, "gpu: h100-80g\nengine: ")
}
