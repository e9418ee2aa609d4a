package cluster

import (
	"cmp"
	"slices"
	"strings"
)

// TaskType is one kind of task of a target workload, with its share.
type TaskType struct {
	MilliCPU int64   `json:"cpu_milli"`
	NumGPU   int     `json:"num_gpu"`
	MilliGPU int64   `json:"gpu_milli"`
	GPUSpec  string  `json:"gpu_spec,omitempty"` // allowed models joined by "|"; empty for any
	Share    float64 `json:"share"`              // p_m; the shares of a Target sum to 1

	models []string // GPUSpec split
}

// allows reports whether the type may use GPUs of the model.
func (t *TaskType) allows(model string) bool {
	return len(t.models) == 0 || slices.Contains(t.models, model)
}

// Target is the target workload M of the FGD measure: task types with
// their shares p_m.
type Target struct {
	Types []TaskType
}

// DefaultCoverage is the share of pods the target workload covers. The FGD
// artifact keeps the most popular task types until they cover 95% of the
// tasks (podPopularityThreshold: 95), 35 types on the default trace: the
// long tail of rare types adds cost and little signal.
const DefaultCoverage = 0.95

// typeKey identifies a task type.
type typeKey struct {
	cpu   int64
	num   int
	milli int64
	spec  string
}

func keyOf(p *Pod) typeKey {
	return typeKey{p.MilliCPU, p.NumGPU, p.MilliGPU, strings.Join(p.GPUSpec, "|")}
}

// NewTarget builds the target workload of a pod list as the FGD artifact
// does: count the pods of each task type (CPU, GPU count, per-GPU milli,
// allowed models; CPU-only pods included), sort by count (ties: larger
// request first), keep the most popular types until they cover coverage
// (0 < coverage <= 1) of the pods, and renormalise their shares to sum to 1.
func NewTarget(pods []Pod, coverage float64) *Target {
	counts := map[typeKey]int{}
	for i := range pods {
		counts[keyOf(&pods[i])]++
	}
	type kc struct {
		k typeKey
		n int
	}
	all := make([]kc, 0, len(counts))
	for k, n := range counts {
		all = append(all, kc{k, n})
	}
	slices.SortFunc(all, func(a, b kc) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		// Larger request first, as the artifact's reversed Less does.
		if c := cmp.Compare(b.k.cpu, a.k.cpu); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k.milli, a.k.milli); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k.num, a.k.num); c != 0 {
			return c
		}
		return cmp.Compare(b.k.spec, a.k.spec)
	})
	want := coverage * float64(len(pods))
	cum := 0
	t := &Target{}
	for _, e := range all {
		if float64(cum) >= want && len(t.Types) > 0 {
			break
		}
		cum += e.n
		t.Types = append(t.Types, TaskType{MilliCPU: e.k.cpu, NumGPU: e.k.num, MilliGPU: e.k.milli,
			GPUSpec: e.k.spec, Share: float64(e.n)})
	}
	for i := range t.Types {
		t.Types[i].Share /= float64(cum)
		if t.Types[i].GPUSpec != "" {
			t.Types[i].models = strings.Split(t.Types[i].GPUSpec, "|")
		}
	}
	return t
}

// NodeFrag is F_n(M), the expected fragmented GPU milli of a node of the
// model with cpuFree millicores and the GPUs' free milli: for each task
// type m, weighted by its share, the idle GPU milli m could not use. When m
// cannot run on the node at all (no GPU asked, model not allowed, CPU
// short, too few GPUs with its per-GPU share free) all idle milli counts;
// when it can, only the GPUs whose free milli is below its per-GPU share.
func (t *Target) NodeFrag(model string, cpuFree int64, free []int64) float64 {
	var idle int64
	for _, f := range free {
		idle += f
	}
	if idle == 0 {
		return 0
	}
	var frag float64
	for i := range t.Types {
		m := &t.Types[i]
		if m.NumGPU == 0 || cpuFree < m.MilliCPU || !m.allows(model) {
			frag += m.Share * float64(idle)
			continue
		}
		k, small := holding(free, m.MilliGPU)
		if k >= m.NumGPU {
			frag += m.Share * float64(small)
		} else {
			frag += m.Share * float64(idle)
		}
	}
	return frag
}

// holding returns how many GPUs have milli free or more, and the free
// milli of the others.
func holding(free []int64, milli int64) (k int, small int64) {
	for _, f := range free {
		if f >= milli {
			k++
		} else {
			small += f
		}
	}
	return k, small
}

