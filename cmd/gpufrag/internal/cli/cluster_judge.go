package cli

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/outfile"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/judge"
	"github.com/gpufrag/gpufrag/cluster/lists"
	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// genPodsFlags are the flags of `gpufrag cluster gen-pods`.
type genPodsFlags struct {
	pods, specs, out, family string
	share                    float64
	seed                     uint64
}

func newClusterGenPodsCmd(stdout io.Writer) *cobra.Command {
	f := genPodsFlags{seed: 1}
	cmd := &cobra.Command{
		Use:   "gen-pods --pods FILE --family FAMILY --share X [--specs FILE] [-o FILE]",
		Short: "Generate an openb-style pod list of one workload family from a base list",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runClusterGenPods(cmd, f, stdout) },
	}
	withHelp(cmd, "cluster-gen-pods")
	fl := cmd.Flags()
	fl.StringVar(&f.pods, "pods", "", "base pod list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.family, "family", "", "`FAMILY`: cpu, gpushare, gpuspec or multigpu")
	fl.Float64Var(&f.share, "share", 0, "the family's share `X`, 0 to 1 (see above); required")
	fl.Uint64Var(&f.seed, "seed", f.seed, "random `SEED` of the draws")
	fl.StringVar(&f.specs, "specs", "", "pod list `FILE` whose restricted GPU pods give the gpu_spec values (family gpuspec)")
	fl.StringVarP(&f.out, "output", "o", "", "write the list to `FILE` instead of standard output")
	return cmd
}

func runClusterGenPods(cmd *cobra.Command, f genPodsFlags, stdout io.Writer) error {
	families := gen.FamilyNames()
	shareErr := gen.Family(f.family).CheckShare(f.share)
	if err := checkClusterFlags(cmd, clusterCheck{f.pods == "" || f.family == "" || !cmd.Flags().Changed("share"), "--pods, --family and --share are required"},
		clusterCheck{!slices.Contains(families, f.family), fmt.Sprintf("--family %q: want %s%s", f.family, strings.Join(families, ", "), human.DidYouMean(f.family, families))},
		clusterCheck{shareErr != nil, fmt.Sprintf("--share %v: %v", f.share, shareErr)},
		clusterCheck{f.family == string(gen.FamilyGPUSpec) && f.specs == "", "--family gpuspec needs --specs FILE, a pod list with gpu_spec values to draw (openb_pod_list_gpuspec33.csv)"},
		clusterCheck{f.family != string(gen.FamilyGPUSpec) && f.specs != "", fmt.Sprintf("--specs has no effect with --family %s, which draws no gpu_spec values (only --family gpuspec does)", f.family)}); err != nil {
		return err
	}
	if err := checkOutputs(cmd, []fileFlag{{"-o", f.out}}, []fileFlag{{"--pods", f.pods}, {"--specs", f.specs}}); err != nil {
		return err
	}
	if err := checkInputs(fileFlag{"--pods", f.pods}, fileFlag{"--specs", f.specs}); err != nil {
		return err
	}
	c := gen.GenConfig{Family: gen.Family(f.family), Share: f.share, Seed: f.seed}
	base, err := lists.ReadPodsFile(f.pods)
	if err == nil && f.specs != "" {
		c.Specs, err = lists.ReadPodsFile(f.specs)
	}
	if err != nil {
		return err
	}
	pods, err := gen.GeneratePods(base, c)
	if err != nil {
		return err
	}
	var sb strings.Builder
	if err := lists.WritePodsCSV(&sb, pods); err != nil {
		return err
	}
	if f.out == "" {
		_, err = io.WriteString(stdout, sb.String())
		return err
	}
	return outfile.WriteFile(f.out, []byte(sb.String()), 0o644)
}

// judgeFlags are the flags of `gpufrag cluster judge`.
type judgeFlags struct {
	nodes, pods, specs, set, ref, seeds string
	lists, policies                     []string
	genOffset                           uint64
	parallel                            int
	json                                bool
}

func newClusterJudgeCmd(stdout, stderr io.Writer) *cobra.Command {
	f := judgeFlags{set: "judge", ref: "fgd", parallel: runtime.GOMAXPROCS(0)}
	cmd := &cobra.Command{
		Use:   "judge --nodes FILE [--pods FILE --specs FILE] [--set tune|judge|none] [--list FILE]...",
		Short: "Judge policies against FGD out of sample: generated lists of every family, paired seeds",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runClusterJudge(cmd, f, stdout, stderr) },
	}
	withHelp(cmd, "cluster-judge")
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
	cfgs, seeds, ok := judge.Set(f.set, f.genOffset)
	var err error
	if f.seeds != "" {
		seeds, err = protocol.ParseSeeds(f.seeds)
	}
	if err := checkClusterFlags(cmd, clusterCheck{f.nodes == "", "--nodes is required"},
		clusterCheck{!ok, fmt.Sprintf("--set %q: want tune, judge or none%s", f.set, human.DidYouMean(f.set, judge.SetNames))},
		clusterCheck{len(cfgs) > 0 && (f.pods == "" || f.specs == ""), fmt.Sprintf("--set %s generates lists: it needs --pods (the base list) and --specs (the gpu_spec source)", f.set)},
		clusterCheck{ok && len(cfgs) == 0 && (f.pods != "" || f.specs != ""), fmt.Sprintf("--pods and --specs have no effect with --set %s, which generates no lists (they are what --set tune and judge generate from); give the lists with --list", f.set)},
		clusterCheck{ok && len(cfgs) == 0 && len(f.lists) == 0, "no lists: give --set tune or judge, or --list FILE"},
		clusterCheck{err != nil, fmt.Sprintf("--seeds: %v", err)},
		clusterCheck{f.parallel < 1, fmt.Sprintf("--parallel %d: want at least 1", f.parallel)}); err != nil {
		return err
	}
	cands, err := clusterPolicies(cmd, f.policies, []string{"recommended"})
	if err != nil {
		return err
	}
	if err := cluster.CheckPolicy(f.ref); err != nil {
		return usageErrorf(cmd, "--ref: %v%s", err, human.DidYouMean(human.SpecKind(f.ref), cluster.PolicyNames()))
	}
	for _, s := range cands {
		if err := cluster.CheckPolicy(s); err != nil {
			return usageErrorf(cmd, "--policy: %v%s", err, human.DidYouMean(human.SpecKind(s), cluster.PolicyNames()))
		}
	}
	inputs := []fileFlag{{"--nodes", f.nodes}, {"--pods", f.pods}, {"--specs", f.specs}}
	for _, l := range f.lists {
		inputs = append(inputs, fileFlag{"--list", l})
	}
	if err := checkInputs(inputs...); err != nil {
		return err
	}
	nodes, err := lists.ReadNodesFile(f.nodes)
	if err != nil {
		return err
	}
	if err := checkNodesHoldGPUs(f.nodes, nodes, true); err != nil {
		return err
	}
	judged, err := gen.ReadLists(cfgs, f.pods, f.specs, f.lists)
	if err != nil {
		return err
	}
	run, done := clusterRunner(stderr, len(judged)*(1+len(cands))*len(seeds), "judge", f.parallel)
	j, err := judge.Judge(cmd.Context(), judge.JudgeConfig{Nodes: nodes, Lists: judged, Ref: f.ref, Candidates: cands, Seeds: seeds}, run)
	done()
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, j, true)
	}
	return judge.WriteText(stdout, j)
}
