package live

import (
	"context"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
)

// State is the cluster's GPU figures at one moment, for a metrics exporter.
type State struct {
	Nodes          int     // all listed nodes, with or without GPUs
	GPUs           int     // allocatable GPUs of all nodes
	AllocatedGPUs  float64 // GPUs requested by the pods bound to the nodes (shares count as fractions)
	WholeFreeNodes int     // GPU nodes with no GPU in use
	StrandedNodes  int     // nodes whose idle GPUs no task type of the cluster's pod mix can use
	PendingPods    int     // pods bound to no node
}

// StateOf reduces an inspection report to a State.
func StateOf(r *kube.Report) State {
	return State{
		Nodes:          r.Nodes,
		GPUs:           r.GPUs,
		AllocatedGPUs:  float64(r.RequestedMilli) / cluster.MilliGPU,
		WholeFreeNodes: r.WholeFreeNodes,
		StrandedNodes:  r.StrandedNodes,
		PendingPods:    len(r.Pending),
	}
}

// Source returns a function that lists the cluster and inspects it with
// kube.Inspect at each call (coverage as in kube.Inspect; 0 means
// cluster.DefaultCoverage), for an exporter to call on each scrape or on
// its own interval. Each call costs a full listing, so call it no more
// often than every few tens of seconds on a large cluster.
func Source(c Client, opts Options, coverage float64) func(context.Context) (State, error) {
	if coverage <= 0 {
		coverage = cluster.DefaultCoverage
	}
	return func(ctx context.Context) (State, error) {
		s, err := Load(ctx, c, opts)
		if err != nil {
			return State{}, err
		}
		return StateOf(kube.Inspect(s, coverage)), nil
	}
}
