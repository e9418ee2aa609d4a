package cluster

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gpufrag/gpufrag/internal/invariants"
)

// State is what is free on every node of a cluster, and which pods run.
//
// Invariants (checked by CheckInvariants):
//   - 0 <= free CPU <= node CPU, 0 <= free memory <= node memory;
//   - every GPU has 0 <= free <= MilliGPU milli;
//   - usedMilli == sum over GPUs of (MilliGPU - free); idle[i] == sum of
//     node i's free milli; whole[i] and most[i] are node i's fully free
//     GPUs and the largest free milli of one (gpuSummary);
//   - a node's version changes whenever anything on it changes, so a score
//     cached with a version is valid while the version is unchanged.
type State struct {
	nodes   []Node
	cpuFree []int64
	memFree []int64
	gpuFree [][]int64 // per node, per GPU index: free milli; the slices share one backing array
	idle    []int64   // per node: sum of gpuFree[i]
	// whole and most summarise each node's GPUs for the filter: the
	// number of fully free GPUs, and the largest free milli of one GPU
	// (0 without GPUs), so that a pod's GPU check reads two numbers
	// instead of every GPU (gpuFits); kept by Place and Remove.
	whole []int32
	most  []int64
	// The GPU pods per node by request shape (tag -1: sharing, n: whole
	// n-GPU pods), for the GPU clustering policy: tagCount holds
	// tagSlots counts per node (slot 0 sharing, slot n n-GPU pods),
	// tagMore the shapes of more GPUs (nil until used), tagKinds the
	// number of shapes with pods.
	tagCount  []int32
	tagMore   []map[int]int32
	tagKinds  []int32
	version   []uint32
	usedMilli int64 // allocated GPU milli over the cluster
	capMilli  int64 // GPU capacity in milli
	// changes lists the nodes Place and Remove changed, oldest first, so a
	// Scheduler updates what it keeps per node for those nodes only;
	// changesBase is the sequence number of changes[0] (see changesSince).
	changes     []int32
	changesBase uint64
	// last is, per node, the sequence number of its latest change plus
	// one (0: never changed): a reader replaying the log from seq skips
	// every entry of node i but the one at last[i]-1, and one that the
	// log no longer reaches finds the nodes changed since seq here.
	last []uint64
	// fragOf, frag and fragVer memoise the fragmentation of each node, at
	// its version plus one (0: none), for the target last asked: the meter
	// and the FGD policies ask for the same node's F_n(M) once per class of
	// pods between two changes of the node.
	fragOf  *Target
	fragTab *fragTable // fragOf prepared for the nodes
	// models are the nodes' distinct GPU models, modelOf each node's
	// number among them.
	models  []string
	modelOf []int
	frag    []float64
	fragVer []uint32
}

// Placement says where a pod runs: the node index and, for a pod with GPUs,
// the GPU indexes on that node.
type Placement struct {
	Node int
	GPUs []int
}

// NewState returns an empty cluster of the nodes; it keeps the slice.
func NewState(nodes []Node) *State {
	s := &State{
		nodes:    nodes,
		cpuFree:  make([]int64, len(nodes)),
		memFree:  make([]int64, len(nodes)),
		gpuFree:  make([][]int64, len(nodes)),
		tagCount: make([]int32, len(nodes)*tagSlots),
		tagMore:  make([]map[int]int32, len(nodes)),
		tagKinds: make([]int32, len(nodes)),
		version:  make([]uint32, len(nodes)),
		last:     make([]uint64, len(nodes)),
		idle:     make([]int64, len(nodes)),
		whole:    make([]int32, len(nodes)),
		most:     make([]int64, len(nodes)),
	}
	all := make([]int64, GPUCapacity(nodes))
	for i := range all {
		all[i] = MilliGPU
	}
	off := 0
	s.modelOf = make([]int, len(nodes))
	for i, n := range nodes {
		m := slices.Index(s.models, n.Model)
		if m < 0 {
			m = len(s.models)
			s.models = append(s.models, n.Model)
		}
		s.modelOf[i] = m
		s.cpuFree[i], s.memFree[i] = n.MilliCPU, n.MemoryMiB
		s.gpuFree[i] = all[off : off+n.GPUs : off+n.GPUs]
		s.idle[i] = int64(n.GPUs) * MilliGPU
		s.summarise(i)
		off += n.GPUs
	}
	s.capMilli = int64(len(all)) * MilliGPU
	return s
}

