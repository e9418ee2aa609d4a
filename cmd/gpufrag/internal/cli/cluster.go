package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/lists"
	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/cluster/protocol/pages"
	"github.com/gpufrag/gpufrag/cluster/stock"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// clusterFlags are the flags of `gpufrag cluster simulate`.
type clusterFlags struct {
	nodes, pods, seeds, html, png string
	policies                      []string
	ratio, coverage               float64
	gang, randomTies, timed, json bool
	parallel                      int
}

// defaultClusterPolicies are the FGD paper's six policies and ours.
var defaultClusterPolicies = []string{"random", "dotprod", "clustering", "packing", "bestfit", "fgd", "recommended"}

func newClusterCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Cluster-level GPU fragmentation: compare placement policies on a trace",
		Args: subcommandArgs, RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	withHelp(cmd, "cluster")
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
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runClusterSimulate(cmd, f, stdout, stderr) },
	}
	withHelp(cmd, "cluster-simulate")
	cmd.Long = strings.Replace(cmd.Long, "{{policies}}", cluster.PoliciesText(), 1)
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

// clusterPolicies expands --policy values; none means defaults. A --policy
// given that names no policy (--policy "," or an empty one) is a usage error:
// it ran no policy and printed an empty report with status 0; so is a
// policy named twice.
func clusterPolicies(cmd *cobra.Command, values, defaults []string) ([]string, error) {
	if len(values) == 0 {
		return defaults, nil
	}
	specs := cluster.SplitPolicies(values)
	if len(specs) == 0 {
		return nil, usageErrorf(cmd, "--policy %q names no policy: give one or more NAME[:key=value,...], comma-separated", strings.Join(values, ","))
	}
	// The same policy twice would run twice and print two identical rows
	// under one name (two "policy" entries in --json, two lines of a chart).
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		k := strings.ToLower(strings.TrimSpace(s))
		if seen[k] {
			return nil, usageErrorf(cmd, "--policy %s given twice: name each policy once", s)
		}
		seen[k] = true
	}
	return specs, nil
}

// clusterRunner runs a grid's n cells on parallel workers, with a
// progress bar named label on stderr; done ends the bar.
func clusterRunner(stderr io.Writer, n int, label string, parallel int) (run protocol.Runner, done func()) {
	bar := progress.New(stderr, int64(n), label)
	return func(ctx context.Context, n int, job func(context.Context, int) error) error {
		return par.Do(ctx, n, par.Options{Workers: parallel, OnDone: bar.Increment}, job)
	}, bar.Done
}

// runClusterGrid runs every cell of g (see clusterRunner).
func runClusterGrid(cmd *cobra.Command, g *protocol.Grid, parallel int, stderr io.Writer, label string) error {
	run, done := clusterRunner(stderr, g.Len(), label, parallel)
	defer done()
	return g.Run(cmd.Context(), run)
}

func runClusterSimulate(cmd *cobra.Command, f clusterFlags, stdout, stderr io.Writer) error {
	if f.nodes == "" || f.pods == "" {
		return usageErrorf(cmd, "--nodes and --pods are required")
	}
	seeds, err := protocol.ParseSeeds(f.seeds)
	if err := checkClusterFlags(cmd, clusterCheck{err != nil, fmt.Sprintf("--seeds: %v", err)},
		clusterCheck{!(f.ratio > 0 && f.ratio <= 10), fmt.Sprintf("--ratio %v: want a multiple of capacity above 0, at most 10", f.ratio)},
		clusterCheck{!(f.coverage > 0 && f.coverage <= 1), fmt.Sprintf("--coverage %v: want a share above 0, at most 1", f.coverage)},
		clusterCheck{f.timed && (f.html != "" || f.png != ""), "--timed has no --html or --png output yet"},
		clusterCheck{f.parallel < 1, fmt.Sprintf("--parallel %d: want at least 1", f.parallel)}); err != nil {
		return err
	}
	// --html onto --nodes or --pods would replace the user's list with the
	// report (issue 13, case 7).
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}}, []fileFlag{{"--nodes", f.nodes}, {"--pods", f.pods}}); err != nil {
		return err
	}
	if err := checkOutputDir(cmd, "--png", f.png); err != nil {
		return err
	}
	specs, err := clusterPolicies(cmd, f.policies, defaultClusterPolicies)
	if err != nil {
		return err
	}
	for _, s := range specs {
		if err := cluster.CheckPolicy(s); errors.Is(err, cluster.ErrUnknownPolicy) {
			return usageErrorf(cmd, "--policy: %v%s", err, human.DidYouMean(human.SpecKind(s), cluster.PolicyNames()))
		}
	}
	nodes, pods, err := readClusterLists(f.nodes, f.pods, true)
	if err != nil {
		return err
	}
	warnOversized(stderr, f.pods, nodes, pods)
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: specs, Seeds: seeds, Timed: f.timed,
		Options: protocol.Options{Ratio: f.ratio, Coverage: f.coverage, Gang: f.gang, RandomTies: f.randomTies}})
	if err := runClusterGrid(cmd, g, f.parallel, stderr, "cluster"); err != nil {
		return err
	}
	setup := protocol.Setup{NodesFile: f.nodes, PodsFile: f.pods, Seeds: seeds, SeedsText: f.seeds, Ratio: f.ratio, Nodes: len(nodes), Pods: len(pods)}
	if f.timed {
		out := protocol.NewTimedComparison(nodes, g.TimedSummaries())
		if f.json {
			return writeJSON(stdout, out, true)
		}
		return protocol.WriteTimedText(stdout, setup, out)
	}
	sums := g.Summaries()
	out := protocol.NewComparison(nodes, sums)
	if f.html != "" {
		if err := writeOutput(f.html, pages.Page(setup, sums, out).WriteHTML); err != nil {
			return err
		}
	}
	if f.png != "" {
		if err := os.MkdirAll(f.png, 0o755); err != nil {
			return fmt.Errorf("--png %s: %w", untrusted.Printable(f.png), err)
		}
		for i, c := range pages.Charts(sums) {
			if err := writeOutput(filepath.Join(f.png, "cluster-"+pages.ChartFiles[i]+".png"), func(w io.Writer) error { return c.PNGScaled(w, 2) }); err != nil {
				return err
			}
		}
	}
	if f.json {
		return writeJSON(stdout, out, true)
	}
	return protocol.WriteTextWidth(stdout, setup, sums, out, tableWidth(stdout))
}

