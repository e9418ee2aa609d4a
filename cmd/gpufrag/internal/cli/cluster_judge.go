package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/judge"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/internal/progress"
)

// genPodsFlags are the flags of `gpufrag cluster gen-pods`.
type genPodsFlags struct {
	pods, specs, out string
	family           string
	share            float64
	seed             uint64
}

func newClusterGenPodsCmd(stdout io.Writer) *cobra.Command {
	f := genPodsFlags{seed: 1}
	cmd := &cobra.Command{
		Use:   "gen-pods --pods FILE --family FAMILY --share X [--specs FILE] [-o FILE]",
		Short: "Generate an openb-style pod list of one workload family from a base list",
		Long: `gen-pods makes a pod list of one of the FGD paper's workload families from a
base list (openb's default), the way the paper's variants were made: pods
of one class are resampled from the base, or given GPU-model restrictions,
and the rest stays as in the base.

  cpu       --share is CPU-only pods / all pods (below 1); GPU pods as in base
  gpushare  --share is the GPU request of GPU-sharing pods / all GPU request;
            the total GPU request and the CPU-only pods as in base
  multigpu  --share is the GPU request of multi-GPU pods / all GPU request
  gpuspec   --share is GPU pods restricted to some GPU models / GPU pods;
            restrictions drawn from the restricted pods of --specs with the
            same GPU count (openb's gpuspec33, the production share)

Pods drawn more than once are named NAME-gen-K. The output is a 6-column
openb CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec), the same
bytes for the same inputs and --seed.`,
		Example: `  gpufrag cluster gen-pods --pods openb_pod_list_default.csv \
      --family gpuspec --share 0.2 --specs openb_pod_list_gpuspec33.csv \
      --seed 7 -o gpuspec20.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterGenPods(cmd, f, stdout) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pods, "pods", "", "base pod list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.family, "family", "", "`FAMILY`: cpu, gpushare, gpuspec or multigpu")
	fl.Float64Var(&f.share, "share", -1, "the family's share `X`, 0 to 1 (see above)")
	fl.Uint64Var(&f.seed, "seed", f.seed, "random `SEED` of the draws")
	fl.StringVar(&f.specs, "specs", "", "pod list `FILE` whose restricted GPU pods give the gpu_spec values (family gpuspec)")
	fl.StringVarP(&f.out, "output", "o", "", "write the list to `FILE` instead of standard output")
	return cmd
}

func runClusterGenPods(cmd *cobra.Command, f genPodsFlags, stdout io.Writer) error {
	if f.pods == "" || f.family == "" || f.share < 0 {
		return usageErrorf(cmd, "--pods, --family and --share are required")
	}
	families := []string{string(gen.FamilyCPU), string(gen.FamilyGPUShare), string(gen.FamilyGPUSpec), string(gen.FamilyMultiGPU)}
	if !slices.Contains(families, f.family) {
		return usageErrorf(cmd, "--family %q: want %s%s", f.family, strings.Join(families, ", "), didYouMean(f.family, families))
	}
	if f.share > 1 || (f.family == string(gen.FamilyCPU) && f.share >= 1) {
		hi := "1"
		if f.family == string(gen.FamilyCPU) {
			hi = "below 1 (a list of CPU-only pods has no GPU demand)"
		}
		return usageErrorf(cmd, "--share %v: want a share from 0 to %s", f.share, hi)
	}
	if f.family == string(gen.FamilyGPUSpec) && f.specs == "" {
		return usageErrorf(cmd, "--family gpuspec needs --specs FILE, a pod list with gpu_spec values to draw (openb_pod_list_gpuspec33.csv)")
	}
	if err := checkOutputs(cmd, []fileFlag{{"-o", f.out}}, []fileFlag{{"--pods", f.pods}, {"--specs", f.specs}}); err != nil {
		return err
	}
	if err := checkInputs(fileFlag{"--pods", f.pods}, fileFlag{"--specs", f.specs}); err != nil {
		return err
	}
	base, err := cluster.ReadPodsFile(f.pods)
	if err != nil {
		return err
	}
	c := gen.GenConfig{Family: gen.Family(f.family), Share: f.share, Seed: f.seed}
	if f.specs != "" {
		if c.Specs, err = cluster.ReadPodsFile(f.specs); err != nil {
			return err
		}
	}
	pods, err := gen.GeneratePods(base, c)
	if err != nil {
		return err
	}
	if f.out == "" {
		return cluster.WritePodsCSV(stdout, pods)
	}
	var sb strings.Builder
	if err := cluster.WritePodsCSV(&sb, pods); err != nil {
		return err
	}
	return os.WriteFile(f.out, []byte(sb.String()), 0o644)
}

// judgeFlags are the flags of `gpufrag cluster judge`.
type judgeFlags struct {
	nodes, pods, specs string
	set                string
	lists              []string
	ref                string
	policies           []string
	seeds              string
	genOffset          uint64
	parallel           int
	json               bool
}

func newClusterJudgeCmd(stdout, stderr io.Writer) *cobra.Command {
	f := judgeFlags{set: "judge", ref: "fgd", parallel: runtime.GOMAXPROCS(0)}
	cmd := &cobra.Command{
		Use:   "judge --nodes FILE --pods FILE --specs FILE [--set tune|judge|none] [--list FILE]...",
		Short: "Judge policies against FGD out of sample: generated lists of every family, paired seeds",
		Long: `judge compares candidate policies with a reference (FGD) on many pod lists
with the FGD protocol (cluster simulate), paired by seed, and says which
candidate may be recommended: one that is no worse than the reference
beyond noise on any workload family and better on the mean over families.

Lists: --set tune generates the lists constants are tuned on (two shares of
each family from --pods, restrictions from --specs; judge.TuneLists,
seeds 1042-1051), --set judge the disjoint lists they are judged on (three
other shares of each family; judge.JudgeLists, seeds 42-51), --set none
none; each --list FILE adds a list, its family read from the file name
(openb_pod_list_cpu050.csv: cpu; default when none matches).

Noise: per list, the mean over seeds of (candidate - reference) unallocated
GPU share at 100% arrived demand, with a 95% Student-t interval from the
paired differences; per family the same over every (list, seed) pair.
worse / better: the interval lies above / below zero.`,
		Example: `  # Judge the policies on the judging set and the three shared lists:
  D=../shared/data/openb
  gpufrag cluster judge --nodes $D/openb_node_list_gpu_node.csv \
      --pods $D/openb_pod_list_default.csv --specs $D/openb_pod_list_gpuspec33.csv \
      --list $D/openb_pod_list_default.csv --list $D/openb_pod_list_gpuspec33.csv \
      --list $D/openb_pod_list_multigpu50.csv --policy fgd-reserve,fgd-reserve:tie=order`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterJudge(cmd, f, stdout, stderr) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", "", "node list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.pods, "pods", "", "base pod list `FILE` the lists are generated from (openb's default)")
	fl.StringVar(&f.specs, "specs", "", "pod list `FILE` whose gpu_spec values the gpuspec lists draw (openb's gpuspec33)")
	fl.StringVar(&f.set, "set", f.set, "generated lists: `SET` tune, judge or none")
	fl.StringArrayVar(&f.lists, "list", nil, "add the pod list `FILE`; repeat it")
	fl.StringVar(&f.ref, "ref", f.ref, "reference `POLICY`")
	fl.StringArrayVar(&f.policies, "policy", nil, "candidate `POLICY`; repeat it or separate with commas (default recommended)")
	fl.StringVar(&f.seeds, "seeds", "", "`SEEDS` (default: the set's, 1042-1051 for tune, 42-51 otherwise)")
	fl.Uint64Var(&f.genOffset, "gen-seed-offset", 0, "add `N` to the generator seeds of the set's lists: fresh lists of the same shares, for a new round of judging")
	fl.IntVar(&f.parallel, "parallel", f.parallel, "runs at a time (results do not depend on it)")
	fl.BoolVar(&f.json, "json", false, "print the judgement as JSON")
	return cmd
}

func runClusterJudge(cmd *cobra.Command, f judgeFlags, stdout, stderr io.Writer) error {
	if f.nodes == "" {
		return usageErrorf(cmd, "--nodes is required")
	}
	var cfgs []gen.GenConfig
	seeds := judge.JudgeSeeds
	switch f.set {
	case "tune":
		cfgs, seeds = judge.TuneLists, judge.TuneSeeds
	case "judge":
		cfgs = judge.JudgeLists
	case "none":
	default:
		return usageErrorf(cmd, "--set %q: want tune, judge or none%s", f.set, didYouMean(f.set, []string{"tune", "judge", "none"}))
	}
	if f.genOffset > 0 {
		cfgs = slices.Clone(cfgs)
		for i := range cfgs {
			cfgs[i].Seed += f.genOffset
		}
	}
	if len(cfgs) > 0 && (f.pods == "" || f.specs == "") {
		return usageErrorf(cmd, "--set %s generates lists: it needs --pods (the base list) and --specs (the gpu_spec source)", f.set)
	}
	if len(cfgs) == 0 && len(f.lists) == 0 {
		return usageErrorf(cmd, "no lists: give --set tune or judge, or --list FILE")
	}
	if f.seeds != "" {
		var err error
		if seeds, err = parseSeeds(f.seeds); err != nil {
			return usageErrorf(cmd, "--seeds: %v", err)
		}
	}
	if f.parallel < 1 {
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	}
	cands := clusterPolicies(f.policies)
	if len(f.policies) == 0 {
		cands = []string{"recommended"}
	}
	stub := cluster.NewTarget([]cluster.Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: 1000}}, 1)
	for _, s := range append([]string{f.ref}, cands...) {
		if _, err := cluster.NewPolicy(s, stub); err != nil {
			return usageErrorf(cmd, "--policy: %v%s", err, didYouMean(specKind(s), cluster.PolicyNames()))
		}
	}
	if err := checkInputs(append([]fileFlag{{"--nodes", f.nodes}, {"--pods", f.pods}, {"--specs", f.specs}}, listInputs(f.lists)...)...); err != nil {
		return err
	}
	nodes, err := cluster.ReadNodesFile(f.nodes)
	if err != nil {
		return err
	}
	var lists []gen.List
	if len(cfgs) > 0 {
		base, err := cluster.ReadPodsFile(f.pods)
		if err != nil {
			return err
		}
		specs, err := cluster.ReadPodsFile(f.specs)
		if err != nil {
			return err
		}
		if lists, err = gen.GenerateLists(base, specs, cfgs); err != nil {
			return err
		}
	}
	for _, path := range f.lists {
		pods, err := cluster.ReadPodsFile(path)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		lists = append(lists, gen.List{Name: strings.TrimPrefix(name, "openb_pod_list_"), Family: gen.FamilyOf(name), Pods: pods})
	}
	bar := progress.New(stderr, int64(len(lists)*(1+len(cands))*len(seeds)), "judge")
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	j, err := judge.Judge(ctx, judge.JudgeConfig{Nodes: nodes, Lists: lists, Ref: f.ref, Candidates: cands, Seeds: seeds},
		func(ctx context.Context, n int, job func(context.Context, int) error) error {
			return par.Do(ctx, n, par.Options{Workers: f.parallel, OnDone: bar.Increment}, job)
		})
	bar.Done()
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, j, true)
	}
	var sb strings.Builder
	writeJudgement(&sb, j)
	_, err = io.WriteString(stdout, sb.String())
	return err
}

// writeJudgement prints j: per list and per family, each candidate's
// difference from the reference in percentage points of unallocated GPUs
// with its 95% interval, then the rule's verdict.
func writeJudgement(w io.Writer, j *judge.Judgement) {
	pp := func(d judge.Paired) string {
		return fmt.Sprintf("%+.2f ±%.2f %-6s", 100*d.Mean, 100*(d.High-d.Mean), d.Verdict())
	}
	fmt.Fprintf(w, "Unallocated GPU share at 100%% arrived demand, %d seeds (%d-%d), paired against %s:\n",
		len(j.Seeds), j.Seeds[0], j.Seeds[len(j.Seeds)-1], j.Ref)
	fmt.Fprintf(w, "candidate − %s in percentage points, ± the 95%% interval's half-width.\n\n", j.Ref)
	for c, name := range j.Candidates {
		fmt.Fprintf(w, "  [%d] %s\n", c+1, name)
	}
	fmt.Fprintf(w, "\n%-22s %-9s %8s", "list", "family", j.Ref)
	for c := range j.Candidates {
		fmt.Fprintf(w, "  %-21s", fmt.Sprintf("[%d]", c+1))
	}
	fmt.Fprintln(w)
	for _, l := range j.Lists {
		fmt.Fprintf(w, "%-22s %-9s %7.2f%%", l.List, l.Family, 100*l.Ref.Mean)
		for _, d := range l.Diffs {
			fmt.Fprintf(w, "  %s", pp(d))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n%-22s %-9s %8s", "family (pooled)", "lists", "")
	for c := range j.Candidates {
		fmt.Fprintf(w, "  %-21s", fmt.Sprintf("[%d] worse/eq/better", c+1))
	}
	fmt.Fprintln(w)
	for _, fr := range j.Families {
		n := fr.Worse[0] + fr.Equal[0] + fr.Better[0]
		fmt.Fprintf(w, "%-22s %-9d %8s", fr.Family, n, "")
		for c, d := range fr.Diffs {
			fmt.Fprintf(w, "  %s %d/%d/%d", pp(d), fr.Worse[c], fr.Equal[c], fr.Better[c])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for c, name := range j.Candidates {
		verdict := "fails the rule"
		if j.Passes[c] {
			verdict = "passes the rule"
		}
		fmt.Fprintf(w, "[%d] %s: mean over families %+.3f points; %s\n", c+1, name, 100*j.Mean[c], verdict)
	}
	if b := j.Best(); b != "" {
		fmt.Fprintf(w, "\nbest passing candidate: %s\n", b)
	} else {
		fmt.Fprintf(w, "\nno candidate passes (no family worse than %s beyond noise, mean over families below it): recommend %s\n", j.Ref, j.Ref)
	}
}

// listInputs names each --list file for checkInputs.
func listInputs(lists []string) []fileFlag {
	out := make([]fileFlag, len(lists))
	for i, l := range lists {
		out[i] = fileFlag{"--list", l}
	}
	return out
}