// Clone returns an independent copy.
func (s *State) Clone() *State {
	c := NewState(s.nodes)
	copy(c.cpuFree, s.cpuFree)
	copy(c.memFree, s.memFree)
	for i := range s.gpuFree {
		copy(c.gpuFree[i], s.gpuFree[i])
		if s.tagMore[i] != nil {
			c.tagMore[i] = maps.Clone(s.tagMore[i])
		}
	}
	copy(c.tagCount, s.tagCount)
	copy(c.tagKinds, s.tagKinds)
	copy(c.version, s.version)
	copy(c.last, s.last) // all before c's log: a scheduler of c starts with a full build
	copy(c.idle, s.idle)
	copy(c.whole, s.whole)
	copy(c.most, s.most)
	c.changesBase = s.changesBase + uint64(len(s.changes)) // a fresh log: schedulers of s do not follow c
	c.usedMilli = s.usedMilli
	return c
}

// Nodes returns the nodes; callers must not modify them.
func (s *State) Nodes() []Node { return s.nodes }

// FreeCPU is the free CPU of node i in millicores.
func (s *State) FreeCPU(i int) int64 { return s.cpuFree[i] }

// FreeMemory is the free memory of node i in MiB.
func (s *State) FreeMemory(i int) int64 { return s.memFree[i] }

// FreeGPUs returns the free milli of each GPU of node i; callers must not
// modify it.
func (s *State) FreeGPUs(i int) []int64 { return s.gpuFree[i] }

// FreeGPUMilli is the free GPU milli of node i.
func (s *State) FreeGPUMilli(i int) int64 { return s.idle[i] }

// WholeFreeGPUs is the number of fully free GPUs on node i.
func (s *State) WholeFreeGPUs(i int) int { return int(s.whole[i]) }

// summarise sets node i's GPU summary (whole, most) from its GPUs.
func (s *State) summarise(i int) { s.whole[i], s.most[i] = gpuSummary(s.gpuFree[i]) }

// gpuSummary is the number of fully free GPUs and the largest free milli.
func gpuSummary(free []int64) (whole int32, most int64) {
	for _, f := range free {
		if f == MilliGPU {
			whole++
		}
		most = max(most, f)
	}
	return whole, most
}

// Version changes whenever node i changes.
func (s *State) Version(i int) uint32 { return s.version[i] }

// UsedGPUMilli is the GPU milli allocated over the cluster.
func (s *State) UsedGPUMilli() int64 { return s.usedMilli }

// CapacityGPUMilli is the cluster's GPU capacity in milli.
func (s *State) CapacityGPUMilli() int64 { return s.capMilli }

// tagOf is the clustering key of a GPU pod: -1 for a sharing pod, else
// its GPU count.
func tagOf(p *Pod) int {
	if p.Sharing() {
		return -1
	}
	return p.NumGPU
}

// Tags returns how many GPU pods of each shape run on node i (key -1:
// sharing pods; n: pods of n whole GPUs); nil when none.
func (s *State) Tags(i int) map[int]int32 {
	if s.tagKinds[i] == 0 {
		return nil
	}
	out := maps.Clone(s.tagMore[i])
	if out == nil {
		out = map[int]int32{}
	}
	for slot, n := range s.tagCount[i*tagSlots : (i+1)*tagSlots] {
		if tag := slot; n > 0 {
			if slot == 0 {
				tag = -1 // sharing pods
			}
			out[tag] = n
		}
	}
	return out
}

// tagSlots is the number of shapes whose pods a node counts in tagCount:
// sharing pods and pods of 1 to 8 whole GPUs.
const tagSlots = 9

// tagPods is the number of pods of shape tag (tagOf) on node i.
func (s *State) tagPods(i, tag int) int32 {
	if slot := max(tag, 0); slot < tagSlots {
		return s.tagCount[i*tagSlots+slot]
	}
	return s.tagMore[i][tag]
}

// addTag adds d pods of shape tag to node i's counts (a count below one
// is none).
func (s *State) addTag(i, tag int, d int32) {
	var before, after int32
	if slot := max(tag, 0); slot < tagSlots {
		n := &s.tagCount[i*tagSlots+slot]
		before = *n
		after = max(before+d, 0)
		*n = after
	} else {
		m := s.tagMore[i]
		if m == nil {
			m = map[int]int32{}
			s.tagMore[i] = m
		}
		before = m[tag]
		if after = max(before+d, 0); after > 0 {
			m[tag] = after
		} else {
			delete(m, tag)
		}
	}
	switch {
	case before <= 0 && after > 0:
		s.tagKinds[i]++
	case before > 0 && after <= 0:
		s.tagKinds[i]--
	}
}

// Fits is the filter: node i has the pod's CPU and memory free and, for a
// pod with GPUs, the node's model is allowed and at least NumGPU of its
// GPUs each have MilliGPU free (whole-GPU pods need fully free GPUs).
func (s *State) Fits(p *Pod, i int) bool {
	return s.fitsModel(p, i, p.NumGPU == 0 || p.AllowsModel(s.nodes[i].Model))
}

