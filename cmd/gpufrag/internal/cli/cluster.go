package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/internal/human"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/internal/progress"
)

// clusterFlags are the flags of `gpufrag cluster simulate`.
type clusterFlags struct {
	nodes, pods string
	policies    []string
	seeds       string
	ratio       float64
	coverage    float64
	gang        bool
	randomTies  bool
	parallel    int
	timed       bool
	json        bool
	html, png   string
}

// defaultClusterPolicies are the FGD paper's six policies and ours.
var defaultClusterPolicies = []string{"random", "dotprod", "clustering", "packing", "bestfit", "fgd", "recommended"}

func newClusterCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Cluster-level GPU fragmentation: compare placement policies on a trace",
		Long: `cluster studies GPU fragmentation across a cluster: GPUs left idle where no
waiting job can use them (one free GPU on a node when jobs want four, a sliver
of a shared GPU, a node whose CPUs are drained while its GPUs sit idle).

  gpufrag cluster simulate         replay a pod list through placement
                                   policies with the FGD paper's protocol
                                   and compare them
  gpufrag cluster volcano-config   the Volcano binpack and Kubernetes
                                   NodeResourcesFit settings that pack GPUs
                                   best on your lists, with the figures
  gpufrag cluster inspect          GPU allocation, fragmentation and stuck
                                   pods of a cluster saved with kubectl
  gpufrag cluster gen-pods         an openb-style pod list of one FGD
                                   workload family from a base list
  gpufrag cluster judge            candidate policies against FGD on
                                   generated lists of every family, out of
                                   sample, paired seeds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.AddCommand(newClusterSimulateCmd(stdout, stderr), newClusterVolcanoCmd(stdout, stderr), newClusterInspectCmd(stdout),
		newClusterGenPodsCmd(stdout), newClusterJudgeCmd(stdout, stderr))
	return cmd
}

func newClusterSimulateCmd(stdout, stderr io.Writer) *cobra.Command {
	f := clusterFlags{seeds: "42-51", ratio: protocol.DefaultRatio, coverage: cluster.DefaultCoverage, parallel: runtime.GOMAXPROCS(0)}
	cmd := &cobra.Command{
		Use:   "simulate --nodes FILE --pods FILE",
		Short: "Compare placement policies on a node list and a pod list (FGD protocol)",
		Long:  clusterSimulateLong(),
		Example: `  # The FGD paper's main experiment on the openb trace, 10 seeds:
  gpufrag cluster simulate --nodes openb_node_list_gpu_node.csv \
      --pods openb_pod_list_default.csv

  # Two policies, two seeds, as JSON:
  gpufrag cluster simulate --nodes nodes.csv --pods pods.csv \
      --policy bestfit,fgd --seeds 42-43 --json

  # Curves as an HTML report and PNG charts:
  gpufrag cluster simulate --nodes nodes.csv --pods pods.csv \
      --html cluster.html --png charts/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterSimulate(cmd, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", "", "node list `FILE`: openb CSV (sn,cpu_milli,memory_mib,gpu[,model]) or our JSON form")
	fl.StringVar(&f.pods, "pods", "", "pod list `FILE`: openb CSV (5 or 11 columns) or our JSON form")
	fl.StringArrayVar(&f.policies, "policy", nil, "placement `POLICY` to compare; repeat it or separate with commas (default "+strings.Join(defaultClusterPolicies, ",")+")")
	fl.StringVar(&f.seeds, "seeds", f.seeds, "`SEEDS` to run: N, N-M or a comma-separated list of those")
	fl.Float64Var(&f.ratio, "ratio", f.ratio, "GPU demand to submit, as a multiple of the cluster's GPU capacity")
	fl.Float64Var(&f.coverage, "coverage", f.coverage, "share of pods the target workload of the FGD measure covers (0 to 1)")
	fl.BoolVar(&f.gang, "gang", false, "schedule the pods of a job (the JSON form's \"job\") all or nothing")
	fl.BoolVar(&f.randomTies, "random-ties", false, "break equal scores at random on every pod, as upstream kube-scheduler, instead of by a node order fixed per seed, as the FGD artifact")
	fl.BoolVar(&f.timed, "timed", false, "replay pods by their creation and deletion times instead of the FGD protocol (11-column lists or JSON with times)")
	fl.IntVar(&f.parallel, "parallel", f.parallel, "runs at a time (results do not depend on it)")
	fl.BoolVar(&f.json, "json", false, "print the comparison as JSON")
	fl.StringVar(&f.html, "html", "", "write a self-contained HTML report with the curves to `FILE`")
	fl.StringVar(&f.png, "png", "", "write the curves as PNG charts into `DIR`")
	return cmd
}

