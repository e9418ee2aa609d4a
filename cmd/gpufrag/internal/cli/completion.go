package cli

// Shell completion. `gpufrag completion SHELL` (cobra's) prints a script
// that asks the hidden command `gpufrag __complete ARGS... WORD` for the
// candidates of WORD: commands and flags as cobra knows them, and flag
// values and arguments from the functions registered here. The values come
// from the packages' own lists (model.GPUNames, alloc/registry.Kinds,
// cluster.Policies...), never a copy, so a new preset or allocator
// completes without a change here (TestCompletionRegistries). A flag not
// in flagCompletions completes by its placeholder: FILE or PATH any file,
// DIR a directory, anything else (a number, a size, a duration, an
// address) nothing, rather than the shell's file names.
//
// cobra keeps flag completions in a process-wide table keyed by flag,
// while Main builds a new command tree on every call (tests call it
// thousands of times), so they are registered only for a completion
// request (registerCompletions).

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/judge"
	"github.com/gpufrag/gpufrag/cluster/kube/live"
	"github.com/gpufrag/gpufrag/cluster/stock"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/experiments"
	"github.com/gpufrag/gpufrag/exporter/daemon"
	"github.com/gpufrag/gpufrag/exporter/rules"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/workload"
)

// The extensions of the files a flag or argument takes, where it takes
// one kind (the readers tell formats apart by content; these only narrow
// what the shell lists).
var (
	snapshotExts = []string{"pickle", "pkl", "json"} // a PyTorch snapshot, a memory_stats dump (defrag: a saved layout)
	traceExts    = []string{"csv", "jsonl", "json"}  // a request trace or a benchmark result
	benchExts    = []string{"json", "jsonl"}         // vLLM --save-result JSON, SGLang bench_serving JSONL
	listExts     = []string{"csv", "json"}           // an openb node or pod list
	yamlExts     = []string{"yaml", "yml"}
)

// isCompletionRequest reports whether args call cobra's hidden completion
// command, which the shells' scripts run.
func isCompletionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// commandKey names cmd in flagCompletions and argCompletions: its path
// below the root ("cluster simulate"; "" for the root).
func commandKey(cmd *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()), " ")
}

// registerCompletions gives every flag that takes a value and every
// command of root's tree its completion: flagCompletions' and
// argCompletions', else the placeholder's (completeByPlaceholder) and no
// arguments. It panics on an entry that names no command or flag, which
// every completion test would meet.
func registerCompletions(root *cobra.Command) {
	flags, args := flagCompletions(), argCompletions()
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		key := commandKey(cmd)
		own := flags[key]
		delete(flags, key)
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			fn, ok := own[f.Name]
			delete(own, f.Name)
			if !ok {
				if f.Value.Type() == "bool" {
					return
				}
				fn = completeByPlaceholder(f)
			}
			if err := cmd.RegisterFlagCompletionFunc(f.Name, fn); err != nil {
				panic(fmt.Sprintf("gpufrag %s --%s: %v", key, f.Name, err))
			}
		})
		if len(own) > 0 {
			panic(fmt.Sprintf("completion of flags gpufrag %s does not have: %v", key, slices.Sorted(maps.Keys(own))))
		}
		if fn, ok := args[key]; ok {
			cmd.ValidArgsFunction = fn
			delete(args, key)
		} else if cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = cobra.NoFileCompletions // no arguments; cobra still lists subcommands
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
	if len(flags) > 0 || len(args) > 0 {
		panic(fmt.Sprintf("completion of commands gpufrag does not have: %v %v", slices.Sorted(maps.Keys(flags)), slices.Sorted(maps.Keys(args))))
	}
}

// completeByPlaceholder is the completion of a flag that flagCompletions
// does not name, by the placeholder of its help (`FILE`): files for FILE
// and PATH, directories for DIR, nothing for the rest.
func completeByPlaceholder(f *pflag.Flag) cobra.CompletionFunc {
	switch name, _ := pflag.UnquoteUsage(f); name {
	case "FILE", "PATH":
		return completeFiles()
	case "DIR":
		return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
	}
	return cobra.NoFileCompletions
}

