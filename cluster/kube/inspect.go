package kube

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
)

// NodeReport is one GPU node as Inspect sees it.
type NodeReport struct {
	Name           string  `json:"name"`
	Model          string  `json:"model"`
	GPUs           int     `json:"gpus"`
	RequestedMilli int64   `json:"requested_gpu_milli"` // GPU milli of the pods bound to it
	WholeFreeGPUs  int     `json:"whole_free_gpus"`
	FreeCPUMilli   int64   `json:"free_cpu_milli"`
	FreeMemoryMiB  int64   `json:"free_memory_mib"`
	Pods           int     `json:"pods"`
	FragMilli      float64 `json:"frag_milli"` // FGD fragmentation for the cluster's pod mix
	Stranded       bool    `json:"stranded"`   // idle GPUs no task type of the mix can use
	Cordoned       bool    `json:"cordoned,omitempty"`
}

// Pending is a pod that is not bound to a node.
type Pending struct {
	Pod    string `json:"pod"` // namespace/name
	Shape  string `json:"shape"`
	Fits   int    `json:"fits_nodes"` // schedulable nodes it fits now
	Reason string `json:"reason,omitempty"`
}

// Report is the result of Inspect.
type Report struct {
	Nodes           int          `json:"nodes"`
	GPUNodes        int          `json:"gpu_nodes"`
	GPUs            int          `json:"gpus"`
	RequestedMilli  int64        `json:"requested_gpu_milli"`
	WholeFreeNodes  int          `json:"whole_free_nodes"`
	PartlyUsedNodes int          `json:"partly_used_nodes"`
	StrandedNodes   int          `json:"stranded_nodes"`
	FragMilli       float64      `json:"frag_milli"`
	FragTotal       float64      `json:"frag_total"` // FragMilli / GPU capacity
	FragRate        float64      `json:"frag_rate"`  // FragMilli / idle GPU milli
	TaskTypes       int          `json:"task_types"` // in the target workload
	PerNode         []NodeReport `json:"per_node"`
	Pending         []Pending    `json:"pending"`
	// Unplaceable lists bound pods that do not fit their node's free
	// resources as this package models them (an oversubscribed or
	// inconsistent snapshot); they are left out of the totals.
	Unplaceable []string `json:"unplaceable,omitempty"`
}

