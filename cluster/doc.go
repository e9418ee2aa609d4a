// Package cluster models GPU clusters at the granularity a Kubernetes
// scheduler sees them, to study cluster-level GPU fragmentation: GPUs left
// idle where no waiting task can use them.
//
// # Model
//
// A [Node] has CPU (millicores), memory (MiB) and a number of GPUs of one
// model; every GPU holds [MilliGPU] = 1000 milli-GPUs. A [Pod] asks for CPU,
// memory and NumGPU GPUs with MilliGPU of each: a GPU-sharing pod asks for
// one GPU and less than 1000 milli, a whole-GPU pod for 1000 milli of each
// of its GPUs. GPUSpec restricts the GPU models a pod may run on. [State]
// holds what is free on every node and places pods; [State.Fits] is the
// filter Kubernetes' NodeResourcesFit plus a GPU-sharing plugin apply.
//
// Readers: [ReadNodesCSV] and [ReadPodsCSV] read the openb trace
// (Alibaba cluster-trace-gpu-v2023: node lists with or without the model
// column, pod lists with 5 or 11 columns); [ReadJSON] and [WriteJSON] read
// and write the package's own JSON form ([File]); [ReadNodes] and
// [ReadPods] take either form, telling JSON from CSV by name or content.
// Readers never panic; their errors name the input, the line (the header
// is line 1) and the field, and echo at most 64 bytes of a bad value.
// They bound what they read: a line at most [MaxLineBytes], an input at
// most [MaxInputBytes], and binary input is refused at its first bytes.
//
// # Fragmentation
//
// [Target] is the target workload of the FGD paper (Weng et al., USENIX ATC
// '23): the most popular task types of a pod list, covering 95% of its pods,
// each with its share. [Target.NodeFrag] is the expected number of idle
// GPU-milli on a node that a task drawn from the target workload could not
// use; summed over nodes it is the cluster's fragmentation.
//
// # Policies
//
// A [Policy] scores feasible nodes for a pod (higher is better) and picks
// the GPUs inside the chosen node; the scheduler ([Scheduler]) picks the
// best score, breaking ties by a fixed node order (as the FGD artifact) or
// uniformly at random (as kube-scheduler). It keeps every node's filter
// result and score per class of pods in a tournament tree updated from
// the nodes that changed, so a pod costs O(log nodes) per changed node
// instead of a filter and a score of every node; classes whose pods a
// policy scores alike (same CPU and GPU request, for FGD) share the
// scores, and a node whose filter result and score did not change is not
// looked at again above its leaf.
// [NewPolicy] builds one by its command-line name; [PolicyNames] lists them.
//
// # The experiment protocol
//
// [Experiment] reproduces the FGD paper's protocol: the pod list is
// shuffled with a seed and inflated (random copies appended) or trimmed
// (random pods removed) to 130% of the cluster's GPU capacity; pods arrive
// one at a time and never leave; a pod that fits nowhere fails. After every
// pod the allocation and fragmentation are measured; [Curve] averages them
// at each integer percent of arrived GPU demand. [Aggregate] combines seeds
// into means and standard deviations. [Timed] replays pods by their
// creation and deletion times instead.
//
// [Grid] is the comparison every driver runs (cluster simulate,
// volcano-config, the experiment suite): policies × seeds, one
// independent cell each (the policies of a seed share its prepared
// workload, made once), aggregated per policy ([Grid.Summaries],
// [Grid.TimedSummaries]); [NewComparison] and [NewTimedComparison] are
// the documents cluster simulate prints with --json.
//
// # Stock schedulers
//
// [StockGrid], [RankStock] and [BestStock] search the packing settings of
// Volcano's binpack plugin and Kubernetes' NodeResourcesFit on a
// cluster's own lists; [NewVolcanoConfig] and [NewKubeSchedulerConfig]
// are their configurations as typed documents, which [WriteYAML] prints
// (gpufrag cluster volcano-config).
//
// Subpackage kube reads a live cluster's nodes and pods, as saved by
// kubectl, into this model and reports its allocation, fragmentation and
// unschedulable pods (gpufrag cluster inspect).
//
// # Determinism
//
// The package is a deterministic core: no goroutines, no wall clock, no
// global random source. Every random choice draws from a *rand.Rand the
// caller passes in, built from rand.NewPCG(seed, stream). The same inputs
// and seed give the same results bit for bit. A [Grid]'s cells may run in
// parallel: the driver passes a [Runner] (internal/par's pool in the
// commands) and the results are kept by cell, so they do not depend on it.
package cluster