// flagCompletions are the completions of the flags whose values can be
// listed or are files of one kind, by command (commandKey) and flag.
func flagCompletions() map[string]map[string]cobra.CompletionFunc {
	engine := map[string]cobra.CompletionFunc{ // engineflags.go's, on simulate and calibrate
		"kv-dtype":       completeOne(namesOf(model.KVDTypeNames)),
		"weight-dtype":   completeOne(namesOf(model.DTypeNames)),
		"engine":         completeOne(namesOf(sim.EngineNames)),
		"engine-version": completeEngineVersion(sim.EngineNames()...),
	}
	gpu, mdl := completeOne(gpuCands), completeNameOrFile(modelCands, looksLikePath, "json")
	nodesPods := map[string]cobra.CompletionFunc{"nodes": completeFiles(listExts...), "pods": completeFiles(listExts...)}
	return map[string]map[string]cobra.CompletionFunc{
		"simulate": merged(engine, map[string]cobra.CompletionFunc{
			"scenario": completeFiles(yamlExts...),
			"trace":    completeFiles(traceExts...),
			"format":   completeOne(namesOf(workload.FormatNames)),
			"model":    mdl,
			"gpu":      gpu,
			"kv":       completeList(kvCands),
			"alloc":    completeList(allocCands),
			"on-oom":   completeOne(namesOf(sim.OnOOMNames)),
			"defrag":   completeOne(namesOf(sim.DefragPolicyNames)),
			"html":     completeFiles("html"),
			"profile": completeNameOrFile(func(string) []cand {
				return []cand{{scenario.ProfileJoint, "the joint model's profile of --gpu (default)"}, {scenario.ProfileRoofline, "the roofline step-time model"}}
			}, scenario.IsProfileFile, yamlExts...),
		}),
		"calibrate": merged(engine, map[string]cobra.CompletionFunc{
			"model":        mdl,
			"gpu":          gpu,
			"ops":          completeFiles("json"),
			"output":       completeFiles(yamlExts...),
			"profile":      completeFiles(yamlExts...),
			"holdout":      completeFiles(benchExts...),
			"params":       completeList(namesOf(calib.ParamNames)),
			"warm-prompts": completeOne(namesOf(calib.WarmModeNames)),
		}),
		"advise": {
			"trace":          completeFiles(traceExts...),
			"format":         completeOne(namesOf(workload.FormatNames)),
			"model":          mdl,
			"gpu":            gpu,
			"engine-version": completeEngineVersion(sim.EngineVLLMV1.String()),
			"profile":        completeOne(namesOf(func() []string { return []string{sim.StepTimeJoint, sim.StepTimeRoofline} })),
			"kv-dtype":       completeOne(namesOf(model.KVDTypeNames)),
			"weight-dtype":   completeOne(namesOf(model.DTypeNames)),
			"kv":             completeList(kvCands),
			"alloc":          completeList(allocCands),
			"defrag":         completeList(namesOf(sim.DefragPolicyNames)),
			"prefix-caching": completeList(namesOf(func() []string { return advise.DefaultSpace().PrefixCaching })), // the default tries both
			"refine":         completeFiles("json"),
			"out":            completeFiles("json"),
		},
		"analyze": {
			"html":         completeFiles("html"),
			"whatif":       completeList(allocCands),
			"folded-value": completeOne(namesOf(func() []string { return analysis.ProfileValues })),
		},
		"diff": {"html": completeFiles("html")},
		"defrag": {
			"gpu":       gpu,
			"goal":      completeOne(goalCands),
			"allocator": completeOne(allocCands),
		},
		"replay": {"alloc": completeList(allocCands)},
		"rules": {
			"history": completeFiles("json", "csv"),
			"format":  completeOne(namesOf(rules.Formats)),
			"out":     completeFiles("yml", "yaml"),
		},
		"cluster simulate": merged(nodesPods, map[string]cobra.CompletionFunc{
			"policy": completeList(policyCands),
			"html":   completeFiles("html"),
		}),
		"cluster inspect": {
			"from":    completeFiles("json"),
			"context": completeContext,
		},
		"cluster judge": merged(nodesPods, map[string]cobra.CompletionFunc{
			"specs":  completeFiles(listExts...),
			"list":   completeFiles(listExts...),
			"set":    completeOne(namesOf(func() []string { return judge.SetNames })),
			"ref":    completeOne(policyCands),
			"policy": completeList(policyCands),
		}),
		"cluster gen-pods": {
			"pods":   completeFiles(listExts...),
			"specs":  completeFiles(listExts...),
			"family": completeOne(namesOf(gen.FamilyNames)),
			"output": completeFiles("csv"),
		},
		// A stock setting's options hold commas, so each is one value
		// (repeat the flag), not an item of a list.
		"cluster volcano-config": merged(nodesPods, map[string]cobra.CompletionFunc{
			"policy": completeOne(namesOf(stock.StockGrid)),
		}),
		"exporter": {
			"log-format": completeOne(namesOf(daemon.LogFormats)),
			"log-level":  completeOne(namesOf(daemon.LogLevels)),
		},
	}
}

// merged is a copy of shared with own's entries added.
func merged(shared, own map[string]cobra.CompletionFunc) map[string]cobra.CompletionFunc {
	out := maps.Clone(shared)
	maps.Copy(out, own)
	return out
}

