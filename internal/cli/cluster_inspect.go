package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	"github.com/spf13/cobra"
)

func newClusterInspectCmd(stdout io.Writer) *cobra.Command {
	var (
		from     string
		asJSON   bool
		coverage = cluster.DefaultCoverage
		all      bool
	)
	cmd := &cobra.Command{
		Use:   "inspect --from FILE",
		Short: "Report GPU allocation and fragmentation of a Kubernetes cluster from kubectl's JSON",
		Long: `inspect reads a cluster's nodes and pods as kubectl saves them and reports,
per GPU node and in total, the allocatable and requested GPUs, whole-free
nodes, nodes whose idle GPUs no task type of the cluster's own pod mix can
use (stranded), the FGD fragmentation for that mix, and the pending pods
that fit nowhere, with the reason.

Save the cluster with:

  kubectl get nodes,pods -A -o json > cluster.json
  gpufrag cluster inspect --from cluster.json

GPU resources: nvidia.com/gpu (whole GPUs), and the GPU-share convention of
the openb trace (alibabacloud.com/gpu-milli, gpu-count and gpu-index pod
annotations, alibabacloud.com/gpu-count node allocatable); the GPU model
comes from the node label nvidia.com/gpu.product or
alibabacloud.com/gpu-card-model. Reading a live cluster through client-go is
not built in: it would add minutes of cold compile time to every build; the
saved JSON carries the same information.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageErrorf(cmd, "--from is required: save the cluster with kubectl get nodes,pods -A -o json")
			}
			if !(coverage > 0 && coverage <= 1) {
				return usageErrorf(cmd, "--coverage %v: want a share above 0, at most 1", coverage)
			}
			f, err := os.Open(from)
			if err != nil {
				return err
			}
			defer f.Close()
			snap, err := kube.Read(f, from)
			if err != nil {
				return err
			}
			rep := kube.Inspect(snap, coverage)
			if asJSON {
				return writeClusterJSON(stdout, rep)
			}
			var sb strings.Builder
			writeInspectReport(&sb, from, rep, all)
			_, err = io.WriteString(stdout, sb.String())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "`FILE` saved with kubectl get nodes,pods -A -o json")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&all, "all", false, "list every GPU node, not only those with idle GPUs")
	fl.Float64Var(&coverage, "coverage", coverage, "share of the cluster's pods the target workload of the FGD measure covers")
	return cmd
}

func writeInspectReport(sb *strings.Builder, from string, r *kube.Report, all bool) {
	fmt.Fprintf(sb, "%s: %d nodes, %d with GPUs, %d GPUs; %.2f GPUs requested (%.1f%%).\n\n", from, r.Nodes, r.GPUNodes, r.GPUs,
		float64(r.RequestedMilli)/cluster.MilliGPU, 100*float64(r.RequestedMilli)/float64(max(r.GPUs*cluster.MilliGPU, 1)))
	t := table{head: []string{"node", "model", "GPUs", "requested", "whole free", "free CPU", "pods", "frag", "note"}}
	for _, n := range r.PerNode {
		idle := int64(n.GPUs)*cluster.MilliGPU - n.RequestedMilli
		if !all && idle == 0 {
			continue
		}
		note := ""
		if n.Stranded {
			note = "stranded"
		}
		if n.Cordoned {
			note = strings.TrimSpace(note + " cordoned")
		}
		t.rows = append(t.rows, []string{n.Name, n.Model, fmt.Sprint(n.GPUs), fmt.Sprintf("%.2f", float64(n.RequestedMilli)/cluster.MilliGPU),
			fmt.Sprint(n.WholeFreeGPUs), fmt.Sprintf("%.1f", float64(n.FreeCPUMilli)/1000), fmt.Sprint(n.Pods),
			fmt.Sprintf("%.2f", n.FragMilli/cluster.MilliGPU), note})
	}
	if len(t.rows) > 0 {
		t.write(sb)
		sb.WriteString("\n")
	}
	fmt.Fprintf(sb, "whole-free GPU nodes: %d; partly used: %d; stranded (idle GPUs no task type can use): %d\n",
		r.WholeFreeNodes, r.PartlyUsedNodes, r.StrandedNodes)
	fmt.Fprintf(sb, "FGD fragmentation for the cluster's own pod mix (%d task types): %.2f GPUs, %.1f%% of all GPUs, %.1f%% of idle GPUs\n",
		r.TaskTypes, r.FragMilli/cluster.MilliGPU, 100*r.FragTotal, 100*r.FragRate)
	stuck := 0
	for _, p := range r.Pending {
		if p.Fits == 0 {
			stuck++
		}
	}
	fmt.Fprintf(sb, "pending pods: %d, of which %d fit nowhere\n", len(r.Pending), stuck)
	for _, p := range r.Pending {
		if p.Fits == 0 {
			fmt.Fprintf(sb, "  %s (%s): %s\n", p.Pod, p.Shape, p.Reason)
		}
	}
	for _, u := range r.Unplaceable {
		fmt.Fprintf(sb, "not modelled: %s\n", u)
	}
}
