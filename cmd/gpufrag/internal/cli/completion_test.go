package cli

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/judge"
	"github.com/gpufrag/gpufrag/cluster/stock"
	"github.com/gpufrag/gpufrag/experiments"
	"github.com/gpufrag/gpufrag/exporter/daemon"
	"github.com/gpufrag/gpufrag/exporter/rules"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/workload"
)

// completion is what `gpufrag __complete ARGS...` answered: the candidates
// (without their descriptions), each candidate's description, and the
// directive.
type completion struct {
	values []string
	desc   map[string]string
	dir    cobra.ShellCompDirective
}

// complete asks gpufrag for the completions of the last of args, as the
// shells' scripts do (the hidden __complete command, through Main).
func complete(t *testing.T, args ...string) completion {
	t.Helper()
	code, out, errs := run(t, "", append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	n, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete %q: no directive line at the end of\n%s", args, out)
	}
	c := completion{desc: map[string]string{}, dir: cobra.ShellCompDirective(n)}
	described, comma := false, false
	for _, l := range lines[:len(lines)-1] {
		v, d, tab := strings.Cut(l, "\t")
		c.values = append(c.values, v)
		c.desc[v] = d
		// A tab is a description to bash: never an empty one.
		if tab && d == "" {
			t.Errorf("__complete %q: %q has a tab and no description", args, l)
		}
		described, comma = described || tab, comma || strings.Contains(v, ",")
	}
	// bash matches described candidates in a form that escapes commas
	// (matching): a candidate with a comma comes without descriptions.
	if described && comma {
		t.Errorf("__complete %q: candidates with commas and descriptions:\n%s", args, out)
	}
	return c
}

// prefixed is each of names after prefix.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

func without(names []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(drop, n) })
}