// argCompletions are the completions of the commands that take arguments,
// by commandKey; the others take none (help completes its topics itself).
func argCompletions() map[string]cobra.CompletionFunc {
	return map[string]cobra.CompletionFunc{
		"analyze": completeFileArgs(1, snapshotExts...),
		"diff":    completeFileArgs(0, snapshotExts...),
		"defrag":  completeFileArgs(1, snapshotExts...),
		"replay":  completeFileArgs(1, "jsonl"),
		"calibrate": func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if cmd.Flags().Changed("ops") { // operator timings: no benchmark files
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeFileArgs(0, benchExts...)(cmd, args, toComplete)
		},
		"advise merge":    completeFileArgs(0, "json"),
		"experiments run": completeExperiments,
	}
}

// cand is a value a flag takes and a few words on it ("" for none), which
// zsh and fish show beside it and bash when it lists several.
type cand struct{ value, desc string }

// namesOf turns a package's list of names into candidates without words.
func namesOf(names func() []string) func(string) []cand {
	return func(string) []cand {
		var out []cand
		for _, n := range names() {
			out = append(out, cand{value: n})
		}
		return out
	}
}

// matching is prefix + each candidate whose value starts with item and is
// not among given (the items of a list before it), with its words, and
// the directive: no file names, and no space after a value that ends in
// ":" (it wants its argument) when every one left does.
//
// Where a candidate holds a comma (an item after the first of a list, a
// stock setting, caching's example) none has words: cobra's bash script
// matches described candidates by their printf %q form, in which bash 5.2
// escapes a comma ("a\,b"), against the word as typed, so bash would
// offer none of them; candidates without words it matches as typed.
func matching(prefix string, cands []cand, item string, given []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var left []cand
	open, comma := 0, false
	for _, c := range cands {
		if !strings.HasPrefix(c.value, item) || slices.Contains(given, c.value) {
			continue
		}
		if strings.HasSuffix(c.value, ":") {
			open++
		}
		c.value = prefix + c.value
		comma = comma || strings.Contains(c.value, ",")
		left = append(left, c)
	}
	var out []cobra.Completion
	for _, c := range left {
		if c.desc == "" || comma { // no tab: bash takes any tab for a description
			out = append(out, c.value)
		} else {
			out = append(out, cobra.CompletionWithDesc(c.value, c.desc))
		}
	}
	dir := cobra.ShellCompDirectiveNoFileComp
	if len(out) > 0 && open == len(out) {
		dir |= cobra.ShellCompDirectiveNoSpace
	}
	return out, dir
}

// completeOne completes a flag that takes one value of cands (given what
// is typed).
func completeOne(cands func(item string) []cand) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return matching("", cands(toComplete), toComplete, nil)
	}
}

// completeList completes a comma-separated list of cands: the item after
// the last comma, each candidate written after the items before it (which
// it leaves out), and no space after it, so that a comma and another item
// can follow.
func completeList(cands func(item string) []cand) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var given []string
		i := strings.LastIndex(toComplete, ",")
		if i >= 0 {
			given = strings.Split(toComplete[:i], ",")
		}
		out, dir := matching(toComplete[:i+1], cands(toComplete[i+1:]), toComplete[i+1:], given)
		return out, dir | cobra.ShellCompDirectiveNoSpace
	}
}

// completeFiles completes a flag that takes a file with one of exts (any
// file when none is given); the shell lists the files and directories.
func completeFiles(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return fileDirective(exts)
	}
}

func fileDirective(exts []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(exts) == 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return slices.Clone(exts), cobra.ShellCompDirectiveFilterFileExt
}

// completeFileArgs completes the arguments of a command that takes up to
// most files (0: any number) with one of exts.
func completeFileArgs(most int, exts ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if most > 0 && len(args) >= most {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fileDirective(exts)
	}
}

// completeNameOrFile completes a flag that takes a name of cands or a file
// with one of exts (--model: a preset or a config.json): the names while
// what is typed is not a path (isPath) and begins one of them, else the
// files ("./", "examples/" or a word no name begins).
func completeNameOrFile(cands func(string) []cand, isPath func(string) bool, exts ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if !isPath(toComplete) {
			if out, dir := matching("", cands(toComplete), toComplete, nil); len(out) > 0 {
				return out, dir
			}
		}
		return fileDirective(exts)
	}
}

// gpuCands are the GPU presets, with their memory as nvidia-smi reports it.
func gpuCands(string) []cand {
	var out []cand
	for _, n := range model.GPUNames() {
		c := cand{value: n}
		if g, err := model.LookupGPU(n); err == nil {
			c.desc = human.Bytes(g.Capacity)
		}
		out = append(out, c)
	}
	return out
}

// modelCands are the model presets, with their family, size and context.
func modelCands(string) []cand {
	var out []cand
	for _, n := range model.PresetNames() {
		c := cand{value: n}
		if m, err := model.Preset(n); err == nil {
			c.desc = fmt.Sprintf("%s, %sB parameters, %d-token context", m.Family,
				strconv.FormatFloat(float64(m.Params)/1e9, 'g', 3, 64), m.MaxContext)
		}
		out = append(out, c)
	}
	return out
}

