package advise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// TestSpaceText: the flags' text parses once into the space the sweep
// runs (KV lists split at commas, allocator lists by alloc/registry's rule),
// with errors that name the flag and the spec and end with the caller's
// suggestion; --experimental's defrag policies unless --defrag was given.
func TestSpaceText(t *testing.T) {
	def := DefaultSpace()
	base := SpaceText{Utils: def.Utils, Buckets: def.Buckets, Defrags: def.Defrags, MaxBatchTokens: def.MaxBatchTokens,
		MaxSeqs: def.MaxSeqs, PrefixCaching: []string{" ON", "off"}}
	sp, err := base.Space(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp.KVList() != def.KVList() || sp.AllocList() != def.AllocList() || !reflect.DeepEqual(sp.PrefixCaching, []string{"on", "off"}) {
		t.Errorf("no kv or alloc given: %+v, want the default space's", sp)
	}
	given := base
	given.KVs, given.Allocs = []string{"paged:16, contiguous-grow", "vmm:2MiB"}, []string{"caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB"}
	if sp, err = given.Space(nil); err != nil {
		t.Fatal(err)
	}
	if got := sp.KVList() + " | " + sp.AllocList(); got != "paged:16,contiguous-grow,vmm:2MiB | caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB" {
		t.Errorf("given: %s", got)
	}
	exp := base
	exp.Experimental = true
	if sp, _ = exp.Space(nil); !reflect.DeepEqual(sp.Defrags, ExperimentalSpace().Defrags) || sp.KVList() != ExperimentalSpace().KVList() {
		t.Errorf("experimental: %+v", sp)
	}
	exp.DefragsGiven = true
	if sp, _ = exp.Space(nil); !reflect.DeepEqual(sp.Defrags, []string{"off"}) {
		t.Errorf("experimental with --defrag off: %v", sp.Defrags)
	}
	suggest := func(v string, known []string) string { return fmt.Sprintf(" [%s of %d]", v, len(known)) }
	for _, c := range []struct {
		kvs, allocs []string
		want        string
		is          error
	}{
		{[]string{"paged:16,,paged:32"}, nil, `--kv: empty spec in "paged:16,,paged:32"`, nil},
		{[]string{"paged:0"}, nil, "--kv paged:0: ", strategy.ErrBadSpec},
		{[]string{"pagd:16"}, nil, fmt.Sprintf("[pagd:16 of %d]", len(strategy.Names())), strategy.ErrBadSpec},
		{nil, []string{"cachng"}, "--alloc cachng: ", alloc.ErrBadSpec},
		{nil, []string{"cachng"}, fmt.Sprintf("[cachng of %d]", len(registry.Names())), alloc.ErrBadSpec},
		{[]string{"paged:16,PAGED:16"}, nil, `kv: "paged:16" listed twice`, ErrBadSpace},
	} {
		st := base
		st.KVs, st.Allocs = c.kvs, c.allocs
		_, err := st.Space(suggest)
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("kv %q alloc %q: %v; want %q", c.kvs, c.allocs, err, c.want)
		}
	}
}

// TestCheckLimits: each limit the request takes as given is refused with
// its flag's name.
func TestCheckLimits(t *testing.T) {
	slo := DefaultSLO()
	if err := CheckLimits(1, slo, true, false, 1, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckLimits(0, slo, false, false, 3, 8), "--tp 0: want at least 1"},
		{CheckLimits(1, SLO{TTFTP99: 2}, false, false, 3, 8), "--slo-tpot-p99 0: want positive seconds"},
		{CheckLimits(1, slo, true, true, 3, 8), "--refine and --full: choose one"},
		{CheckLimits(1, slo, false, false, 0, 8), "--refine-top 0: want at least 1"},
		{CheckLimits(1, slo, false, false, 3, -1), "--extend -1: want 0 or more candidates"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want %q", c.err, c.want)
		}
	}
}

