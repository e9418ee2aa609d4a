package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	"github.com/gpufrag/gpufrag/cluster/kube/live"
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
		Args:  noArgs,
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
			return rep.WriteTextWidth(stdout, label, all, tableWidth(stdout))
		},
	}
	withHelp(cmd, "cluster-inspect")
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
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	snap, err := live.Load(ctx, client, opts)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no answer from the cluster within --timeout %v (is the API server reachable from here?): %w", timeout, err)
	}
	return snap, err
}