// Inspect places the bound pods of s on its nodes, measures the GPU nodes
// with the FGD fragmentation of the snapshot's own pod mix (the task types
// covering coverage of its pods), and checks where each pending pod could
// go.
func Inspect(s *Snapshot, coverage float64) *Report {
	st := cluster.NewState(s.Nodes)
	index := make(map[string]int, len(s.Nodes))
	for i, n := range s.Nodes {
		index[n.Name] = i
	}
	fit, _ := cluster.NewPolicy("bestfit", nil)
	rep := &Report{Nodes: len(s.Nodes), GPUs: cluster.GPUCapacity(s.Nodes), PerNode: []NodeReport{}, Pending: []Pending{}}
	podsOn := make([]int, len(s.Nodes))
	var all []cluster.Pod
	for _, p := range s.Pods {
		all = append(all, p.Pod)
		if p.Node == "" {
			continue
		}
		i, ok := index[p.Node]
		pod := p.Pod
		if !ok {
			rep.Unplaceable = append(rep.Unplaceable, fmt.Sprintf("%s/%s: node %s not in the snapshot", p.Namespace, p.Name, p.Node))
			continue
		}
		gpus := p.GPUIndex
		if len(gpus) != pod.NumGPU {
			gpus = nil
		}
		if gpus == nil && st.Fits(&pod, i) {
			gpus = fit.GPUs(st, &pod, i, nil)
		}
		if err := st.Place(&pod, cluster.Placement{Node: i, GPUs: gpus}); err != nil {
			rep.Unplaceable = append(rep.Unplaceable, fmt.Sprintf("%s/%s on %s: %s", p.Namespace, p.Name, p.Node, why(st, &pod, i)))
			continue
		}
		podsOn[i]++
	}
	// The FGD measure needs the cluster's own pod mix: without pods there
	// are no task types, nothing is fragmented, and every node is still
	// listed and counted.
	var target *cluster.Target
	if len(all) > 0 {
		target = cluster.NewTarget(all, coverage)
		rep.TaskTypes = len(target.Types)
	}
	for i, n := range s.Nodes {
		if n.GPUs == 0 {
			continue
		}
		rep.GPUNodes++
		free := st.FreeGPUs(i)
		idle := st.FreeGPUMilli(i)
		frag := 0.0
		if target != nil {
			frag = target.NodeFrag(n.Model, st.FreeCPU(i), free)
		}
		nr := NodeReport{Name: n.Name, Model: n.Model, GPUs: n.GPUs, RequestedMilli: int64(n.GPUs)*cluster.MilliGPU - idle,
			WholeFreeGPUs: st.WholeFreeGPUs(i), FreeCPUMilli: st.FreeCPU(i), FreeMemoryMiB: st.FreeMemory(i), Pods: podsOn[i],
			FragMilli: frag, Stranded: target != nil && idle > 0 && frag >= float64(idle)*(1-1e-9), Cordoned: s.Cordoned[n.Name]}
		rep.PerNode = append(rep.PerNode, nr)
		rep.RequestedMilli += nr.RequestedMilli
		rep.FragMilli += frag
		switch {
		case idle == int64(n.GPUs)*cluster.MilliGPU:
			rep.WholeFreeNodes++
		case idle > 0:
			rep.PartlyUsedNodes++
		}
		if nr.Stranded {
			rep.StrandedNodes++
		}
	}
	if rep.GPUs > 0 {
		rep.FragTotal = rep.FragMilli / float64(rep.GPUs*cluster.MilliGPU)
		if idle := int64(rep.GPUs)*cluster.MilliGPU - rep.RequestedMilli; idle > 0 {
			rep.FragRate = rep.FragMilli / float64(idle)
		}
	}
	for _, p := range s.Pods {
		if p.Node != "" {
			continue
		}
		pod := p.Pod
		pd := Pending{Pod: p.Namespace + "/" + p.Name, Shape: shape(&pod)}
		reasons := map[string]int{}
		for i, n := range s.Nodes {
			switch {
			case s.Cordoned[n.Name]:
				reasons["node cordoned"]++
			case st.Fits(&pod, i):
				pd.Fits++
			default:
				reasons[why(st, &pod, i)]++
			}
		}
		if pd.Fits == 0 {
			pd.Reason = summarise(reasons)
		}
		rep.Pending = append(rep.Pending, pd)
	}
	return rep
}

// why says which filter node i fails for the pod, in kube-scheduler's words
// where it has them.
func why(st *cluster.State, p *cluster.Pod, i int) string {
	n := st.Nodes()[i]
	switch {
	case st.FreeCPU(i) < p.MilliCPU:
		return "Insufficient cpu"
	case st.FreeMemory(i) < p.MemoryMiB:
		return "Insufficient memory"
	case p.NumGPU == 0:
		return "fits"
	case n.GPUs == 0:
		return "no GPUs"
	case !p.AllowsModel(n.Model):
		return "GPU model not allowed"
	case p.NumGPU > n.GPUs:
		return "fewer GPUs than asked"
	case p.Sharing():
		return "no GPU with the share free"
	}
	return "Insufficient " + ResourceGPU + " (not enough whole GPUs free)"
}

func summarise(reasons map[string]int) string {
	type rc struct {
		r string
		n int
	}
	var list []rc
	for r, n := range reasons {
		list = append(list, rc{r, n})
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].n != list[b].n {
			return list[a].n > list[b].n
		}
		return list[a].r < list[b].r
	})
	parts := make([]string, len(list))
	for k, e := range list {
		parts[k] = fmt.Sprintf("%d %s", e.n, e.r)
	}
	return "0/" + fmt.Sprint(total(reasons)) + " nodes fit: " + strings.Join(parts, ", ")
}

func total(m map[string]int) int {
	t := 0
	for _, n := range m {
		t += n
	}
	return t
}

func shape(p *cluster.Pod) string {
	s := fmt.Sprintf("cpu %dm, memory %dMi", p.MilliCPU, p.MemoryMiB)
	switch {
	case p.Sharing():
		s += fmt.Sprintf(", %d milli of one GPU", p.MilliGPU)
	case p.NumGPU > 0:
		s += fmt.Sprintf(", %d GPU", p.NumGPU)
		if p.NumGPU > 1 {
			s += "s"
		}
	}
	if len(p.GPUSpec) > 0 {
		s += " (" + strings.Join(p.GPUSpec, "|") + ")"
	}
	return s
}
