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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
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
// no resources.
func Read(r io.Reader, name string) (*Snapshot, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var list struct {
		Kind  string   `json:"kind"`
		Items []object `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, &cluster.InputError{Name: name, Msg: err.Error()}
	}
	items := list.Items
	if !strings.HasSuffix(list.Kind, "List") {
		var o object
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&o); err != nil {
			return nil, &cluster.InputError{Name: name, Msg: err.Error()}
		}
		items = []object{o}
	}
	s := &Snapshot{Cordoned: map[string]bool{}}
	for i, o := range items {
		field := fmt.Sprintf("items[%d]", i)
		switch o.Kind {
		case "Node":
			n, err := node(o)
			if err != nil {
				return nil, &cluster.InputError{Name: name, Field: field, Msg: err.Error()}
			}
			s.Nodes = append(s.Nodes, n)
			if o.Spec.Unschedulable {
				s.Cordoned[n.Name] = true
			}
		case "Pod":
			if o.Status.Phase == "Succeeded" || o.Status.Phase == "Failed" {
				continue
			}
			p, err := pod(o)
			if err != nil {
				return nil, &cluster.InputError{Name: name, Field: field, Msg: err.Error()}
			}
			s.Pods = append(s.Pods, p)
		default:
			// Other kinds (a Service in a wider dump) are not ours to read.
		}
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
	g, err := quantity(a, ResourceGPU, 1)
	if err != nil {
		return n, err
	}
	if g == 0 {
		if g, err = quantity(a, ResourceGPUCount, 1); err != nil {
			return n, err
		}
	}
	if g > cluster.MaxGPUsPerNode {
		return n, fmt.Errorf("node %s: %d GPUs, more than %d", n.Name, g, cluster.MaxGPUsPerNode)
	}
	n.GPUs = int(g)
	if n.GPUs > 0 && n.Model == "" {
		n.Model = "gpu"
	}
	if n.Name == "" {
		return n, fmt.Errorf("node without a name")
	}
	return n, nil
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
	var gpus int64
	for _, c := range o.Spec.Containers {
		r := c.Resources.Requests
		cpu, err := quantity(r, "cpu", 1000)
		if err != nil {
			return p, err
		}
		mem, err := quantity(r, "memory", 1.0/(1<<20))
		if err != nil {
			return p, err
		}
		g, err := quantity(r, ResourceGPU, 1)
		if err != nil {
			return p, err
		}
		p.MilliCPU, p.MemoryMiB, gpus = p.MilliCPU+cpu, p.MemoryMiB+mem, gpus+g
	}
	ann := o.Metadata.Annotations
	p.NumGPU, p.MilliGPU = int(gpus), cluster.MilliGPU
	if v, ok := ann[AnnoGPUMilli]; ok {
		milli, err := strconv.ParseInt(v, 10, 64)
		if err != nil || milli < 0 || milli > cluster.MilliGPU {
			return p, fmt.Errorf("pod %s: annotation %s=%q: want 0 to 1000", p.Name, AnnoGPUMilli, v)
		}
		p.MilliGPU, p.NumGPU = milli, 1
		if c, ok := ann[AnnoGPUCount]; ok {
			n, err := strconv.Atoi(c)
			if err != nil || n < 0 || n > cluster.MaxGPUsPerNode {
				return p, fmt.Errorf("pod %s: annotation %s=%q: want a GPU count", p.Name, AnnoGPUCount, c)
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
			if err != nil || g < 0 {
				return p, fmt.Errorf("pod %s: annotation %s=%q: want GPU indexes like 0-3", p.Name, AnnoGPUIndex, idx)
			}
			p.GPUIndex = append(p.GPUIndex, g)
		}
	}
	return p, nil
}
