// Package kube reads a Kubernetes cluster's nodes and pods, as saved by
// `kubectl get nodes,pods -A -o json`, into the cluster model, and inspects
// it: allocatable and requested GPUs per node, whole-free nodes, nodes with
// stranded GPUs, the FGD fragmentation for the cluster's own pod mix, and
// the pending pods that fit nowhere, with the reason.
//
// It parses the JSON itself, with no k8s.io dependency, so the build and
// test graph stays small; a live-cluster source (client-go) can hand it the
// same JSON.
//
// GPU resources it understands:
//   - nvidia.com/gpu (whole GPUs, the NVIDIA device plugin);
//   - the openb / Alibaba GPU-share convention: node allocatable
//     alibabacloud.com/gpu-count, pod annotations alibabacloud.com/gpu-milli
//     (per-GPU share), alibabacloud.com/gpu-count and, when bound,
//     alibabacloud.com/gpu-index ("0-3");
//   - the GPU model from node labels nvidia.com/gpu.product or
//     alibabacloud.com/gpu-card-model, and a pod's allowed models from the
//     annotation alibabacloud.com/gpu-card-model ("T4|P100").
package kube

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Resource names, labels and annotations read.
const (
	ResourceGPU      = "nvidia.com/gpu"
	ResourceGPUCount = "alibabacloud.com/gpu-count"
	AnnoGPUMilli     = "alibabacloud.com/gpu-milli"
	AnnoGPUCount     = "alibabacloud.com/gpu-count"
	AnnoGPUIndex     = "alibabacloud.com/gpu-index"
	LabelGPUModel    = "alibabacloud.com/gpu-card-model"
	LabelGPUProduct  = "nvidia.com/gpu.product"
)

// object is the subset of a Kubernetes Node or Pod read here.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Resources struct {
				Requests map[string]string `json:"requests"`
			} `json:"resources"`
		} `json:"containers"`
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Phase       string            `json:"phase"`
		Allocatable map[string]string `json:"allocatable"`
	} `json:"status"`
}

// PodState is a pod of the snapshot with where it runs.
type PodState struct {
	cluster.Pod
	Namespace string
	Node      string // empty for a pending pod
	GPUIndex  []int  // bound GPUs when the annotation gives them
	Phase     string
}

// Snapshot is a cluster read from kubectl's JSON.
type Snapshot struct {
	Nodes    []cluster.Node // sorted by name
	Pods     []PodState
	Cordoned map[string]bool // nodes marked unschedulable: no new pod fits them
}

// Read parses `kubectl get nodes,pods -o json` output (a List, or a single
// Node or Pod). Completed pods (Succeeded, Failed) are left out: they hold
// no resources. It decodes one object at a time, within MaxReadBytes,
// MaxObjectBytes, MaxNodes and MaxPods, and refuses at its first byte an
// input that is not a JSON object. Errors wrap cluster.ErrBadInput and
// name the object (items[3]) and, for objects, the node or pod; a list
// without a Node also wraps ErrNoNodes.
func Read(r io.Reader, name string) (*Snapshot, error) {
	s := &Snapshot{Cordoned: map[string]bool{}}
	nodeAt := map[string]int{}
	podAt := map[string]int{}
	add := func(field string, i int, o *object) error {
		bad := func(err error) error { return &cluster.InputError{Name: name, Field: field, Msg: err.Error()} }
		switch o.Kind {
		case "Node":
			n, err := node(*o)
			if err != nil {
				return bad(err)
			}
			if j, dup := nodeAt[n.Name]; dup {
				return bad(fmt.Errorf("node %s: listed twice (also items[%d]): save the cluster once, with one kubectl get", untrusted.Quote(n.Name), j))
			}
			if len(s.Nodes) == MaxNodes {
				return bad(fmt.Errorf("more than %d nodes (kube.MaxNodes): ten times the largest cluster Kubernetes supports", MaxNodes))
			}
			nodeAt[n.Name] = i
			s.Nodes = append(s.Nodes, n)
			if o.Spec.Unschedulable {
				s.Cordoned[n.Name] = true
			}
		case "Pod":
			if o.Status.Phase == "Succeeded" || o.Status.Phase == "Failed" {
				return nil
			}
			p, err := pod(*o)
			if err != nil {
				return bad(err)
			}
			key := p.Namespace + "/" + p.Name
			if j, dup := podAt[key]; dup {
				return bad(fmt.Errorf("pod %s: listed twice (also items[%d]): save the cluster once, with one kubectl get", untrusted.Quote(key), j))
			}
			if len(s.Pods) == MaxPods {
				return bad(fmt.Errorf("more than %d pods (kube.MaxPods): ten times the largest cluster Kubernetes supports", MaxPods))
			}
			podAt[key] = i
			s.Pods = append(s.Pods, p)
		case "":
			return &cluster.InputError{Name: name, Field: field + ".kind", Msg: "missing: every object of a kubectl List has a kind (Node and Pod are read, others skipped)"}
		default:
			// Other kinds (a Service in a wider dump) are not ours to read.
		}
		return nil
	}
	kind, single, err := readDocument(r, name, func(i int, o *object) error { return add(fmt.Sprintf("items[%d]", i), i, o) })
	if err != nil {
		return nil, err
	}
	if single != nil {
		if err := add("", 0, single); err != nil {
			return nil, err
		}
	}
	if len(s.Nodes) == 0 {
		what := "no Node"
		if single != nil {
			what = "a single " + kind + ", no Node"
		}
		return nil, &cluster.InputError{Name: name, Err: ErrNoNodes,
			Msg: what + ": inspection needs the nodes with their pods; save both with kubectl get nodes,pods -A -o json"}
	}
	sort.Slice(s.Nodes, func(a, b int) bool { return s.Nodes[a].Name < s.Nodes[b].Name })
	return s, nil
}