// fragTable is a Target prepared for one State's nodes, so that NodeFrag
// neither compares model names nor recounts a node's GPUs for every task
// type: the types' distinct per-GPU requests (thresholds) are counted in
// one pass over the GPUs. It gives NodeFrag's result bit for bit: the
// same terms added in the same order.
type fragTable struct {
	// byModel is, per model number (State.modelOf), the types in order
	// with whether they may use the model's GPUs at all.
	byModel [][]fragType
	modelOf []int   // per node: model number (State.modelOf)
	thr     []int64 // the distinct per-GPU requests of the types with GPUs, ascending
	// level[f] is the number of thresholds at most f, for f from 0 to
	// MilliGPU (a GPU's free milli; levelOf counts others).
	level []uint16
	// hold is the scratch of one evaluation: per threshold, the GPUs
	// holding it and their free milli.
	hold []gpuSum
}

// gpuSum counts GPUs and adds up their free milli.
type gpuSum struct {
	n   int32
	sum int64
}

// fragType is a TaskType as fragTable reads it.
type fragType struct {
	cpu   int64
	share float64
	num   int32
	thr   int32 // index in fragTable.thr
	gpuOK bool  // the type asks for GPUs and may use the model
}

func newFragTable(t *Target, s *State) *fragTable {
	tab := &fragTable{modelOf: s.modelOf}
	for i := range t.Types {
		if m := &t.Types[i]; m.NumGPU > 0 && !slices.Contains(tab.thr, m.MilliGPU) {
			tab.thr = append(tab.thr, m.MilliGPU)
		}
	}
	slices.Sort(tab.thr)
	tab.level = make([]uint16, MilliGPU+1)
	for f := range tab.level {
		tab.level[f] = uint16(tab.levelOf(int64(f)))
	}
	tab.hold = make([]gpuSum, len(tab.thr))
	for _, model := range s.models {
		row := make([]fragType, len(t.Types))
		for i := range t.Types {
			m := &t.Types[i]
			row[i] = fragType{cpu: m.MilliCPU, share: m.Share, num: int32(m.NumGPU), gpuOK: m.NumGPU > 0 && m.allows(model)}
			if m.NumGPU > 0 {
				row[i].thr = int32(slices.Index(tab.thr, m.MilliGPU))
			}
		}
		tab.byModel = append(tab.byModel, row)
	}
	return tab
}

// levelOf is the number of thresholds at most f.
func (tab *fragTable) levelOf(f int64) int {
	n, _ := slices.BinarySearch(tab.thr, f+1) // f+1 cannot overflow: f is a GPU's milli
	return n
}

// frag is NodeFrag for node n's model, with cpuFree and free.
func (tab *fragTable) frag(n int, cpuFree int64, free []int64) float64 {
	var idle int64
	for _, f := range free {
		idle += f
	}
	if idle == 0 {
		return 0
	}
	// A GPU holds the thresholds below its level: count each GPU at its
	// highest (level-1), then add up from the top down.
	hold := tab.hold
	clear(hold)
	for _, f := range free {
		l := 0
		if uint64(f) < uint64(len(tab.level)) {
			l = int(tab.level[f])
		} else {
			l = tab.levelOf(f)
		}
		if l > 0 {
			h := &hold[l-1]
			h.n++
			h.sum += f
		}
	}
	for j := len(hold) - 2; j >= 0; j-- {
		hold[j].n += hold[j+1].n
		hold[j].sum += hold[j+1].sum
	}
	var frag float64
	types := tab.byModel[tab.modelOf[n]]
	for k := range types {
		// The same terms, in the same order, as NodeFrag: all idle milli
		// when the type cannot run here, else the GPUs' milli below its
		// share (idle less what the GPUs holding it have free).
		m := &types[k]
		if !m.gpuOK || cpuFree < m.cpu {
			frag += m.share * float64(idle)
			continue
		}
		if h := &hold[m.thr]; h.n >= m.num {
			frag += m.share * float64(idle-h.sum)
		} else {
			frag += m.share * float64(idle)
		}
	}
	return frag
}

// nodeFrag is NodeFrag of node i in its current state (memoised by the
// state per node version).
func (t *Target) nodeFrag(s *State, i int) float64 { return s.nodeFrag(t, i) }

// Frag is the cluster's fragmentation F(M), in GPU milli: the sum of
// NodeFrag over the nodes.
func (t *Target) Frag(s *State) float64 {
	var f float64
	for i := range s.nodes {
		f += t.nodeFrag(s, i)
	}
	return f
}