func clusterSimulateLong() string {
	var sb strings.Builder
	sb.WriteString(`Simulate replays a pod list on a cluster with each placement policy, with
the protocol of the FGD paper (Weng et al., "Beware of Fragmentation",
USENIX ATC '23): for each seed the pods are shuffled, then inflated with
random copies (or trimmed) to --ratio (130%) of the cluster's GPU capacity,
and submitted one by one with no departures; a pod that fits nowhere fails.
After every pod it measures the GPU allocation ratio, the FGD fragmentation
(idle GPU capacity that the popular task types could not use), whole-free
nodes and nodes whose idle GPUs no task type can use, and reports them at
every percent of arrived GPU demand, as mean and standard deviation over
the seeds.

Inputs: the openb trace's CSV files (Alibaba cluster-trace-gpu-v2023) or
our JSON form {"nodes":[{"name","cpu_milli","memory_mib","gpus","model"}],
"pods":[{"name","cpu_milli","memory_mib","num_gpu","gpu_milli","gpu_spec",
"job"}]} (a .json file; one file may serve as both --nodes and --pods).

Policies (--policy NAME or NAME:key=value,...; "recommended" is our own):

`)
	w := 0
	for _, p := range cluster.Policies {
		w = max(w, len(p.Name))
	}
	for _, p := range cluster.Policies {
		fmt.Fprintf(&sb, "  %-*s  %s\n", w, p.Name, human.Indent(human.Wrap(p.Summary, 74-w), strings.Repeat(" ", w+4))[w+4:])
	}
	sb.WriteString(`
With --timed, pods instead arrive at their creation time and leave at their
deletion time (no inflation); the table gives the time-weighted mean and the
peak allocation ratio, the mean FGD fragmentation and the failed pods.

The table reports, at 100% arrived demand, the allocation ratio and the
unallocated GPUs (the paper's headline metric), the FGD fragmentation as a
share of all GPUs at 60/80/90% arrived, and the whole-free nodes; --json
prints the same with standard deviations, --html and --png draw the curves.`)
	return sb.String()
}

// parseSeeds reads "42-51", "7" or "1,3,10-12".
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range N-M", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range N-M with N <= M", part)
			}
		}
		if b-a >= 10000 || len(out) > 10000 {
			return nil, fmt.Errorf("%q: too many seeds (at most 10000)", part)
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}

// clusterPolicies expands --policy values; none means the defaults.
func clusterPolicies(values []string) []string {
	if len(values) == 0 {
		return defaultClusterPolicies
	}
	var out []string
	for _, v := range values {
		// Options of one policy are comma-separated too (spread:cpu=1,gpu=1):
		// a part with "=" but no ":" continues the previous policy.
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if n := len(out); n > 0 && strings.Contains(p, "=") && !strings.Contains(p, ":") && strings.Contains(out[n-1], ":") {
				out[n-1] += "," + p
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// runClusterGrid runs every cell of g on parallel workers, with a
// progress bar named label on stderr.
func runClusterGrid(cmd *cobra.Command, g *protocol.Grid, parallel int, stderr io.Writer, label string) error {
	bar := progress.New(stderr, int64(g.Len()), label)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	err := g.Run(ctx, func(ctx context.Context, n int, job func(context.Context, int) error) error {
		return par.Do(ctx, n, par.Options{Workers: parallel, OnDone: bar.Increment}, job)
	})
	bar.Done()
	return err
}

func runClusterSimulate(cmd *cobra.Command, f clusterFlags, stdout, stderr io.Writer) error {
	if f.nodes == "" || f.pods == "" {
		return usageErrorf(cmd, "--nodes and --pods are required")
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return usageErrorf(cmd, "--seeds: %v", err)
	}
	if !(f.ratio > 0 && f.ratio <= 10) {
		return usageErrorf(cmd, "--ratio %v: want a multiple of capacity above 0, at most 10", f.ratio)
	}
	if !(f.coverage > 0 && f.coverage <= 1) {
		return usageErrorf(cmd, "--coverage %v: want a share above 0, at most 1", f.coverage)
	}
	if f.timed && (f.html != "" || f.png != "") {
		return usageErrorf(cmd, "--timed has no --html or --png output yet")
	}
	if f.parallel < 1 {
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	}
	// --html onto --nodes or --pods would replace the user's list with the
	// report (issue 13, case 7).
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}}, []fileFlag{{"--nodes", f.nodes}, {"--pods", f.pods}}); err != nil {
		return err
	}
	specs := clusterPolicies(f.policies)
	for _, s := range specs {
		// A stand-in target lets fgd and its kin be checked before reading files.
		stub := cluster.NewTarget([]cluster.Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: 1000}}, 1)
		if _, err := cluster.NewPolicy(s, stub); errors.Is(err, cluster.ErrUnknownPolicy) {
			return usageErrorf(cmd, "--policy: %v%s", err, didYouMean(specKind(s), cluster.PolicyNames()))
		}
	}
	if err := checkInputs(fileFlag{"--nodes", f.nodes}, fileFlag{"--pods", f.pods}); err != nil {
		return err
	}
	nodes, err := cluster.ReadNodesFile(f.nodes)
	if err != nil {
		return inFlagFile("--nodes", f.nodes, err)
	}
	pods, err := cluster.ReadPodsFile(f.pods)
	if err != nil {
		return inFlagFile("--pods", f.pods, err)
	}
	// Every (policy, seed) is independent and deterministic: the grid runs
	// them on f.parallel workers and the output does not depend on it.
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: specs, Seeds: seeds, Timed: f.timed,
		Options: protocol.Options{Ratio: f.ratio, Coverage: f.coverage, Gang: f.gang, RandomTies: f.randomTies}})
	if err := runClusterGrid(cmd, g, f.parallel, stderr, "cluster"); err != nil {
		return err
	}
	if f.timed {
		return writeClusterTimed(stdout, f, nodes, seeds, protocol.NewTimedComparison(nodes, g.TimedSummaries()))
	}
	sums := g.Summaries()
	out := protocol.NewComparison(nodes, sums)
	if f.html != "" {
		if err := writeClusterHTML(f.html, f, nodes, pods, seeds, sums); err != nil {
			return err
		}
	}
	if f.png != "" {
		if err := writeClusterPNGs(f.png, sums); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(stdout, out, true)
	}
	var sb strings.Builder
	writeClusterReport(&sb, f, nodes, pods, seeds, sums, out)
	_, err = io.WriteString(stdout, sb.String())
	return err
}