// kvCands are the KV strategies; one whose name holds a placeholder for
// its argument (paged:B) is offered up to its colon, to be followed by it.
func kvCands(string) []cand {
	var out []cand
	for _, n := range strategy.Names() {
		if _, err := strategy.ParseSpec(n); err == nil {
			out = append(out, cand{value: n})
		} else if name, _, ok := strings.Cut(n, ":"); ok {
			out = append(out, cand{name + ":", n})
		}
	}
	return out
}

// allocCands are the allocators, with their summaries, and "all"
// (registry.SplitList's every allocator); once an allocator's name and a
// colon are typed, its example spec too (caching:expandable_segments:...).
func allocCands(item string) []cand {
	var out []cand
	for _, k := range registry.Kinds {
		out = append(out, cand{k.Name, k.Summary})
		if strings.HasPrefix(item, k.Name+":") && k.Example != k.Name {
			out = append(out, cand{k.Example, "example"})
		}
	}
	return append(out, cand{"all", "every allocator with default settings"})
}

// policyCands are the cluster placement policies, with their summaries,
// and their aliases (recommended).
func policyCands(string) []cand {
	var out []cand
	for _, p := range cluster.Policies {
		out = append(out, cand{p.Name, p.Summary})
	}
	for _, a := range slices.Sorted(maps.Keys(cluster.Aliases)) {
		out = append(out, cand{a, "alias of " + cluster.Aliases[a]})
	}
	return out
}

// goalCands are defrag's goals: compact, and fit: to be followed by the
// size of the request that failed.
func goalCands(string) []cand {
	return []cand{
		{defrag.GoalCompact.String(), "free as many whole segments as possible (default)"},
		{defrag.GoalFit.String() + ":", "fit:SIZE, a free run of SIZE for the request that failed (fit:2GiB)"},
	}
}

// completeEngineVersion completes --engine-version with the release
// series of the engines named (all of them for the command's default), or
// of --engine's where the command has it and it is given.
func completeEngineVersion(engines ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		named := engines
		if f := cmd.Flags().Lookup("engine"); f != nil && f.Changed {
			named = []string{f.Value.String()}
		}
		var kinds []sim.EngineKind
		for _, e := range named {
			if k, err := sim.ParseEngine(e); err == nil {
				kinds = append(kinds, k)
			}
		}
		by := map[string][]string{} // release → the engines that know it, and whose default it is
		var rels []string
		for _, k := range kinds {
			def := sim.DefaultEngineVersion(k)
			for _, r := range sim.EngineReleases(k) {
				if by[r] == nil {
					rels = append(rels, r)
				}
				var say []string
				if len(kinds) > 1 {
					say = append(say, k.String())
				}
				if r == fmt.Sprintf("%d.%d", def.Major, def.Minor) {
					say = append(say, "default "+def.String())
				}
				by[r] = append(by[r], strings.Join(say, " "))
			}
		}
		slices.SortStableFunc(rels, func(a, b string) int { return minor(a) - minor(b) })
		var cands []cand
		for _, r := range rels {
			cands = append(cands, cand{r, strings.Join(slices.DeleteFunc(by[r], func(s string) bool { return s == "" }), ", ")})
		}
		out, dir := matching("", cands, toComplete, nil)
		return out, dir | cobra.ShellCompDirectiveKeepOrder // 0.9 before 0.10
	}
}

// minor is the minor number of a "0.N" release.
func minor(release string) int {
	_, m, _ := strings.Cut(release, ".")
	n, _ := strconv.Atoi(m)
	return n
}

// completeContext completes cluster inspect's --context with the contexts
// of the kubeconfig it would read (--kubeconfig's, $KUBECONFIG's, or
// ~/.kube/config), the current one said so. A name with a control
// character is left out: it would break the lines the shell reads.
func completeContext(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	kubeconfig, _ := cmd.Flags().GetString("kubeconfig")
	names, current, err := live.Contexts(kubeconfig)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var cands []cand
	for _, n := range names {
		if untrusted.CheckName(n) != nil {
			continue
		}
		c := cand{value: n}
		if n == current {
			c.desc = "current context"
		}
		cands = append(cands, c)
	}
	return matching("", cands, toComplete, nil)
}

// completeExperiments completes experiments run's names with the embedded
// experiments and their claims, leaving out those already given.
func completeExperiments(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	exps, err := experiments.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var cands []cand
	for _, e := range exps {
		cands = append(cands, cand{e.Name, strings.Join(strings.Fields(e.Claim), " ")})
	}
	return matching("", cands, toComplete, args)
}