func node(o object) (cluster.Node, error) {
	n := cluster.Node{Name: o.Metadata.Name, Model: o.Metadata.Labels[LabelGPUModel]}
	if n.Model == "" {
		n.Model = o.Metadata.Labels[LabelGPUProduct]
	}
	a := o.Status.Allocatable
	var err error
	if n.MilliCPU, err = quantity(a, "cpu", 1000); err != nil {
		return n, err
	}
	if n.MemoryMiB, err = quantity(a, "memory", 1.0/(1<<20)); err != nil {
		return n, err
	}
	if n.Name == "" {
		return n, fmt.Errorf("node without a name (metadata.name)")
	}
	g, err := gpuCount(a, ResourceGPU)
	if err != nil {
		return n, fmt.Errorf("node %s: status.allocatable: %w", untrusted.Quote(n.Name), err)
	}
	if g == 0 {
		if g, err = gpuCount(a, ResourceGPUCount); err != nil {
			return n, fmt.Errorf("node %s: status.allocatable: %w", untrusted.Quote(n.Name), err)
		}
	}
	if g > cluster.MaxGPUsPerNode {
		return n, fmt.Errorf("node %s: %d GPUs, more than %d (cluster.MaxGPUsPerNode)", untrusted.Quote(n.Name), g, cluster.MaxGPUsPerNode)
	}
	n.GPUs = int(g)
	if n.GPUs > 0 && n.Model == "" {
		n.Model = "gpu"
	}
	return n, nil
}

// gpuCount reads a GPU resource, which must be a whole number: Kubernetes
// takes only integer quantities of extended resources such as
// nvidia.com/gpu (the API server refuses "1.5" or "500m"), and a share of
// a GPU is written in the GPU-share annotations instead.
func gpuCount(m map[string]string, key string) (int64, error) {
	v, ok := m[key]
	if !ok {
		return 0, nil
	}
	milli, err := ParseQuantity(v, 1000)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	if milli%1000 != 0 {
		return 0, fmt.Errorf("%s: %s is not a whole number of GPUs (extended resources take integers; a share of a GPU goes in the %s annotation)", key, untrusted.Quote(v), AnnoGPUMilli)
	}
	return milli / 1000, nil
}

func quantity(m map[string]string, key string, scale float64) (int64, error) {
	v, ok := m[key]
	if !ok {
		return 0, nil
	}
	q, err := ParseQuantity(v, scale)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return q, nil
}

