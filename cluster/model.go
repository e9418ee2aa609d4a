package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MilliGPU is the capacity of one GPU in milli-GPUs, the unit of GPU
// sharing (a pod asking for 500 takes half a GPU).
const MilliGPU = 1000

// Sentinel errors.
var (
	// ErrBadInput marks a malformed node or pod list; errors from the
	// readers wrap it (see *InputError).
	ErrBadInput = errors.New("bad input")
	// ErrUnknownPolicy is returned by NewPolicy for a name it does not know.
	ErrUnknownPolicy = errors.New("unknown policy")
	// ErrPolicyOptions is returned (wrapped) by NewPolicy for a known
	// policy given options it does not take; errors.Is matches it to
	// ErrUnknownPolicy too, as every spec NewPolicy refuses.
	ErrPolicyOptions error = policyOptionsError{}
	// ErrEmpty is returned when an experiment has no nodes, no GPUs or no
	// pods asking for GPUs.
	ErrEmpty = errors.New("empty cluster or workload")
)

// policyOptionsError is ErrPolicyOptions: a known policy, options it does
// not take ("spread:cpu=-1" said "unknown policy").
type policyOptionsError struct{}

func (policyOptionsError) Error() string        { return "bad policy options" }
func (policyOptionsError) Is(target error) bool { return target == ErrUnknownPolicy }

// Node is one machine of the cluster.
type Node struct {
	Name      string `json:"name"`
	MilliCPU  int64  `json:"cpu_milli"`
	MemoryMiB int64  `json:"memory_mib"`
	GPUs      int    `json:"gpus"`
	Model     string `json:"model,omitempty"` // GPU model; empty for a CPU-only node
}

// Pod is one task asking for resources.
type Pod struct {
	Name      string `json:"name"`
	MilliCPU  int64  `json:"cpu_milli"`
	MemoryMiB int64  `json:"memory_mib"`
	// NumGPU is the number of GPUs; MilliGPU the share of each, in
	// milli-GPUs: below 1000 only when NumGPU is 1 (a GPU-sharing pod),
	// 1000 for whole GPUs, 0 when NumGPU is 0.
	NumGPU   int   `json:"num_gpu,omitempty"`
	MilliGPU int64 `json:"gpu_milli,omitempty"`
	// GPUSpec lists the GPU models the pod may use; empty means any.
	GPUSpec []string `json:"gpu_spec,omitempty"`
	// Job groups the pods of one multi-pod job for gang scheduling; empty
	// means the pod is a job of its own.
	Job string `json:"job,omitempty"`
	// Creation and Deletion are times in seconds (used by Timed); Deletion
	// 0 with HasTimes means the pod never leaves.
	Creation int64 `json:"creation_time,omitempty"`
	Deletion int64 `json:"deletion_time,omitempty"`
	HasTimes bool  `json:"-"`
	// Line is the pod's line in the CSV list it was read from (the
	// header is line 1); 0 when it was not read from one.
	Line int `json:"-"`
}

// GPUMilli is the pod's total GPU request in milli-GPUs.
func (p *Pod) GPUMilli() int64 { return int64(p.NumGPU) * p.MilliGPU }

// Sharing reports whether the pod takes a fraction of one GPU.
func (p *Pod) Sharing() bool { return p.NumGPU == 1 && p.MilliGPU < MilliGPU }

// AllowsModel reports whether the pod may run on GPUs of the model.
func (p *Pod) AllowsModel(model string) bool {
	return len(p.GPUSpec) == 0 || slices.Contains(p.GPUSpec, model)
}

// Check returns the field and message of the first problem with p, or
// "" when p is well formed: the readers' check of every pod they read.
func (p *Pod) Check() (field, msg string) {
	switch {
	case p.Name == "":
		return "name", "must not be empty"
	case p.MilliCPU < 0:
		return "cpu_milli", fmt.Sprintf("must not be negative (got %d)", p.MilliCPU)
	case p.MemoryMiB < 0:
		return "memory_mib", fmt.Sprintf("must not be negative (got %d)", p.MemoryMiB)
	case p.NumGPU < 0:
		return "num_gpu", fmt.Sprintf("must not be negative (got %d)", p.NumGPU)
	case p.MilliGPU < 0 || p.MilliGPU > MilliGPU:
		return "gpu_milli", fmt.Sprintf("must be between 0 and %d (got %d)", MilliGPU, p.MilliGPU)
	case p.NumGPU == 0 && p.MilliGPU != 0:
		return "gpu_milli", fmt.Sprintf("must be 0 for a pod without GPUs (got %d)", p.MilliGPU)
	case p.NumGPU > 0 && p.MilliGPU == 0:
		return "gpu_milli", fmt.Sprintf("must be positive for a pod with %d GPUs", p.NumGPU)
	case p.NumGPU > 1 && p.MilliGPU != MilliGPU:
		return "gpu_milli", fmt.Sprintf("must be %d for a pod with %d GPUs: only single-GPU pods share (got %d)",
			MilliGPU, p.NumGPU, p.MilliGPU)
	case p.HasTimes && p.Deletion != 0 && p.Deletion < p.Creation:
		return "deletion_time", fmt.Sprintf("is before creation_time (%d < %d)", p.Deletion, p.Creation)
	}
	for _, m := range p.GPUSpec {
		if m == "" || strings.ContainsAny(m, "| ") {
			return "gpu_spec", fmt.Sprintf("bad GPU model %s", untrusted.Quote(m))
		}
	}
	return "", ""
}

