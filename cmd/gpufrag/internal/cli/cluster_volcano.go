package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/protocol"
	"github.com/gpufrag/gpufrag/cluster/stock"
	"github.com/gpufrag/gpufrag/internal/loc"
)

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
		Long: `volcano-config simulates packing settings that stock schedulers offer on
your node and pod lists (the FGD protocol, as cluster simulate) and prints
the best ones as configuration: Volcano's binpack plugin (binpack.weight,
binpack.cpu, binpack.memory, binpack.resources with nvidia.com/gpu) and
Kubernetes' NodeResourcesFit scoring strategy (MostAllocated or
RequestedToCapacityRatio with per-resource weights).

Without --policy it tries a grid of weights (CPU 1, 2 or 5; memory 1;
nvidia.com/gpu unlisted, 2, 8 or 16 for Volcano, and 0, 1 or 3 for
Kubernetes) and shows every result, best first. With --policy it prints the
configuration of the settings given (volcano-binpack:..., mostallocated:...
or rtcr:...).

binpack.weight only scales binpack against Volcano's other node-order
plugins; the simulation has no other plugin, so it is printed as 10, the
value of the Volcano source's example, to make binpack dominate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterVolcano(cmd, f, stdout, stderr) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", "", "node list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.pods, "pods", "", "pod list `FILE` (openb CSV or our JSON form)")
	fl.StringVar(&f.seeds, "seeds", f.seeds, "`SEEDS` to run: N, N-M or a comma-separated list of those")
	fl.StringArrayVar(&f.policies, "policy", nil, "settings to print instead of searching: volcano-binpack:..., mostallocated:... or rtcr:...")
	fl.IntVar(&f.parallel, "parallel", f.parallel, "runs at a time (results do not depend on it)")
	return cmd
}

func runClusterVolcano(cmd *cobra.Command, f volcanoFlags, stdout, stderr io.Writer) error {
	if f.nodes == "" || f.pods == "" {
		return usageErrorf(cmd, "--nodes and --pods are required")
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return usageErrorf(cmd, "--seeds: %v", err)
	}
	if f.parallel < 1 {
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	}
	specs := clusterPolicies(f.policies)
	if len(f.policies) == 0 {
		specs = stock.StockGrid()
	}
	for _, s := range specs {
		if !stock.IsStock(s) {
			return usageErrorf(cmd, "--policy %s: only volcano-binpack, mostallocated and rtcr have a stock configuration", s)
		}
		if _, err := cluster.NewPolicy(s, nil); err != nil {
			return usageErrorf(cmd, "--policy: %v", err)
		}
	}
	if err := checkInputs(fileFlag{"--nodes", f.nodes}, fileFlag{"--pods", f.pods}); err != nil {
		return err
	}
	nodes, err := cluster.ReadNodesFile(f.nodes)
	if err != nil {
		return err
	}
	pods, err := cluster.ReadPodsFile(f.pods)
	if err != nil {
		return err
	}
	g := protocol.NewGrid(protocol.GridConfig{Nodes: nodes, Pods: pods, Policies: specs, Seeds: seeds})
	if err := runClusterGrid(cmd, g, f.parallel, stderr, "volcano-config"); err != nil {
		return err
	}
	ranked, err := stock.RankStock(g.Summaries())
	if err != nil {
		return err
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "# Simulated with the FGD protocol on %s (%d nodes, %d GPUs) and %s, seeds %s:\n",
		loc.Printable(f.nodes), len(nodes), cluster.GPUCapacity(nodes), loc.Printable(f.pods), f.seeds)
	sb.WriteString("# unallocated GPUs at 100% arrived demand, best first\n")
	for _, c := range ranked {
		fmt.Fprintf(&sb, "#   %-44s %6.2f%% ±%.2f  (%.0f GPUs)\n", c.Spec, 100*c.Unallocated.Mean, 100*c.Unallocated.Std, c.UnallocatedGPUs)
	}
	bestV, bestK := stock.BestStock(ranked)
	if bestV != nil {
		fmt.Fprintf(&sb, "\n# --- volcano-scheduler.conf (%s: %.2f%% unallocated) ---\n", bestV.Spec, 100*bestV.Unallocated.Mean)
		if err := stock.WriteYAML(&sb, stock.NewVolcanoConfig(bestV.Policy.(*cluster.VolcanoBinpack))); err != nil {
			return err
		}
	}
	if bestK != nil {
		conf, err := stock.NewKubeSchedulerConfig(bestK.Policy.(*cluster.KubeFit))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "\n# --- KubeSchedulerConfiguration (%s: %.2f%% unallocated) ---\n", bestK.Spec, 100*bestK.Unallocated.Mean)
		if err := stock.WriteYAML(&sb, conf); err != nil {
			return err
		}
	}
	_, err = io.WriteString(stdout, sb.String())
	return err
}
