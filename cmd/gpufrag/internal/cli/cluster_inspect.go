package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	"github.com/gpufrag/gpufrag/cluster/kube/live"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/spf13/cobra"
)

// liveConnect builds the client of a live cluster; tests replace it with a
// fake.
var liveConnect = live.Connect

// defaultInspectTimeout bounds a live inspection: listing a 10,000-pod
// cluster is about 25 requests of well under a second each; a minute
// leaves room for a loaded API server and still fails fast enough when it
// is unreachable.
const defaultInspectTimeout = time.Minute

func newClusterInspectCmd(stdout io.Writer) *cobra.Command {
	var (
		from     string
		asJSON   bool
		coverage = cluster.DefaultCoverage
		all      bool
		conn     live.Config
		opts     live.Options
		timeout  = defaultInspectTimeout
	)
	cmd := &cobra.Command{
		Use:   "inspect [--from FILE | --context NAME]",
		Short: "Report GPU allocation and fragmentation of a Kubernetes cluster, live or from kubectl's JSON",
		Long: `inspect reads a cluster's nodes and pods and reports, per GPU node and in
total, the allocatable and requested GPUs, whole-free nodes, nodes whose
idle GPUs no task type of the cluster's own pod mix can use (stranded), the
FGD fragmentation for that mix, and the pending pods that fit nowhere, with
the reason.

Without --from it reads the live cluster of the current kubeconfig context
(--kubeconfig, else $KUBECONFIG, else ~/.kube/config; in a pod without a
kubeconfig, its service account). The account needs the RBAC verbs get and
list on nodes and pods, cluster-wide:

  kubectl apply -f deploy/kubernetes/gpufrag-inspect-rbac.yaml

gives them to a service account gpufrag in namespace gpufrag (edit the
binding's subject for a user or group).

--namespace lists the pods of one namespace only. Nodes are always listed
cluster-wide, so GPUs held by other namespaces' pods look idle: use it with
--selector for the nodes that namespace owns, or where RBAC allows no more.

--from reads a saved cluster instead:

  kubectl get nodes,pods -A -o json > cluster.json
  gpufrag cluster inspect --from cluster.json

GPU resources: nvidia.com/gpu (whole GPUs), and the GPU-share convention of
the openb trace (alibabacloud.com/gpu-milli, gpu-count and gpu-index pod
annotations, alibabacloud.com/gpu-count node allocatable); the GPU model
comes from the node label nvidia.com/gpu.product or
alibabacloud.com/gpu-card-model.`,
		Example: `  gpufrag cluster inspect
  gpufrag cluster inspect --context prod --selector nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB
  gpufrag cluster inspect --namespace ml --selector pool=ml --json
  gpufrag cluster inspect --from cluster.json --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(coverage > 0 && coverage <= 1) {
				return usageErrorf(cmd, "--coverage %v: want a share above 0, at most 1", coverage)
			}
			var (
				snap  *kube.Snapshot
				label string
				err   error
			)
			if from != "" {
				for _, name := range []string{"kubeconfig", "context", "namespace", "selector", "pod-selector", "timeout"} {
					if cmd.Flags().Changed(name) {
						return usageErrorf(cmd, "--%s applies to a live cluster; --from %s reads a saved one", name, from)
					}
				}
				if err := checkInputs(fileFlag{"--from", from}); err != nil {
					return err
				}
				if snap, err = readInspectFile(from); err != nil {
					return err
				}
				label = from
			} else {
				if timeout <= 0 {
					return usageErrorf(cmd, "--timeout %v: want a positive duration", timeout)
				}
				conn.Timeout = timeout
				if snap, err = loadLive(cmd, conn, opts, timeout); err != nil {
					return err
				}
				label = "current kubeconfig context"
				if conn.Context != "" {
					label = "context " + conn.Context
				}
				if opts.Namespace != "" {
					label += ", namespace " + opts.Namespace
				}
			}
			rep := kube.Inspect(snap, coverage)
			if asJSON {
				return writeJSON(stdout, rep, true)
			}
			var sb strings.Builder
			writeInspectReport(&sb, label, rep, all)
			_, err = io.WriteString(stdout, sb.String())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "read `FILE` saved with kubectl get nodes,pods -A -o json instead of the live cluster")
	fl.StringVar(&conn.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&conn.Context, "context", "", "kubeconfig context `NAME` (default the current context)")
	fl.StringVarP(&opts.Namespace, "namespace", "n", "", "list the pods of namespace `NS` only (default all namespaces)")
	fl.StringVarP(&opts.NodeSelector, "selector", "l", "", "node label `SELECTOR` (key=value,...): inspect these nodes and the pods on them")
	fl.StringVar(&opts.PodSelector, "pod-selector", "", "pod label `SELECTOR`")
	fl.DurationVar(&timeout, "timeout", timeout, "give up on the live cluster after this long")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&all, "all", false, "list every GPU node, not only those with idle GPUs")
	fl.Float64Var(&coverage, "coverage", coverage, "share of the cluster's pods the target workload of the FGD measure covers")
	return cmd
}

func readInspectFile(path string) (*kube.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return kube.Read(f, path)
}

func loadLive(cmd *cobra.Command, conn live.Config, opts live.Options, timeout time.Duration) (*kube.Snapshot, error) {
	client, err := liveConnect(conn)
	if errors.Is(err, live.ErrNoConfig) {
		return nil, usageErrorf(cmd, "--from is required when there is no cluster to reach: %w", err)
	}
	if err != nil {
		return nil, err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	snap, err := live.Load(ctx, client, opts)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no answer from the cluster within --timeout %v (is the API server reachable from here?): %w", timeout, err)
	}
	return snap, err
}

// writeInspectReport prints the report for people; node, pod and model names
// (and the names in a pending pod's reason) come from the cluster, so every
// one goes through loc.Printable (the table's cells do).
func writeInspectReport(sb *strings.Builder, from string, r *kube.Report, all bool) {
	fmt.Fprintf(sb, "%s: %d nodes, %d with GPUs, %d GPUs; %.2f GPUs requested (%.1f%%).\n\n", loc.Printable(from), r.Nodes, r.GPUNodes, r.GPUs,
		float64(r.RequestedMilli)/cluster.MilliGPU, 100*float64(r.RequestedMilli)/float64(max(r.GPUs*cluster.MilliGPU, 1)))
	t := human.Table{Head: []string{"node", "model", "GPUs", "requested", "whole free", "free CPU", "pods", "frag", "note"}}
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
		t.Rows = append(t.Rows, []string{n.Name, n.Model, fmt.Sprint(n.GPUs), fmt.Sprintf("%.2f", float64(n.RequestedMilli)/cluster.MilliGPU),
			fmt.Sprint(n.WholeFreeGPUs), fmt.Sprintf("%.1f", float64(n.FreeCPUMilli)/1000), fmt.Sprint(n.Pods),
			fmt.Sprintf("%.2f", n.FragMilli/cluster.MilliGPU), note})
	}
	if len(t.Rows) > 0 {
		t.Write(sb)
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
			fmt.Fprintf(sb, "  %s (%s): %s\n", loc.Printable(p.Pod), loc.Printable(p.Shape), loc.Printable(p.Reason))
		}
	}
	for _, u := range r.Unplaceable {
		fmt.Fprintf(sb, "not modelled: %s\n", loc.Printable(u))
	}
}
