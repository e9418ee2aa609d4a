package stock

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Inputs names what a search ran on, as WriteReport prints it.
type Inputs struct {
	NodesFile, PodsFile string // the lists' paths, as given
	Nodes, GPUs         int
	Seeds               string // the seeds as given ("42-44")
}

// WriteReport prints the ranked settings as YAML comments, then the best
// Volcano and Kubernetes settings as their configuration files (the
// output of gpufrag cluster volcano-config).
func WriteReport(w io.Writer, in Inputs, ranked []StockResult) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Simulated with the FGD protocol on %s (%d nodes, %d GPUs) and %s, seeds %s:\n",
		untrusted.Printable(in.NodesFile), in.Nodes, in.GPUs, untrusted.Printable(in.PodsFile), in.Seeds)
	sb.WriteString("# unallocated GPUs at 100% arrived demand, best first\n")
	for _, c := range ranked {
		fmt.Fprintf(&sb, "#   %-44s %6.2f%% ±%.2f  (%.0f GPUs)\n", c.Spec, 100*c.Unallocated.Mean, 100*c.Unallocated.Std, c.UnallocatedGPUs)
	}
	bestV, bestK := BestStock(ranked)
	if bestV != nil {
		fmt.Fprintf(&sb, "\n# --- volcano-scheduler.conf (%s: %.2f%% unallocated) ---\n", bestV.Spec, 100*bestV.Unallocated.Mean)
		if err := WriteYAML(&sb, NewVolcanoConfig(bestV.Policy.(*cluster.VolcanoBinpack))); err != nil {
			return err
		}
	}
	if bestK != nil {
		conf, err := NewKubeSchedulerConfig(bestK.Policy.(*cluster.KubeFit))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "\n# --- KubeSchedulerConfiguration (%s: %.2f%% unallocated) ---\n", bestK.Spec, 100*bestK.Unallocated.Mean)
		if err := WriteYAML(&sb, conf); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