// TestCommandLines: the plan line counts the candidates by group in their
// order and names the shard's share; the help states the default space's
// size, the most simulations a candidate takes and --extend's default as
// the code has them.
func TestCommandLines(t *testing.T) {
	cs, err := DefaultSpace().Candidates()
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Candidates: cs, Search: DefaultSearch()}
	if got := PlanLine(in, []int{0, 2}, 0, 2); got != "advise: 28 candidates (8 setup, 6 util, 2 bucket, 6 tokens, 4 seqs, 2 prefix), at most 10 simulations each; shard 0/2 runs 2" {
		t.Errorf("plan line %q", got)
	}
	if got := ExtendLine(cs[:1]); got != "advise: nothing meets the SLO; going on past the space as the advice says: "+cs[0].Settings.String() {
		t.Errorf("extend line %q", got)
	}
	stock := 0
	for _, c := range cs {
		if c.Group != "prefix" {
			stock++
		}
	}
	s := DefaultSearch()
	for _, want := range []string{
		fmt.Sprintf("default sweep (%d stock settings", stock),
		fmt.Sprintf("The default\nspace has %d candidates (%d with shared prefixes)", stock, len(cs)),
		fmt.Sprintf("at most 1 + %d + %d = %d simulations", s.BracketSteps, s.BisectSteps, s.MaxEvaluations()),
		fmt.Sprintf("--extend candidates were added (default %d", DefaultExtend),
		fmt.Sprintf("below %.0f%% of what its rate offers", 100*drainShare),
	} {
		if !strings.Contains(strings.ReplaceAll(Help+Examples, " per\ncandidate", " per candidate"), want) {
			t.Errorf("help: no %q", want)
		}
	}
}

// TestModelID: a preset's repository, a config's _name_or_path, and none
// for a local path, a config without it or a file that is not JSON.
func TestModelID(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ arg, want string }{
		{"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"},
		{write("a.json", `{"_name_or_path": " org/model "}`), "org/model"},
		{write("b.json", `{"_name_or_path": "/home/me/model"}`), ""},
		{write("c.json", `{"hidden_size": 4096}`), ""},
		{write("d.json", `not json`), ""},
		{filepath.Join(dir, "none.json"), ""},
	} {
		if got := ModelID(c.arg); got != c.want && !(c.arg == "llama-3.1-8b" && got != "") {
			t.Errorf("%s: %q, want %q", c.arg, got, c.want)
		}
	}
}

// TestSetEngine: the base config is sim.DefaultConfig's with the setup's
// TP, context and KV dtype; the engine version and step-time model default
// to sim's and are recorded in the inputs; the joint model loads the GPU's
// profile, the roofline none.
func TestSetEngine(t *testing.T) {
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	if err := r.SetEngine(Engine{Model: m, Arg: "llama-3.1-8b", GPU: g, TP: 2, MaxContext: 4096, KVDType: model.FP16}); err != nil {
		t.Fatal(err)
	}
	in, b := r.Inputs, r.Base
	if in.StepTime != sim.DefaultStepTime || in.EngineVersion != sim.DefaultEngineVersion(b.Engine).String() || in.ModelID == "" ||
		in.TP != 2 || in.MaxContext != 4096 || b.TP != 2 || b.MaxContext != 4096 || b.KVDType != model.FP16 || in.GPU != g.Name {
		t.Errorf("defaults: inputs %+v, base TP %d context %d dtype %v", in, b.TP, b.MaxContext, b.KVDType)
	}
	if (in.StepTime == sim.StepTimeJoint) != (b.Profile != nil) {
		t.Errorf("step time %s with profile %v", in.StepTime, b.Profile != nil)
	}
	for _, st := range []string{sim.StepTimeJoint, sim.StepTimeRoofline} {
		var r Request
		if err := r.SetEngine(Engine{Model: m, GPU: g, TP: 1, StepTime: st, Version: "0.10.0"}); err != nil {
			t.Fatal(err)
		}
		if r.Inputs.StepTime != st || (st == sim.StepTimeJoint) != (r.Base.Profile != nil) || r.Inputs.EngineVersion != "0.10.0" || r.Base.EngineVersion != "0.10.0" {
			t.Errorf("%s: step time %s, profile %v, version %q/%q", st, r.Inputs.StepTime, r.Base.Profile != nil, r.Inputs.EngineVersion, r.Base.EngineVersion)
		}
	}
}
