package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/spf13/cobra"
)

// volcanoFlags are the flags of `gpufrag cluster volcano-config`.
type volcanoFlags struct {
	nodes, pods string
	seeds       string
	policies    []string
	parallel    int
}

// volcanoGrid is the set of binpack and NodeResourcesFit settings tried when
// no --policy is given: CPU weight 1, 2 or 5 (the Volcano source's example
// uses 5, a published DGX Cloud tuning 2), memory 1, and nvidia.com/gpu
// unlisted or weighted 2 (the source's example), 8 (the DGX Cloud tuning)
// or 16; Kubernetes' MostAllocated and RequestedToCapacityRatio with GPU
// weight 0, 1 or 3.
func volcanoGrid() []string {
	var out []string
	for _, cpu := range []int{1, 2, 5} {
		for _, gpu := range []int{0, 2, 8, 16} {
			out = append(out, fmt.Sprintf("volcano-binpack:cpu=%d,memory=1,gpu=%d", cpu, gpu))
		}
	}
	for _, s := range []string{"mostallocated", "rtcr"} {
		for _, gpu := range []int{0, 1, 3} {
			out = append(out, fmt.Sprintf("%s:cpu=1,memory=1,gpu=%d", s, gpu))
		}
	}
	return out
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

type volcanoCandidate struct {
	spec    string
	unalloc cluster.MeanStd // share at 100% arrived
	gpus    float64
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
		specs = volcanoGrid()
	}
	for _, s := range specs {
		switch name, _, _ := strings.Cut(s, ":"); name {
		case "volcano-binpack", "mostallocated", "rtcr":
		default:
			return usageErrorf(cmd, "--policy %s: only volcano-binpack, mostallocated and rtcr have a stock configuration", s)
		}
		if _, err := cluster.NewPolicy(s, nil); err != nil {
			return usageErrorf(cmd, "--policy: %v", err)
		}
	}
	nodes, err := cluster.ReadNodesFile(f.nodes)
	if err != nil {
		return err
	}
	pods, err := cluster.ReadPodsFile(f.pods)
	if err != nil {
		return err
	}
	g := cluster.NewGrid(cluster.GridConfig{Nodes: nodes, Pods: pods, Policies: specs, Seeds: seeds})
	if err := runClusterGrid(cmd, g, f.parallel, stderr, "volcano-config"); err != nil {
		return err
	}
	var cands []volcanoCandidate
	for _, sum := range g.Summaries() {
		p := sum.Nearest(100)
		cands = append(cands, volcanoCandidate{sum.Policy, cluster.MeanStd{Mean: 1 - p.AllocRatio.Mean, Std: p.AllocRatio.Std}, p.UnallocatedGPUs.Mean})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].unalloc.Mean < cands[b].unalloc.Mean })

	var sb strings.Builder
	fmt.Fprintf(&sb, "# Simulated with the FGD protocol on %s (%d nodes, %d GPUs) and %s, seeds %s:\n",
		f.nodes, len(nodes), cluster.GPUCapacity(nodes), f.pods, f.seeds)
	sb.WriteString("# unallocated GPUs at 100% arrived demand, best first\n")
	for _, c := range cands {
		fmt.Fprintf(&sb, "#   %-44s %6.2f%% ±%.2f  (%.0f GPUs)\n", c.spec, 100*c.unalloc.Mean, 100*c.unalloc.Std, c.gpus)
	}
	var bestV, bestK *volcanoCandidate
	for i := range cands {
		if strings.HasPrefix(cands[i].spec, "volcano-binpack") && bestV == nil {
			bestV = &cands[i]
		}
		if !strings.HasPrefix(cands[i].spec, "volcano-binpack") && bestK == nil {
			bestK = &cands[i]
		}
	}
	if bestV != nil {
		p, _ := cluster.NewPolicy(bestV.spec, nil)
		writeVolcanoConf(&sb, p.(*cluster.VolcanoBinpack), *bestV)
	}
	if bestK != nil {
		p, _ := cluster.NewPolicy(bestK.spec, nil)
		writeKubeConf(&sb, p.(*cluster.KubeFit), *bestK)
	}
	_, err = io.WriteString(stdout, sb.String())
	return err
}

func writeVolcanoConf(sb *strings.Builder, v *cluster.VolcanoBinpack, c volcanoCandidate) {
	fmt.Fprintf(sb, "\n# --- volcano-scheduler.conf (%s: %.2f%% unallocated) ---\n", c.spec, 100*c.unalloc.Mean)
	sb.WriteString(`actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
`)
	fmt.Fprintf(sb, "      binpack.cpu: %d\n      binpack.memory: %d\n", v.CPU, v.Memory)
	if v.GPU > 0 {
		fmt.Fprintf(sb, "      binpack.resources: nvidia.com/gpu\n      binpack.resources.nvidia.com/gpu: %d\n", v.GPU)
	} else {
		sb.WriteString("      # nvidia.com/gpu left out: GPUs are not scored (Volcano's default)\n")
	}
}

func writeKubeConf(sb *strings.Builder, k *cluster.KubeFit, c volcanoCandidate) {
	typ := map[string]string{"mostallocated": "MostAllocated", "rtcr": "RequestedToCapacityRatio"}[k.Strategy]
	fmt.Fprintf(sb, "\n# --- KubeSchedulerConfiguration (%s: %.2f%% unallocated) ---\n", c.spec, 100*c.unalloc.Mean)
	sb.WriteString(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
`)
	fmt.Fprintf(sb, "        type: %s\n        resources:\n", typ)
	for _, r := range []struct {
		name string
		w    int64
	}{{"cpu", k.CPU}, {"memory", k.Memory}, {"nvidia.com/gpu", k.GPU}} {
		if r.w > 0 {
			fmt.Fprintf(sb, "        - name: %s\n          weight: %d\n", r.name, r.w)
		}
	}
	if typ == "RequestedToCapacityRatio" {
		sb.WriteString("        requestedToCapacityRatio:\n          shape:\n          - utilization: 0\n            score: 0\n          - utilization: 100\n            score: 10\n")
	}
}