// checkOutputDir checks, before the work, that dir (a flag's directory to
// write files into, made with its parents where missing) is a directory or
// can be made one: the path, or the nearest of its parents that exists, is
// a directory. Before, --png onto a file failed after the whole run with
// "mkdir FILE: not a directory", the flag unnamed.
func checkOutputDir(cmd *cobra.Command, flag, dir string) error {
	if dir == "" {
		return nil
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil && p == filepath.Clean(dir):
			return usageErrorf(cmd, "%s %s: not a directory; give a directory to write into (made if missing)", flag, untrusted.Printable(dir))
		case err == nil:
			return usageErrorf(cmd, "%s %s: %s is not a directory, so it cannot be made", flag, untrusted.Printable(dir), untrusted.Printable(p))
		}
		// Missing, under a file (ENOTDIR) or not readable: its parent
		// says; what is left MkdirAll reports, under the flag's name.
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// maxOversizedWarnings is how many pods warnOversized names; it counts
// the rest.
const maxOversizedWarnings = 5

// warnOversized warns about the pods of podsFile that no node can hold
// even when empty: they fail in every run and count as failed pods.
func warnOversized(stderr io.Writer, podsFile string, nodes []cluster.Node, pods []cluster.Pod) {
	over := cluster.FindOversized(nodes, pods)
	for k, o := range over {
		if k == maxOversizedWarnings {
			fmt.Fprintf(stderr, "gpufrag: warning: --pods %s: and %s more pod%s that no node can hold\n", untrusted.Printable(podsFile), human.Thousands(len(over)-k), human.PluralS(len(over)-k))
			break
		}
		p := &pods[o.Index]
		at := fmt.Sprintf("pods[%d]", o.Index)
		if p.Line > 0 {
			at = fmt.Sprintf("line %d", p.Line)
		}
		fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(fmt.Sprintf(
			"--pods %s: %s: pod %s fits no node even when empty (it %s), so no run can place it (nor the copies inflation makes of it), and each try counts in the failed pods; remove it or add a node that can hold it",
			podsFile, at, untrusted.Quote(p.Name), o.Why)))
	}
}

// clusterCheck is one check of a command's flags: when bad, msg is the
// usage error.
type clusterCheck struct {
	bad bool
	msg string
}

// checkClusterFlags returns the usage error of the first bad check, nil when none.
func checkClusterFlags(cmd *cobra.Command, checks ...clusterCheck) error {
	for _, c := range checks {
		if c.bad {
			return usageErrorf(cmd, "%s", c.msg)
		}
	}
	return nil
}