func pod(o object) (PodState, error) {
	p := PodState{Pod: cluster.Pod{Name: o.Metadata.Name}, Namespace: o.Metadata.Namespace, Node: o.Spec.NodeName, Phase: o.Status.Phase}
	if p.Name == "" {
		return p, fmt.Errorf("pod without a name (metadata.name)")
	}
	id := untrusted.Quote(p.Namespace + "/" + p.Name)
	var gpus int64
	for k, c := range o.Spec.Containers {
		r := c.Resources.Requests
		cpu, err := quantity(r, "cpu", 1000)
		if err != nil {
			return p, fmt.Errorf("pod %s: spec.containers[%d].resources.requests: %w", id, k, err)
		}
		mem, err := quantity(r, "memory", 1.0/(1<<20))
		if err != nil {
			return p, fmt.Errorf("pod %s: spec.containers[%d].resources.requests: %w", id, k, err)
		}
		g, err := gpuCount(r, ResourceGPU)
		if err != nil {
			return p, fmt.Errorf("pod %s: spec.containers[%d].resources.requests: %w", id, k, err)
		}
		// ParseQuantity keeps each value below MaxInt64/2: two never overflow.
		p.MilliCPU, p.MemoryMiB, gpus = p.MilliCPU+cpu, p.MemoryMiB+mem, gpus+g
		if p.MilliCPU > math.MaxInt64/2 || p.MemoryMiB > math.MaxInt64/2 {
			return p, fmt.Errorf("pod %s: the containers' requests add up to more than any node holds", id)
		}
		if gpus > cluster.MaxGPUsPerNode {
			return p, fmt.Errorf("pod %s: asks for %d %s, more than any node has (at most %d, cluster.MaxGPUsPerNode)", id, gpus, ResourceGPU, cluster.MaxGPUsPerNode)
		}
	}
	ann := o.Metadata.Annotations
	p.NumGPU, p.MilliGPU = int(gpus), cluster.MilliGPU
	if v, ok := ann[AnnoGPUMilli]; ok {
		milli, err := strconv.ParseInt(v, 10, 64)
		if err != nil || milli < 0 || milli > cluster.MilliGPU {
			return p, fmt.Errorf("pod %s: annotation %s=%s: want 0 to 1000", id, AnnoGPUMilli, untrusted.Quote(v))
		}
		p.MilliGPU, p.NumGPU = milli, 1
		if c, ok := ann[AnnoGPUCount]; ok {
			n, err := strconv.Atoi(c)
			if err != nil || n < 0 || n > cluster.MaxGPUsPerNode {
				return p, fmt.Errorf("pod %s: annotation %s=%s: want a GPU count from 0 to %d", id, AnnoGPUCount, untrusted.Quote(c), cluster.MaxGPUsPerNode)
			}
			if n > 1 && milli < cluster.MilliGPU {
				return p, fmt.Errorf("pod %s: annotations %s=%s and %s=%d: only a pod of one GPU shares it; a pod of %d GPUs takes 1000 milli of each",
					id, AnnoGPUCount, c, AnnoGPUMilli, milli, n)
			}
			p.NumGPU = n
		}
	}
	if p.NumGPU == 0 || p.MilliGPU == 0 {
		p.NumGPU, p.MilliGPU = 0, 0
	}
	if spec := ann[LabelGPUModel]; spec != "" {
		for _, m := range strings.Split(spec, "|") {
			if m = strings.TrimSpace(m); m != "" {
				p.GPUSpec = append(p.GPUSpec, m)
			}
		}
	}
	if idx := ann[AnnoGPUIndex]; idx != "" && p.NumGPU > 0 {
		for _, f := range strings.Split(idx, "-") {
			g, err := strconv.Atoi(f)
			if err != nil || g < 0 || g >= cluster.MaxGPUsPerNode {
				return p, fmt.Errorf("pod %s: annotation %s=%s: want GPU indexes like 0-3", id, AnnoGPUIndex, untrusted.Quote(idx))
			}
			if slices.Contains(p.GPUIndex, g) {
				return p, fmt.Errorf("pod %s: annotation %s=%s: GPU %d named twice", id, AnnoGPUIndex, untrusted.Quote(idx), g)
			}
			p.GPUIndex = append(p.GPUIndex, g)
		}
	}
	return p, nil
}