// FitsEmpty reports whether node n could hold p with nothing else on it.
func (p *Pod) FitsEmpty(n *Node) bool {
	return p.MilliCPU <= n.MilliCPU && p.MemoryMiB <= n.MemoryMiB &&
		(p.NumGPU == 0 || p.AllowsModel(n.Model) && p.NumGPU <= n.GPUs)
}

// Oversized is a pod that no node can hold even when empty: it fails
// wherever and whenever it is submitted.
type Oversized struct {
	Index int    // in the pod list
	Why   string // what it asks that no node has, e.g. "asks 64 GPUs; no node has more than 8"
}

// FindOversized returns the pods that no node can hold even when empty,
// in list order.
func FindOversized(nodes []Node, pods []Pod) []Oversized {
	// Nodes of one shape hold the same pods; the lists have few shapes.
	shapes := map[Node]bool{}
	for _, n := range nodes {
		n.Name = ""
		shapes[n] = true
	}
	var out []Oversized
	for i := range pods {
		p := &pods[i]
		fits := false
		for n := range shapes {
			if p.FitsEmpty(&n) {
				fits = true
				break
			}
		}
		if !fits {
			out = append(out, Oversized{Index: i, Why: p.whyNoNode(shapes)})
		}
	}
	return out
}

// whyNoNode names what p asks that none of the node shapes has, the first
// of GPU model, GPU count, CPU and memory that no node has enough of; each
// alone when only their sum is too much.
func (p *Pod) whyNoNode(shapes map[Node]bool) string {
	var gpus, cpu, mem int64 = -1, 0, 0
	for n := range shapes {
		if p.NumGPU > 0 && p.AllowsModel(n.Model) {
			gpus = max(gpus, int64(n.GPUs))
		}
		cpu, mem = max(cpu, n.MilliCPU), max(mem, n.MemoryMiB)
	}
	of := ""
	if len(p.GPUSpec) > 0 {
		of = " of model " + strings.Join(p.GPUSpec, "|")
	}
	switch {
	case p.NumGPU > 0 && gpus < 0:
		return fmt.Sprintf("asks GPUs%s; no node has that model", of)
	case p.NumGPU > 0 && int64(p.NumGPU) > gpus:
		return fmt.Sprintf("asks %d GPUs%s; no node has more than %d", p.NumGPU, of, gpus)
	case p.MilliCPU > cpu:
		return fmt.Sprintf("asks %d milli-CPUs; no node has more than %d", p.MilliCPU, cpu)
	case p.MemoryMiB > mem:
		return fmt.Sprintf("asks %d MiB of memory; no node has more than %d", p.MemoryMiB, mem)
	}
	return fmt.Sprintf("asks %d milli-CPUs, %d MiB of memory and %d GPUs%s; no node has them all", p.MilliCPU, p.MemoryMiB, p.NumGPU, of)
}

// Check returns the field and message of the first problem with n, or ""
// when n is well formed.
func (n *Node) Check() (field, msg string) {
	switch {
	case n.Name == "":
		return "name", "must not be empty"
	case n.MilliCPU < 0:
		return "cpu_milli", fmt.Sprintf("must not be negative (got %d)", n.MilliCPU)
	case n.MemoryMiB < 0:
		return "memory_mib", fmt.Sprintf("must not be negative (got %d)", n.MemoryMiB)
	case n.GPUs < 0 || n.GPUs > MaxGPUsPerNode:
		return "gpu", fmt.Sprintf("must be between 0 and %d (got %d)", MaxGPUsPerNode, n.GPUs)
	case n.GPUs > 0 && n.Model == "":
		return "model", "must name the GPU model of a node with GPUs"
	}
	return "", ""
}

// MaxGPUsPerNode bounds a node's GPU count. 64 is far above any machine
// sold (8 is the usual maximum, 16 for a few); the bound keeps a corrupt
// count from allocating absurd state.
const MaxGPUsPerNode = 64

// GPUCapacity is the total number of GPUs of the nodes.
func GPUCapacity(nodes []Node) int {
	n := 0
	for i := range nodes {
		n += nodes[i].GPUs
	}
	return n
}

// InputError is a problem in a node or pod list, located by input name,
// 1-based line (the CSV header is line 1) and field. It wraps ErrBadInput.
type InputError struct {
	Name  string // the file name given to the reader
	Line  int    // 1-based; 0 when the problem is not on one line
	Field string // column or JSON path; empty when the whole line is wrong
	Msg   string
	Err   error // a more specific kind of problem, also wrapped; may be nil
}

func (e *InputError) Error() string {
	if e.Line == 0 {
		s := e.Msg
		if e.Field != "" {
			s = fmt.Sprintf("field %q: %s", e.Field, s)
		}
		if e.Name != "" {
			s = e.Name + ": " + s
		}
		return s
	}
	return untrusted.Format(e.Name, e.Line, e.Field, e.Msg)
}

// Unwrap returns ErrBadInput and, when set, Err.
func (e *InputError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadInput, e.Err}
	}
	return []error{ErrBadInput}
}
