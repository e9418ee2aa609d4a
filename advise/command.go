// What `gpufrag advise` needs beyond the run itself: its space from the
// flags' text, the model id its deploy command names, its progress lines
// and its files. The CLI binds flags to these and prints.

package advise

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/outfile"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// SpaceText is a sweep space as `gpufrag advise`'s flags give it: KV
// strategy lists (comma-separated; a flag may be repeated), allocator lists in alloc/registry's list syntax (registry.SplitList), the other
// dimensions as given. Space parses it.
type SpaceText struct {
	KVs, Allocs                      []string
	Utils                            []float64
	Buckets, MaxBatchTokens, MaxSeqs []int
	Defrags, PrefixCaching           []string
	// Full crosses every dimension; Experimental starts from
	// ExperimentalSpace, whose defrag policies replace Defrags unless
	// DefragsGiven (the flags' defaults are the stock space's).
	Full, Experimental, DefragsGiven bool
}

// Space parses t, the KV and allocator specs once, into the space the
// sweep runs: DefaultSpace (ExperimentalSpace with Experimental) with
// t's lists in place of its own, KVs and Allocs where given, defrag
// policies and prefix-caching values lower-cased and trimmed, checked by
// Validate. A spec that does not parse is an error naming the flag and
// the spec, followed by suggest's text for it and the names it could have
// had (strategy.Names, registry.Names): the CLI's "did you mean"; nil for
// none.
func (t SpaceText) Space(suggest func(value string, known []string) string) (Space, error) {
	if suggest == nil {
		suggest = func(string, []string) string { return "" }
	}
	sp := DefaultSpace()
	if t.Experimental {
		sp = ExperimentalSpace()
		if !t.DefragsGiven {
			t.Defrags = sp.Defrags
		}
	}
	if len(t.KVs) > 0 {
		sp.KVs = nil
		for _, v := range t.KVs {
			for _, kv := range strings.Split(v, ",") {
				if kv = strings.TrimSpace(kv); kv == "" {
					return sp, fmt.Errorf("--kv: empty spec in %q", v)
				}
				ks, err := strategy.ParseSpec(kv)
				if err != nil {
					return sp, fmt.Errorf("--kv %s: %w%s", kv, err, suggest(kv, strategy.Names()))
				}
				sp.KVs = append(sp.KVs, ks)
			}
		}
	}
	if len(t.Allocs) > 0 {
		sp.Allocs = nil
		for _, v := range t.Allocs {
			as, err := registry.SplitList(v)
			if err != nil {
				return sp, fmt.Errorf("--alloc %q: %w", v, err)
			}
			for _, a := range as {
				p, err := registry.Parse(a)
				if err != nil {
					return sp, fmt.Errorf("--alloc %s: %w%s", a, err, suggest(a, registry.Names()))
				}
				sp.Allocs = append(sp.Allocs, p)
			}
		}
	}
	sp.Utils, sp.Buckets, sp.Full = t.Utils, t.Buckets, t.Full
	sp.MaxBatchTokens, sp.MaxSeqs = t.MaxBatchTokens, t.MaxSeqs
	sp.PrefixCaching, sp.Defrags = lowerTrimmed(t.PrefixCaching), lowerTrimmed(t.Defrags)
	return sp, sp.Validate()
}

// Engine is the engine setup every candidate starts from, as
// `gpufrag advise` takes it: the model (Arg as given, for ModelID) and
// GPU, tensor parallelism, context, the vLLM release ("" for the
// default) and the step-time model (sim.StepTimeJoint or
// sim.StepTimeRoofline; "" for sim.DefaultStepTime).
type Engine struct {
	Model          model.Model
	Arg            string
	GPU            model.GPU
	TP, MaxContext int
	Version        string
	StepTime       string
	KVDType        model.DType // 0: the model's
	WeightDType    model.DType // 0: the model's
}

// SetEngine sets r.Base, the engine configuration every candidate starts
// from (sim.DefaultConfig with e; the joint model's profile of the GPU
// under the joint step-time model), and the inputs that name it: model,
// its Hugging Face id, GPU, TP, context, engine version and step-time
// model.
func (r *Request) SetEngine(e Engine) error {
	base := sim.DefaultConfig(e.Model, e.GPU)
	base.TP, base.MaxContext = e.TP, e.MaxContext
	if e.KVDType != 0 {
		base.KVDType = e.KVDType
	}
	if e.WeightDType != 0 {
		base.WeightDType = e.WeightDType
	}
	in := &r.Inputs
	in.Model, in.ModelID, in.GPU, in.TP, in.MaxContext = e.Model.Name, ModelID(e.Arg), e.GPU.Name, e.TP, e.MaxContext
	in.EngineVersion, in.StepTime = e.Version, e.StepTime
	if in.EngineVersion == "" {
		in.EngineVersion = sim.DefaultEngineVersion(base.Engine).String()
	} else {
		base.EngineVersion = e.Version
	}
	if in.StepTime == "" {
		in.StepTime = sim.DefaultStepTime
	}
	if in.StepTime == sim.StepTimeJoint {
		var err error
		if base.Profile, err = sim.DefaultProfile(e.GPU.Name, base.Engine, base.EngineVersion); err != nil {
			return err
		}
	}
	r.Base = base
	return nil
}