// fitsModel is Fits with the model check's result given.
func (s *State) fitsModel(p *Pod, i int, modelOK bool) bool {
	return s.cpuFree[i] >= p.MilliCPU && s.memFree[i] >= p.MemoryMiB &&
		(p.NumGPU == 0 || modelOK && s.gpuFits(p, i))
}

// gpuFits reports whether at least NumGPU of node i's GPUs each have
// MilliGPU free, from the node's summary where the pod's shape allows
// (every pod the readers accept: whole GPUs, or one GPU shared): a GPU
// holds a whole-GPU share when fully free (no GPU has more than MilliGPU
// free), and one GPU holds a share when the freest does.
func (s *State) gpuFits(p *Pod, i int) bool {
	switch {
	case p.MilliGPU == MilliGPU:
		return int(s.whole[i]) >= p.NumGPU
	case p.NumGPU == 1 && p.MilliGPU > 0:
		return s.most[i] >= p.MilliGPU
	}
	return countAtLeast(s.gpuFree[i], p.MilliGPU) >= p.NumGPU
}

func countAtLeast(free []int64, milli int64) int {
	n := 0
	for _, f := range free {
		if f >= milli {
			n++
		}
	}
	return n
}

// Place runs the pod on pl.Node using the GPUs pl.GPUs. It returns an
// error, and changes nothing, when they cannot hold the pod.
func (s *State) Place(p *Pod, pl Placement) error {
	i := pl.Node
	if i < 0 || i >= len(s.nodes) {
		return fmt.Errorf("cluster: place %s: no node %d", p.Name, i)
	}
	if !s.Fits(p, i) || len(pl.GPUs) != p.NumGPU {
		return fmt.Errorf("cluster: place %s: does not fit node %s", p.Name, s.nodes[i].Name)
	}
	for k, g := range pl.GPUs {
		if g < 0 || g >= len(s.gpuFree[i]) || s.gpuFree[i][g] < p.MilliGPU || slices.Contains(pl.GPUs[:k], g) {
			return fmt.Errorf("cluster: place %s: GPU %d of node %s cannot hold %d milli", p.Name, g, s.nodes[i].Name, p.MilliGPU)
		}
	}
	s.cpuFree[i] -= p.MilliCPU
	s.memFree[i] -= p.MemoryMiB
	for _, g := range pl.GPUs {
		s.gpuFree[i][g] -= p.MilliGPU
	}
	s.summarise(i)
	s.idle[i] -= p.GPUMilli()
	s.usedMilli += p.GPUMilli()
	if p.NumGPU > 0 {
		s.addTag(i, tagOf(p), 1)
	}
	s.changed(i)
	if invariants.Enabled {
		s.mustCheckNode(i)
	}
	return nil
}

// Remove undoes Place of the pod at pl; the caller guarantees it was placed
// there.
func (s *State) Remove(p *Pod, pl Placement) {
	i := pl.Node
	s.cpuFree[i] += p.MilliCPU
	s.memFree[i] += p.MemoryMiB
	for _, g := range pl.GPUs {
		s.gpuFree[i][g] += p.MilliGPU
	}
	s.summarise(i)
	s.idle[i] += p.GPUMilli()
	s.usedMilli -= p.GPUMilli()
	if p.NumGPU > 0 {
		s.addTag(i, tagOf(p), -1)
	}
	s.changed(i)
	if invariants.Enabled {
		s.mustCheckNode(i)
	}
}

// minChangeLog is the least number of changes the log keeps, for small
// clusters; see changed.
const minChangeLog = 1024

// changed records a change of node i: a new version, and an entry in the
// change log. The log keeps at least the last max(nodes, minChangeLog)
// changes and at most twice that (the older half is dropped when it is
// full, so appending costs O(1) amortised): a reader further behind must
// look at every node, which costs no more than replaying that many
// changes would.
func (s *State) changed(i int) {
	s.version[i]++
	keep := max(len(s.nodes), minChangeLog)
	if len(s.changes) >= 2*keep {
		n := copy(s.changes, s.changes[keep:])
		s.changes = s.changes[:n]
		s.changesBase += uint64(keep)
	}
	s.changes = append(s.changes, int32(i))
	s.last[i] = s.changeSeq() // the sequence number of this change plus one
}

// nodeFrag is t.NodeFrag of node i in its current state, memoised.
func (s *State) nodeFrag(t *Target, i int) float64 {
	s.useTarget(t)
	if s.fragVer[i] != s.version[i]+1 {
		s.frag[i], s.fragVer[i] = s.fragTab.frag(i, s.cpuFree[i], s.gpuFree[i]), s.version[i]+1
	}
	return s.frag[i]
}