// TestCompletionRegistries: a flag whose values a package lists completes
// to that list, read from the package here too, so a preset, allocator,
// policy or format added there that completion does not offer fails this
// test; a list flag completes the item after its last comma, after the
// items before it, leaving them out, with no space after it.
func TestCompletionRegistries(t *testing.T) {
	experimentNames := func() []string {
		exps, err := experiments.Load()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range exps {
			names = append(names, e.Name)
		}
		return names
	}
	policies := append(cluster.PolicyNames(), slices.Sorted(maps.Keys(cluster.Aliases))...)
	allocs := append(registry.Names(), "all")
	// kv: a name with a placeholder argument (paged:B) is offered up to its colon.
	var kvs []string
	for _, n := range strategy.Names() {
		if _, err := strategy.ParseSpec(n); err != nil {
			n = n[:strings.Index(n, ":")+1]
		}
		kvs = append(kvs, n)
	}
	const one, list = cobra.ShellCompDirectiveNoFileComp, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	for _, tc := range []struct {
		args []string
		want []string
		dir  cobra.ShellCompDirective
	}{
		{[]string{"simulate", "--gpu", ""}, model.GPUNames(), one},
		{[]string{"advise", "--gpu", ""}, model.GPUNames(), one},
		{[]string{"calibrate", "--gpu", ""}, model.GPUNames(), one},
		{[]string{"defrag", "--gpu", ""}, model.GPUNames(), one},
		{[]string{"simulate", "--model", ""}, model.PresetNames(), one},
		{[]string{"advise", "--model", ""}, model.PresetNames(), one},
		{[]string{"calibrate", "--model", ""}, model.PresetNames(), one},
		{[]string{"simulate", "--kv", ""}, kvs, list},
		{[]string{"simulate", "--kv", "contiguous-grow,paged:16,"}, prefixed("contiguous-grow,paged:16,", without(kvs, "contiguous-grow")), list},
		{[]string{"advise", "--kv", "paged:16,"}, prefixed("paged:16,", kvs), list},
		{[]string{"simulate", "--alloc", ""}, allocs, list},
		{[]string{"simulate", "--alloc", "caching,"}, prefixed("caching,", without(allocs, "caching")), list},
		{[]string{"advise", "--alloc", "async,"}, prefixed("async,", without(allocs, "async")), list},
		{[]string{"replay", "--alloc", "vmm:2MiB,"}, prefixed("vmm:2MiB,", allocs), list},
		{[]string{"analyze", "--whatif", ""}, allocs, list},
		{[]string{"defrag", "--allocator", ""}, allocs, one},
		{[]string{"simulate", "--engine", ""}, sim.EngineNames(), one},
		{[]string{"calibrate", "--engine", ""}, sim.EngineNames(), one},
		{[]string{"simulate", "--kv-dtype", ""}, model.KVDTypeNames(), one},
		{[]string{"advise", "--kv-dtype", ""}, model.KVDTypeNames(), one},
		{[]string{"simulate", "--weight-dtype", ""}, model.DTypeNames(), one},
		{[]string{"advise", "--weight-dtype", ""}, model.DTypeNames(), one},
		{[]string{"simulate", "--format", ""}, workload.FormatNames(), one},
		{[]string{"advise", "--format", ""}, workload.FormatNames(), one},
		{[]string{"simulate", "--on-oom", ""}, sim.OnOOMNames(), one},
		{[]string{"simulate", "--defrag", ""}, sim.DefragPolicyNames(), one},
		{[]string{"advise", "--defrag", "off,"}, prefixed("off,", without(sim.DefragPolicyNames(), "off")), list},
		{[]string{"advise", "--prefix-caching", ""}, advise.DefaultSpace().PrefixCaching, list},
		{[]string{"advise", "--profile", ""}, []string{sim.StepTimeJoint, sim.StepTimeRoofline}, one},
		{[]string{"calibrate", "--params", ""}, calib.ParamNames(), list},
		{[]string{"calibrate", "--warm-prompts", ""}, calib.WarmModeNames(), one},
		{[]string{"analyze", "--folded-value", ""}, analysis.ProfileValues, one},
		{[]string{"rules", "--format", ""}, rules.Formats(), one},
		{[]string{"exporter", "--log-format", ""}, daemon.LogFormats(), one},
		{[]string{"exporter", "--log-level", ""}, daemon.LogLevels(), one},
		{[]string{"cluster", "simulate", "--policy", ""}, policies, list},
		{[]string{"cluster", "simulate", "--policy", "fgd,"}, prefixed("fgd,", without(policies, "fgd")), list},
		{[]string{"cluster", "judge", "--policy", ""}, policies, list},
		{[]string{"cluster", "judge", "--ref", ""}, policies, one},
		{[]string{"cluster", "judge", "--set", ""}, judge.SetNames, one},
		{[]string{"cluster", "gen-pods", "--family", ""}, gen.FamilyNames(), one},
		{[]string{"cluster", "volcano-config", "--policy", ""}, stock.StockGrid(), one},
		{[]string{"experiments", "run", ""}, experimentNames(), one},
		{[]string{"experiments", "run", "int8-kv", ""}, without(experimentNames(), "int8-kv"), one},
	} {
		c := complete(t, tc.args...)
		if !slices.Equal(c.values, tc.want) {
			t.Errorf("%q: completes to\n%q\nwant\n%q", tc.args, c.values, tc.want)
		}
		if c.dir != tc.dir {
			t.Errorf("%q: directive %d, want %d", tc.args, c.dir, tc.dir)
		}
	}
	// Every engine's releases, in order, its default said; with no
	// --engine, every release some engine takes.
	var all []string
	for _, name := range sim.EngineNames() {
		k, err := sim.ParseEngine(name)
		if err != nil {
			t.Fatal(err)
		}
		c := complete(t, "simulate", "--engine", name, "--engine-version", "")
		if want := sim.EngineReleases(k); !slices.Equal(c.values, want) || c.dir != one|cobra.ShellCompDirectiveKeepOrder {
			t.Errorf("--engine %s --engine-version: %q (directive %d), want %q in this order", name, c.values, c.dir, want)
		}
		def := sim.DefaultEngineVersion(k)
		if d := c.desc[strings.Join(strings.Split(def.String(), ".")[:2], ".")]; !strings.Contains(d, "default "+def.String()) {
			t.Errorf("--engine %s: the default release's series says %q", name, d)
		}
		for _, r := range c.values {
			if !slices.Contains(all, r) {
				all = append(all, r)
			}
		}
	}
	if c := complete(t, "calibrate", "--engine-version", ""); !sameSet(c.values, all) {
		t.Errorf("calibrate --engine-version: %q, want every release %q", c.values, all)
	}
	if c := complete(t, "advise", "--engine-version", ""); !slices.Equal(c.values, sim.EngineReleases(sim.EngineVLLMV1)) {
		t.Errorf("advise --engine-version (vLLM V1 only): %q", c.values)
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestCompletionValues: what is typed narrows the candidates; a value that
// wants its argument (fit:, paged:) gets no space after it; the allocator
// list offers an allocator's example once its name and a colon are typed;
// the descriptions are the registries'.
func TestCompletionValues(t *testing.T) {
	const one, list = cobra.ShellCompDirectiveNoFileComp, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	for _, tc := range []struct {
		args []string
		want []string
		dir  cobra.ShellCompDirective
	}{
		{[]string{"simulate", "--gpu", "h"}, []string{"h100-80g", "h200-141g"}, one},
		{[]string{"simulate", "--gpu=h2"}, []string{"h200-141g"}, one},
		{[]string{"simulate", "--kv", "paged:16,contiguous-max:"}, []string{"paged:16,contiguous-max:pow2", "paged:16,contiguous-max:oracle"}, list},
		{[]string{"simulate", "--kv", "pa"}, []string{"paged:"}, list},
		{[]string{"simulate", "--alloc", "direct,caching:"}, []string{"direct,caching:expandable_segments:True,max_split_size_mb:128"}, list},
		{[]string{"simulate", "--alloc", "nosuch"}, nil, list},
		{[]string{"defrag", "--goal", ""}, []string{"compact", "fit:"}, one},
		{[]string{"defrag", "--goal", "f"}, []string{"fit:"}, one | cobra.ShellCompDirectiveNoSpace},
		{[]string{"cluster", "judge", "--ref", "rec"}, []string{"recommended"}, one},
		{[]string{"simulate", "--engine", "sglang", "--engine-version", "0.4"}, []string{"0.4"}, one | cobra.ShellCompDirectiveKeepOrder},
	} {
		c := complete(t, tc.args...)
		if !slices.Equal(c.values, tc.want) || c.dir != tc.dir {
			t.Errorf("%q: %q (directive %d), want %q (%d)", tc.args, c.values, c.dir, tc.want, tc.dir)
		}
	}
	c := complete(t, "replay", "--alloc", "")
	for _, k := range registry.Kinds {
		if c.desc[k.Name] != k.Summary {
			t.Errorf("--alloc %s: description %q, want its summary", k.Name, c.desc[k.Name])
		}
	}
	c = complete(t, "cluster", "simulate", "--policy", "")
	for _, p := range cluster.Policies {
		if c.desc[p.Name] != p.Summary {
			t.Errorf("--policy %s: description %q, want its summary", p.Name, c.desc[p.Name])
		}
	}
	if c := complete(t, "simulate", "--gpu", "h100"); c.desc["h100-80g"] != "79.65GiB" {
		t.Errorf("--gpu h100-80g: description %q, want its memory", c.desc["h100-80g"])
	}
}

// TestCompletionFiles: a flag or argument that takes a file completes the
// shell's file names, of the extensions of its kind where it takes one;
// --model and --profile take a name or a file; a directory flag completes
// directories; a number, a size or a duration completes nothing, and so
// does an argument a command does not take.
func TestCompletionFiles(t *testing.T) {
	const (
		files = cobra.ShellCompDirectiveDefault
		ext   = cobra.ShellCompDirectiveFilterFileExt
		dirs  = cobra.ShellCompDirectiveFilterDirs
		none  = cobra.ShellCompDirectiveNoFileComp
	)
	for _, tc := range []struct {
		args []string
		want []string // the extensions, or names
		dir  cobra.ShellCompDirective
	}{
		{[]string{"simulate", "--trace", ""}, []string{"csv", "jsonl", "json"}, ext},
		{[]string{"advise", "--trace", "ex"}, []string{"csv", "jsonl", "json"}, ext},
		{[]string{"simulate", "--scenario", ""}, []string{"yaml", "yml"}, ext},
		{[]string{"simulate", "--html", ""}, []string{"html"}, ext},
		{[]string{"simulate", "--model", "ex"}, []string{"json"}, ext},
		{[]string{"simulate", "--model", "./"}, []string{"json"}, ext},
		{[]string{"simulate", "--model", "llama-3.1-8"}, []string{"llama-3.1-8b"}, none},
		{[]string{"simulate", "--profile", ""}, []string{"joint", "roofline"}, none},
		{[]string{"simulate", "--profile", "a100"}, []string{"yaml", "yml"}, ext},
		{[]string{"simulate", "--profile", "calib/"}, []string{"yaml", "yml"}, ext},
		{[]string{"calibrate", "--ops", ""}, []string{"json"}, ext},
		{[]string{"calibrate", "--holdout", ""}, []string{"json", "jsonl"}, ext},
		{[]string{"calibrate", "-o", ""}, []string{"yaml", "yml"}, ext},
		{[]string{"rules", "--history", ""}, []string{"json", "csv"}, ext},
		{[]string{"rules", "--out", ""}, []string{"yml", "yaml"}, ext},
		{[]string{"cluster", "simulate", "--nodes", ""}, []string{"csv", "json"}, ext},
		{[]string{"cluster", "judge", "--list", ""}, []string{"csv", "json"}, ext},
		{[]string{"cluster", "inspect", "--from", ""}, []string{"json"}, ext},
		{[]string{"cluster", "gen-pods", "-o", ""}, []string{"csv"}, ext},
		{[]string{"cluster", "simulate", "--png", ""}, nil, dirs},
		{[]string{"experiments", "run", "--root", ""}, nil, dirs},
		{[]string{"exporter", "--snapshots", ""}, nil, dirs},
		{[]string{"cluster", "inspect", "--kubeconfig", ""}, nil, files},
		{[]string{"analyze", "x.pickle", "--profile", ""}, nil, files},
		{[]string{"simulate", "--cpuprofile", ""}, nil, files},
		{[]string{"simulate", "--rate", ""}, nil, none},
		{[]string{"simulate", "--duration", ""}, nil, none},
		{[]string{"replay", "--capacity", ""}, nil, none},
		{[]string{"exporter", "--listen", ""}, nil, none},
		{[]string{"analyze", ""}, []string{"pickle", "pkl", "json"}, ext},
		{[]string{"analyze", "a.pickle", ""}, nil, none},
		{[]string{"diff", "a.pickle", "b.pickle", ""}, []string{"pickle", "pkl", "json"}, ext},
		{[]string{"defrag", ""}, []string{"pickle", "pkl", "json"}, ext},
		{[]string{"replay", ""}, []string{"jsonl"}, ext},
		{[]string{"replay", "ops.jsonl", ""}, nil, none},
		{[]string{"calibrate", "a.json", ""}, []string{"json", "jsonl"}, ext},
		{[]string{"calibrate", "--ops", "ops.json", ""}, nil, none},
		{[]string{"advise", "merge", ""}, []string{"json"}, ext},
		{[]string{"simulate", ""}, nil, none},
		{[]string{"rules", ""}, nil, none},
		{[]string{"cluster", "simulate", ""}, nil, none},
	} {
		c := complete(t, tc.args...)
		if !slices.Equal(c.values, tc.want) || c.dir != tc.dir {
			t.Errorf("%q: %q (directive %d), want %q (%d)", tc.args, c.values, c.dir, tc.want, tc.dir)
		}
	}
}

// TestCompletionCommands: commands, subcommands and help topics complete
// as cobra completes them, completion among them.
func TestCompletionCommands(t *testing.T) {
	root := newRoot(strings.NewReader(""), io.Discard, io.Discard)
	var top []string
	for _, c := range root.Commands() {
		top = append(top, c.Name())
	}
	top = append(top, "completion", "help")
	slices.Sort(top)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, top},
		{[]string{"cl"}, []string{"cluster"}},
		{[]string{"help", "cl"}, []string{"cluster"}},
		{[]string{"cluster", ""}, []string{"gen-pods", "inspect", "judge", "simulate", "volcano-config"}},
		{[]string{"help", "cluster", ""}, []string{"gen-pods", "inspect", "judge", "simulate", "volcano-config"}},
		{[]string{"experiments", ""}, []string{"list", "run"}},
		{[]string{"completion", ""}, []string{"bash", "fish", "powershell", "zsh"}},
		{[]string{"simulate", "--gp"}, []string{"--gpu", "--gpu-memory-utilization"}},
	} {
		c := complete(t, tc.args...)
		if !slices.Equal(c.values, tc.want) || c.dir != cobra.ShellCompDirectiveNoFileComp {
			t.Errorf("%q: %q (directive %d), want %q", tc.args, c.values, c.dir, tc.want)
		}
	}
}

