package cluster

// Sample is the cluster measured after one arrival.
type Sample struct {
	ArrivedMilli   int64   // GPU milli asked for by all pods so far, placed or not
	AllocatedMilli int64   // GPU milli allocated
	FragMilli      float64 // F(M), the FGD fragmentation
	IdleMilli      int64   // GPU milli free
	WholeFreeNodes int     // nodes whose GPUs are all fully free
	StrandedNodes  int     // nodes with idle GPU milli that no target task type can use
	PartlyUsed     int     // nodes with some but not all GPU milli allocated
	Failed         int     // pods (units, with gang) failed so far
}

// Meter keeps the measures of a State's nodes (fragmentation for a
// target workload, whole-free, partly used and stranded), and their
// cluster totals, up to date as pods are placed and removed: Touch(i)
// after node i changed, then Sample. The experiment protocols measure
// the cluster after every arrival with it, in O(changed nodes).
type Meter struct {
	s       *State
	target  *Target
	frag    []float64 // per node F_n(M)
	kind    []uint8   // per node: bit 0 whole-free, bit 1 partly used, bit 2 stranded
	fragSum float64
	counts  [3]int
}

// NewMeter returns the meter of s, measured now, for the target workload t.
func NewMeter(s *State, t *Target) *Meter {
	m := &Meter{s: s, target: t, frag: make([]float64, len(s.nodes)), kind: make([]uint8, len(s.nodes))}
	for i := range s.nodes {
		m.frag[i] = t.nodeFrag(s, i)
		m.fragSum += m.frag[i]
		m.kind[i] = m.classify(i)
		m.add(m.kind[i], 1)
	}
	return m
}

func (m *Meter) classify(i int) uint8 {
	s := m.s
	if len(s.gpuFree[i]) == 0 {
		return 0
	}
	var k uint8
	idle, full := s.idle[i], int64(len(s.gpuFree[i]))*MilliGPU
	switch {
	case idle == full:
		k |= 1
	case idle > 0:
		k |= 2
	}
	// Stranded: every target type is blocked (up to rounding), so all idle
	// milli is fragment.
	if idle > 0 && m.frag[i] >= float64(idle)*(1-1e-9) {
		k |= 4
	}
	return k
}

func (m *Meter) add(k uint8, d int) {
	for b := range m.counts {
		if k&(1<<b) != 0 {
			m.counts[b] += d
		}
	}
}

// Touch measures node i again, after a change.
func (m *Meter) Touch(i int) {
	m.fragSum -= m.frag[i]
	m.frag[i] = m.target.nodeFrag(m.s, i)
	m.fragSum += m.frag[i]
	m.add(m.kind[i], -1)
	m.kind[i] = m.classify(i)
	m.add(m.kind[i], 1)
}

// Sample is the cluster now, arrived GPU milli having been asked for.
func (m *Meter) Sample(arrived int64) Sample {
	return Sample{ArrivedMilli: arrived, AllocatedMilli: m.s.usedMilli, IdleMilli: m.s.capMilli - m.s.usedMilli,
		FragMilli: max(m.fragSum, 0), WholeFreeNodes: m.counts[0], PartlyUsed: m.counts[1], StrandedNodes: m.counts[2]}
}