// readClusterLists checks and reads the node and pod lists; flagged
// names the flag in a read error.
func readClusterLists(nodesFile, podsFile string, flagged bool) ([]cluster.Node, []cluster.Pod, error) {
	if err := checkInputs(fileFlag{"--nodes", nodesFile}, fileFlag{"--pods", podsFile}); err != nil {
		return nil, nil, err
	}
	nodes, err := lists.ReadNodesFile(nodesFile)
	if err != nil && flagged {
		err = inFlagFile("--nodes", nodesFile, err)
	}
	if err != nil {
		return nil, nil, err
	}
	pods, err := lists.ReadPodsFile(podsFile)
	if err != nil && flagged {
		err = inFlagFile("--pods", podsFile, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkNodesHoldGPUs(nodesFile, nodes, flagged); err != nil {
		return nil, nil, err
	}
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("%s: %w: the list holds no pod; give a list with at least one", listLabel("--pods", podsFile, flagged), cluster.ErrEmpty)
	}
	return nodes, pods, nil
}

// checkNodesHoldGPUs refuses a node list without a GPU (a header and no
// rows, an empty JSON list, or only CPU nodes), naming the file, before
// anything is simulated: otherwise every pod that asks a GPU drew a
// warning that it "fits no node" (with "no node has that model" for pods
// that name none) and the run then failed without naming the list.
func checkNodesHoldGPUs(file string, nodes []cluster.Node, flagged bool) error {
	switch {
	case len(nodes) == 0:
		return fmt.Errorf("%s: %w: the list holds no node; give a list with at least one node with GPUs", listLabel("--nodes", file, flagged), cluster.ErrEmpty)
	case cluster.GPUCapacity(nodes) == 0:
		which := "its one node has"
		if len(nodes) > 1 {
			which = "its " + human.Thousands(len(nodes)) + " nodes have"
		}
		return fmt.Errorf("%s: %w: %s no GPU; give a list with at least one node with GPUs", listLabel("--nodes", file, flagged), cluster.ErrEmpty, which)
	}
	return nil
}

// listLabel names a list file in an error: with its flag where the
// command's errors name flags (flagged, as readClusterLists's).
func listLabel(flag, file string, flagged bool) string {
	if flagged {
		return flag + " " + untrusted.Printable(file)
	}
	return untrusted.Printable(file)
}

// volcanoFlags are the flags of `gpufrag cluster volcano-config`.
type volcanoFlags struct {
	nodes, pods string
	seeds       string
	policies    []string
	parallel    int
}

func newClusterVolcanoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := volcanoFlags{seeds: "42-44", parallel: 4}
	cmd := &cobra.Command{
		Use:   "volcano-config --nodes FILE --pods FILE",
		Short: "Print Volcano binpack and Kubernetes NodeResourcesFit settings that pack GPUs best, with the figures",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runClusterVolcano(cmd, f, stdout, stderr) },
	}
	withHelp(cmd, "cluster-volcano-config")
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", "", "node list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.pods, "pods", "", "pod list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.seeds, "seeds", f.seeds, "`SEEDS` to run: N, N-M or a comma-separated list of those")
	fl.StringArrayVar(&f.policies, "policy", nil, "settings to print instead of searching: volcano-binpack:..., mostallocated:... or rtcr:...")
	fl.IntVar(&f.parallel, "parallel", f.parallel, "runs at a time (results do not depend on it)")
	return cmd
}

func runClusterVolcano(cmd *cobra.Command, f volcanoFlags, stdout, stderr io.Writer) error {
	seeds, err := protocol.ParseSeeds(f.seeds)
	if err := checkClusterFlags(cmd, clusterCheck{f.nodes == "" || f.pods == "", "--nodes and --pods are required"},
		clusterCheck{err != nil, fmt.Sprintf("--seeds: %v", err)},
		clusterCheck{f.parallel < 1, fmt.Sprintf("--parallel %d: want at least 1", f.parallel)}); err != nil {
		return err
	}
	specs, err := clusterPolicies(cmd, f.policies, stock.StockGrid())
	if err != nil {
		return err
	}
	for _, s := range specs {
		if !stock.IsStock(s) {
			return usageErrorf(cmd, "--policy %s: only volcano-binpack, mostallocated and rtcr have a stock configuration", s)
		}
		if _, err := cluster.NewPolicy(s, nil); err != nil {
			return usageErrorf(cmd, "--policy: %v", err)
		}
	}
	nodes, pods, err := readClusterLists(f.nodes, f.pods, false)
	if err != nil {
		return err
	}
	warnOversized(stderr, f.pods, nodes, pods)
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: specs, Seeds: seeds})
	if err := runClusterGrid(cmd, g, f.parallel, stderr, "volcano-config"); err != nil {
		return err
	}
	ranked, err := stock.RankStock(g.Summaries())
	if err != nil {
		return err
	}

	return stock.WriteReport(stdout, stock.Inputs{NodesFile: f.nodes, PodsFile: f.pods, Nodes: len(nodes), GPUs: cluster.GPUCapacity(nodes), Seeds: f.seeds}, ranked)
}