// TestCompletionContext: cluster inspect's --context completes the
// kubeconfig's contexts (--kubeconfig's file here), the current one said
// so; a name with a control character is left out.
func TestCompletionContext(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	path := filepath.Join(dir, "kubeconfig")
	body := "contexts:\n- {name: prod, context: {cluster: a}}\n- {name: dev, context: {cluster: b}}\n- {name: \"evil\\nname\", context: {cluster: b}}\ncurrent-context: prod\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := complete(t, "cluster", "inspect", "--kubeconfig", path, "--context", "")
	if !slices.Equal(c.values, []string{"dev", "prod"}) || c.desc["prod"] != "current context" || c.dir != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("--context: %q %q (directive %d)", c.values, c.desc, c.dir)
	}
	if c := complete(t, "cluster", "inspect", "--context", ""); len(c.values) != 0 || c.dir != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("--context without a kubeconfig: %q (directive %d)", c.values, c.dir)
	}
	if c := complete(t, "cluster", "inspect", "--kubeconfig", filepath.Join(dir, "missing"), "--context", ""); c.dir != cobra.ShellCompDirectiveError {
		t.Errorf("--context of a missing --kubeconfig: %q (directive %d), want an error", c.values, c.dir)
	}
}

// TestCompletionEveryFlag: after registerCompletions every flag that takes
// a value has a completion and every command an argument completion, and
// every command whose usage names arguments has its own in argCompletions
// (a new command that takes files does not fall to "no arguments").
func TestCompletionEveryFlag(t *testing.T) {
	root := newRoot(strings.NewReader(""), io.Discard, io.Discard)
	registerCompletions(root)
	args := argCompletions()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		key := commandKey(cmd)
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := cmd.GetFlagCompletionFunc(f.Name); !ok && f.Value.Type() != "bool" {
				t.Errorf("gpufrag %s --%s: no completion", key, f.Name)
			}
		})
		if cmd.ValidArgsFunction == nil {
			t.Errorf("gpufrag %s: no completion of its arguments", key)
		}
		if use := strings.Fields(cmd.Use); len(use) > 1 && !strings.HasPrefix(use[1], "-") && !strings.HasPrefix(use[1], "[-") &&
			cmd.Name() != "help" {
			if _, ok := args[key]; !ok {
				t.Errorf("gpufrag %s takes arguments (%q) but argCompletions has none for it", key, cmd.Use)
			}
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
}
