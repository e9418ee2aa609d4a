// Package protocol runs placement policies on a cluster the way the FGD
// paper (Weng et al., USENIX ATC '23) measures them, on package cluster's
// model and scheduler.
//
// [Experiment] reproduces the paper's protocol: the pod list is shuffled
// with a seed and inflated (random copies appended) or trimmed (random
// pods removed) to 130% of the cluster's GPU capacity ([Workload]); pods
// arrive one at a time and never leave; a pod that fits nowhere fails.
// After every pod the allocation and fragmentation are measured
// ([Simulate], with a cluster.Meter); [Curve] averages them at each
// integer percent of arrived GPU demand. [Aggregate] combines seeds into
// means and standard deviations. [Timed] replays pods by their creation
// and deletion times instead.
//
// [Grid] is the comparison every driver runs (cluster simulate,
// volcano-config, judge, the experiment suite): policies × seeds, one
// independent cell each (the policies of a seed share its prepared
// workload, made once), aggregated per policy ([Grid.Summaries],
// [Grid.TimedSummaries]); [NewComparison] and [NewTimedComparison] are
// the documents cluster simulate prints with --json, [WriteText] and
// [WriteTimedText] its text; subpackage pages draws its HTML report and
// charts.
//
// The package is deterministic core, as package cluster: the same inputs
// and seed give the same results bit for bit. A Grid's cells may run in
// parallel: the driver passes a [Runner] (internal/par's pool in the
// commands) and the results are kept by cell, so they do not depend on it.
package protocol
