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
// Subpackage lists reads and writes node and pod lists (the openb CSV
// files and the package's JSON form); its errors are [InputError] values,
// wrapping [ErrBadInput], as those of subpackage kube.
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
// result and score per group of pods in a tournament tree updated from
// the nodes that changed, so a pod costs O(log nodes) per changed node
// instead of a filter and a score of every node; pods a policy scores
// alike (same CPU and GPU request, for FGD) share one tree whatever their
// memory and allowed GPU models, which are applied when choosing, and a
// node whose filter result and score did not change is not looked at
// again above its leaf. A group used rarely keeps only its leaves up to
// date and chooses by a pass over them; random placement keeps a bitset
// of the feasible nodes.
// [NewPolicy] builds one by its command-line name; [PolicyNames] lists them.
//
// # Packages around the model
//
// Subpackage protocol runs the FGD paper's experiment protocol and the
// replay by pod times on this model, over grids of policies and seeds;
// lists reads node and pod lists; gen generates pod lists of the paper's workload families; judge is the
// out-of-sample protocol that chose the recommended policy; stock
// searches the packing settings of Volcano and Kubernetes and prints
// their configurations. Each uses only this package's exported API: the
// scheduler and the policies stay together here because the policies read
// State's per-node arrays and implement the unexported interfaces the
// scheduler's index shares score rows through, its hot path.
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
// and seed give the same results bit for bit.
package cluster
