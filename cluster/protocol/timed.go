package protocol

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gpufrag/gpufrag/cluster"
)

// TimedPoint is the cluster after all events at one time of a Timed run.
type TimedPoint struct {
	Time           int64   `json:"time_s"`
	Running        int     `json:"running"`
	AllocRatio     float64 `json:"alloc_ratio"`
	FragTotal      float64 `json:"frag_total"`
	WholeFreeNodes int     `json:"whole_free_nodes"`
	Failed         int     `json:"failed"` // pods failed so far
}

// TimedRun is one policy replaying pods by their creation and deletion
// times.
type TimedRun struct {
	Policy string       `json:"policy"`
	Seed   uint64       `json:"seed"`
	Pods   int          `json:"pods"`
	Failed int          `json:"failed"`
	Points []TimedPoint `json:"points"`
	// MeanAllocRatio and MeanFragTotal are averages over time (each value
	// weighted by how long it held), from the first to the last event.
	MeanAllocRatio float64 `json:"mean_alloc_ratio"`
	MeanFragTotal  float64 `json:"mean_frag_total"`
	PeakAllocRatio float64 `json:"peak_alloc_ratio"`
}

// Timed replays pods by time instead of the FGD protocol: each pod arrives
// at its creation time and, if it was placed, leaves at its deletion time
// (never, when 0 or not after creation). At equal times departures come
// before arrivals, each in name order; a pod that fits nowhere fails and is
// not retried. Every pod must have times (Pod.HasTimes): the 11-column
// openb lists and our JSON form carry them. seed drives the policy's random
// choices and the tie-break order, as in Experiment.
func Timed(nodes []cluster.Node, pods []cluster.Pod, spec string, seed uint64, opts Options) (*TimedRun, error) {
	opts = opts.withDefaults()
	if cluster.GPUCapacity(nodes) == 0 || len(pods) == 0 {
		return nil, fmt.Errorf("%w: %d nodes with %d GPUs, %d pods", cluster.ErrEmpty, len(nodes), cluster.GPUCapacity(nodes), len(pods))
	}
	for i := range pods {
		if !pods[i].HasTimes {
			return nil, fmt.Errorf("%w: pod %s has no creation time; the time-based mode needs them", cluster.ErrBadInput, pods[i].Name)
		}
	}
	target := cluster.NewTarget(pods, opts.Coverage)
	policy, err := cluster.NewPolicy(spec, target)
	if err != nil {
		return nil, err
	}
	type event struct {
		t      int64
		depart bool
		pod    int
	}
	evs := make([]event, 0, 2*len(pods))
	for i := range pods {
		evs = append(evs, event{pods[i].Creation, false, i})
		if pods[i].Deletion > pods[i].Creation {
			evs = append(evs, event{pods[i].Deletion, true, i})
		}
	}
	slices.SortFunc(evs, func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.depart != b.depart {
			if a.depart {
				return -1
			}
			return 1
		}
		return cmp.Compare(pods[a.pod].Name, pods[b.pod].Name)
	})
	s := cluster.NewState(nodes)
	sc := cluster.NewScheduler(s, policy, rand.New(rand.NewPCG(seed, streamScheduler)))
	sc.RandomTies = opts.RandomTies
	sc.SetOrder(rand.New(rand.NewPCG(seed, streamNodeOrder)).Perm(len(nodes)))
	m := cluster.NewMeter(s, target)
	placed := make([]*cluster.Placement, len(pods))
	run := &TimedRun{Policy: cluster.PolicyName(spec), Seed: seed, Pods: len(pods)}
	running := 0
	c := float64(s.CapacityGPUMilli())
	for k, e := range evs {
		p := &pods[e.pod]
		switch {
		case e.depart && placed[e.pod] != nil:
			s.Remove(p, *placed[e.pod])
			m.Touch(placed[e.pod].Node)
			placed[e.pod] = nil
			running--
		case !e.depart:
			if pl, ok := sc.Schedule(p); ok {
				placed[e.pod] = &pl
				m.Touch(pl.Node)
				running++
			} else {
				run.Failed++
			}
		}
		if k+1 < len(evs) && evs[k+1].t == e.t {
			continue // one point per time
		}
		sm := m.Sample(0)
		run.Points = append(run.Points, TimedPoint{Time: e.t, Running: running, AllocRatio: float64(sm.AllocatedMilli) / c,
			FragTotal: sm.FragMilli / c, WholeFreeNodes: sm.WholeFreeNodes, Failed: run.Failed})
	}
	var dur float64
	for k := 0; k+1 < len(run.Points); k++ {
		d := float64(run.Points[k+1].Time - run.Points[k].Time)
		dur += d
		run.MeanAllocRatio += d * run.Points[k].AllocRatio
		run.MeanFragTotal += d * run.Points[k].FragTotal
	}
	if dur > 0 {
		run.MeanAllocRatio /= dur
		run.MeanFragTotal /= dur
	}
	for _, p := range run.Points {
		run.PeakAllocRatio = max(run.PeakAllocRatio, p.AllocRatio)
	}
	return run, nil
}