// fragWith is t.NodeFrag of node i's model with cpuFree and free instead
// of the node's own: the node after a placement the FGD policies weigh.
func (s *State) fragWith(t *Target, i int, cpuFree int64, free []int64) float64 {
	s.useTarget(t)
	return s.fragTab.frag(i, cpuFree, free)
}

// useTarget makes t the target the memo and table are for.
func (s *State) useTarget(t *Target) {
	if s.fragOf != t {
		s.fragOf, s.fragTab = t, newFragTable(t, s)
		s.frag, s.fragVer = make([]float64, len(s.nodes)), make([]uint32, len(s.nodes))
	}
}

// changeSeq is the sequence number of the next change.
func (s *State) changeSeq() uint64 { return s.changesBase + uint64(len(s.changes)) }

// changesSince returns the nodes changed from sequence number seq on
// (repeats possible: isLatest tells a node's latest change); ok is false
// when the log no longer reaches back to seq and the caller must look at
// every node (changedSince).
func (s *State) changesSince(seq uint64) (nodes []int32, ok bool) {
	if seq < s.changesBase {
		return nil, false
	}
	return s.changes[seq-s.changesBase:], true
}

// isLatest reports whether the change of node i at sequence number seq
// is its latest one.
func (s *State) isLatest(i int32, seq uint64) bool { return s.last[i] == seq+1 }

// changedSince reports whether node i changed from sequence number seq on.
func (s *State) changedSince(i int, seq uint64) bool { return s.last[i] > seq }

// mustCheckNode panics when node i breaks an invariant: a broken invariant
// is a bug (Remove of a pod that was not placed there, say). It is O(GPUs),
// cheap enough to run after every change under -tags invariants.
func (s *State) mustCheckNode(i int) {
	if err := s.checkNode(i); err != nil {
		panic(err)
	}
}

func (s *State) checkNode(i int) error {
	n := &s.nodes[i]
	if s.cpuFree[i] < 0 || s.cpuFree[i] > n.MilliCPU {
		return fmt.Errorf("cluster: node %s: free CPU %d outside [0, %d]", n.Name, s.cpuFree[i], n.MilliCPU)
	}
	if s.memFree[i] < 0 || s.memFree[i] > n.MemoryMiB {
		return fmt.Errorf("cluster: node %s: free memory %d outside [0, %d]", n.Name, s.memFree[i], n.MemoryMiB)
	}
	var idle int64
	for g, f := range s.gpuFree[i] {
		if f < 0 || f > MilliGPU {
			return fmt.Errorf("cluster: node %s GPU %d: free %d outside [0, %d]", n.Name, g, f, MilliGPU)
		}
		idle += f
	}
	if idle != s.idle[i] {
		return fmt.Errorf("cluster: node %s: idle %d, recount %d", n.Name, s.idle[i], idle)
	}
	if w, m := gpuSummary(s.gpuFree[i]); w != s.whole[i] || m != s.most[i] {
		return fmt.Errorf("cluster: node %s: %d whole free GPUs and %d milli on the freest, recount %d and %d", n.Name, s.whole[i], s.most[i], w, m)
	}
	return nil
}

// CheckInvariants returns an error describing the first broken invariant.
func (s *State) CheckInvariants() error {
	var used int64
	for i := range s.nodes {
		if err := s.checkNode(i); err != nil {
			return err
		}
		used += int64(len(s.gpuFree[i]))*MilliGPU - s.idle[i]
	}
	if used != s.usedMilli {
		return fmt.Errorf("cluster: used GPU milli %d, recount %d", s.usedMilli, used)
	}
	return nil
}

// bestFitGPUs picks GPUs as the GPU-sharing scheduler does by default: a
// sharing pod takes the GPU with the least free milli that still holds it
// (lowest index among equals); a whole-GPU pod takes the fully free GPUs of
// lowest index. The node must fit the pod.
func bestFitGPUs(free []int64, p *Pod) []int {
	if p.NumGPU == 0 {
		return nil
	}
	if p.Sharing() {
		best := -1
		for g, f := range free {
			if f >= p.MilliGPU && (best < 0 || f < free[best]) {
				best = g
			}
		}
		return []int{best}
	}
	return firstFreeGPUs(free, p)
}

// firstFreeGPUs returns the lowest indexes of GPUs that each hold the pod's
// per-GPU share, NumGPU of them.
func firstFreeGPUs(free []int64, p *Pod) []int {
	out := make([]int, 0, p.NumGPU)
	for g, f := range free {
		if len(out) == p.NumGPU {
			break
		}
		if f >= p.MilliGPU {
			out = append(out, g)
		}
	}
	return out
}