// CheckLimits checks the request's flags that Advise takes as given: the
// tensor-parallel degree, the SLO, the second stage's setups (and that
// --refine and --full are not both given) and the search past the space.
// The errors name the flags (a usage error).
func CheckLimits(tp int, slo SLO, refine, full bool, refineTop, extend int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("--tp %d: want at least 1", tp)
	case !(slo.TTFTP99 > 0) || !(slo.TPOTP99 > 0) || math.IsInf(slo.TTFTP99, 0) || math.IsInf(slo.TPOTP99, 0):
		return fmt.Errorf("--slo-ttft-p99 %v, --slo-tpot-p99 %v: want positive seconds", slo.TTFTP99, slo.TPOTP99)
	case !(slo.ITLP99 >= 0) || math.IsInf(slo.ITLP99, 0):
		return fmt.Errorf("--slo-itl-p99 %v: want positive seconds, or 0 for no ITL objective", slo.ITLP99)
	case refine && full:
		return errors.New("--refine and --full: choose one (--full already crosses everything)")
	case refineTop < 1:
		return fmt.Errorf("--refine-top %d: want at least 1", refineTop)
	case extend < 0:
		return fmt.Errorf("--extend %d: want 0 or more candidates", extend)
	}
	return nil
}

// lowerTrimmed is xs lower-cased and trimmed (nil for none).
func lowerTrimmed(xs []string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, strings.ToLower(strings.TrimSpace(x)))
	}
	return out
}

// ModelID is the Hugging Face id of a --model argument for the deploy
// command: a preset's repository, or the _name_or_path of a config.json
// ("" when it has none, or names a local path, which another machine
// cannot serve from). The file was read and checked by model.Load
// already; one that cannot be read again has no id.
func ModelID(arg string) string {
	if r, ok := model.PresetRepo(arg); ok {
		return r
	}
	fh, err := os.Open(arg)
	if err != nil {
		return ""
	}
	defer fh.Close()
	var c struct {
		NameOrPath string `json:"_name_or_path"`
	}
	if json.NewDecoder(io.LimitReader(fh, model.MaxConfigBytes)).Decode(&c) != nil {
		return ""
	}
	return hubID(c.NameOrPath)
}

// hubID is id trimmed when it can be a Hugging Face id another machine
// serves from, "" when it is empty or names a local path.
func hubID(id string) string {
	id = strings.TrimSpace(id)
	if id == "" || strings.HasPrefix(id, "/") || strings.HasPrefix(id, ".") || len(id) > 200 || strings.ContainsAny(id, " \t\n") {
		return ""
	}
	return id
}

// RunModelID is the model id a benchmark run names (workload.BenchResult's
// Model) when the deploy command should serve it instead of id, the one
// --model gives: an org/name id another machine can serve from that names
// m's family or size and no other (model.IDAgrees; an alias such as
// --served-model-name's "llama" does not). Otherwise it returns id.
func RunModelID(id, run string, m model.Model) string {
	if r := hubID(run); strings.Contains(r, "/") && model.IDAgrees(r, m) { // an org/name that names the model, not an alias
		return r
	}
	return id
}

// PlanLine is the line `gpufrag advise` prints once the candidates are
// known (Hooks.Planned): how many, by group, the most simulations each,
// and with shards, how many this shard runs.
func PlanLine(in Inputs, run []int, shard, shards int) string {
	var names []string
	counts := map[string]int{}
	for _, c := range in.Candidates {
		if counts[c.Group] == 0 {
			names = append(names, c.Group)
		}
		counts[c.Group]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", counts[n], n)
	}
	line := fmt.Sprintf("advise: %s (%s), at most %d simulations each", human.Count(int64(len(in.Candidates)), "candidate"), strings.Join(parts, ", "), in.Search.MaxEvaluations())
	if shards > 1 {
		line += fmt.Sprintf("; shard %d/%d runs %d", shard, shards, len(run))
	}
	return line
}

// ExtendLine is the line `gpufrag advise` prints before each round of the
// search past the space (Hooks.Extending).
func ExtendLine(next []Candidate) string {
	names := make([]string, len(next))
	for i, c := range next {
		names[i] = c.Settings.String()
	}
	return "advise: nothing meets the SLO; going on past the space as the advice says: " + strings.Join(names, "; ")
}

// ReadReportFile reads the report in the file at path (ReadReport).
func ReadReportFile(path string) (*Report, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ReadReport(fh, path)
}

// ReadPartialFiles reads the shard files at paths (ReadPartial), in order.
func ReadPartialFiles(paths []string) ([]*Partial, error) {
	parts := make([]*Partial, len(paths))
	for i, name := range paths {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		parts[i], err = ReadPartial(fh, name)
		fh.Close()
		if err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// WriteFile writes p to the file at path, replacing a file there whole or
// not at all (internal/outfile); errors of the writing name the file.
func (p *Partial) WriteFile(path string) error {
	return outfile.Write(path, 0o644, p.Write)
}

// ProgressHooks are `gpufrag advise`'s hooks: the plan line (PlanLine)
// and a progress bar of the candidates searched on w, and a line before
// each round past the space (ExtendLine).
func ProgressHooks(w io.Writer, shard, shards int) Hooks {
	var bar *progress.Bar
	return Hooks{Done: func() { bar.Increment() }, Searched: func() { bar.Done() },
		Planned: func(in Inputs, run []int) {
			fmt.Fprintln(w, PlanLine(in, run, shard, shards))
			bar = progress.New(w, int64(len(run)), "advise")
		},
		Extending: func(next []Candidate) { fmt.Fprintln(w, ExtendLine(next)) }}
}

// PartialTo is a Hooks.Partial that writes the partial result to the
// file at path, or to w when path is "" (`advise --shard i/n [--out
// FILE]`); errors of the file are the --out flag's.
func PartialTo(w io.Writer, path string) func(*Partial) error {
	return func(p *Partial) error {
		if path == "" {
			return p.Write(w)
		}
		if err := p.WriteFile(path); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		return nil
	}
}
