package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Scheduler places pods one at a time on a State with a Policy: filter,
// score every feasible node, take the best score, let the policy pick GPUs,
// place.
//
// Ties go to the node that comes first in a fixed priority order (by
// default the node list's order; SetOrder changes it). The FGD artifact's
// kube-scheduler fork picks the smallest node name among equal scores, and
// its simulator prefixes every node name with a random permutation drawn
// from the run's seed: a random order, fixed for the whole run. That is
// what Experiment reproduces. With RandomTies, ties are broken uniformly at
// random on every pod instead, as upstream kube-scheduler's selectHost
// does; the two behave very differently (FGD leaves about twice as many
// GPUs unallocated with random ties, because equal scores no longer
// concentrate load on the same nodes).
type Scheduler struct {
	state  *State
	policy Policy
	rng    *rand.Rand
	// RandomTies breaks equal best scores uniformly at random instead of
	// by node name.
	RandomTies bool
	rank       []int // node index -> position in the tie-break order
	order      []int // position in the tie-break order -> node index
	leaves     int   // leaves of a best tree: max(1, nodes)
	forceScan  bool  // tests: always the full scan, to compare with the index
	// The leaves of a best tree (index.go), model by model (State.modelOf)
	// and by rank inside a model: lpos is node index -> leaf position,
	// leafNode the inverse, models[m] model m's positions [lo, hi).
	lpos     []int
	leafNode []int
	models   [][2]int
	// A group whose tree is pulled up keeps it so (a walk up from each
	// changed leaf, up to log2(nodes) scattered tree nodes) until a use
	// finds staleFrom changes or more; then it keeps only its leaves up
	// to date, choosing by a pass over them (a stream of about nodes
	// predictable comparisons), until a use finds fewer than pullBelow
	// changes and pulls the tree up again. A third and a sixteenth of the
	// nodes: tuned on the openb default list (instructions of the grid's
	// policy mix, a sweep of 11 pairs); validated on the gpuspec33 list
	// (-32% instructions a run) and the whole 24-list grid (0.65-0.77x the
	// CPU-s), docs/benchmarks.md, issue 27's fourth round. They change
	// only speed: every choice is the full scan's (TestIndexMatchesScan).
	pullBelow, staleFrom int

	// shapeOf is each node's shape (its Node less the name) and
	// shapeScores a score per shape, valid in the build numbered build:
	// see refreshUntouched.
	shapeOf     []int32
	shapeScores []shapeScore
	build       uint32

	classes map[typeKeyMem]int
	cache   [][]cached // [class][node], for the full scan; nil until used
	// The index's groups (index.go): by scoreKey for a scoreKeyer (keyer,
	// nil for another policy) choosing the best node, else by class.
	keyer       scoreKeyer
	keyGroups   map[scoreKey]int
	classGroups map[typeKeyMem]int
	indexes     []*classIndex // [group], for the index; nil until used

	feasible []int
	scores   []float64
}

// typeKeyMem is typeKey plus memory: what a score may depend on.
type typeKeyMem struct {
	typeKey
	mem int64
}

type cached struct {
	version uint32 // node version + 1; 0 means empty
	score   float64
}

// NewScheduler returns a scheduler placing pods on s with the policy,
// drawing its random choices from rng.
func NewScheduler(s *State, policy Policy, rng *rand.Rand) *Scheduler {
	rank, order := make([]int, len(s.nodes)), make([]int, len(s.nodes))
	for i := range rank {
		rank[i], order[i] = i, i
	}
	sc := &Scheduler{state: s, policy: policy, rng: rng, classes: map[typeKeyMem]int{}, keyGroups: map[scoreKey]int{}, classGroups: map[typeKeyMem]int{}, rank: rank, order: order,
		leaves: max(1, len(s.nodes)), pullBelow: max(1, len(s.nodes)/16), staleFrom: max(1, len(s.nodes)/3), lpos: make([]int, len(s.nodes)), leafNode: make([]int, len(s.nodes)), models: make([][2]int, len(s.models))}
	sc.keyer, _ = policy.(scoreKeyer)
	sc.layLeaves()
	sc.shapeOf = make([]int32, len(s.nodes))
	shapes := map[Node]int32{}
	for i, n := range s.nodes {
		n.Name = ""
		sh, ok := shapes[n]
		if !ok {
			sh = int32(len(shapes))
			shapes[n] = sh
		}
		sc.shapeOf[i] = sh
	}
	sc.shapeScores = make([]shapeScore, len(shapes))
	return sc
}

// shapeScore is a score computed in the build numbered build (0: none).
type shapeScore struct {
	score float64
	build uint32
}

// layLeaves lays out the leaves of the best trees for the order: model by
// model, by rank inside a model.
func (sc *Scheduler) layLeaves() {
	s := sc.state
	pos := 0
	for m := range s.models {
		sc.models[m][0] = pos
		for _, i := range sc.order {
			if s.modelOf[i] == m {
				sc.lpos[i], sc.leafNode[pos] = pos, i
				pos++
			}
		}
		sc.models[m][1] = pos
	}
}

// SetOrder sets the tie-break order: order lists every node index once,
// the first preferred. It panics when order is not a permutation.
func (sc *Scheduler) SetOrder(order []int) {
	if len(order) != len(sc.rank) {
		panic(fmt.Sprintf("cluster: SetOrder: %d indexes for %d nodes", len(order), len(sc.rank)))
	}
	seen := make([]bool, len(order))
	for r, i := range order {
		if i < 0 || i >= len(order) || seen[i] {
			panic(fmt.Sprintf("cluster: SetOrder: not a permutation (index %d)", i))
		}
		seen[i] = true
		sc.rank[i], sc.order[r] = r, i
	}
	sc.layLeaves()
	clear(sc.indexes) // their trees follow the old order
}

// Choose returns where the pod would go, without placing it; ok is false
// when no node passes the filter.
//
// It keeps, per class of pods, an index of every node's filter result and
// score that it updates for the nodes changed since (see index.go), so a
// pod costs O(log nodes) per changed node rather than a filter and a score
// of every node; policies that need every feasible node (Normalizers other
// than BestFit's, Choosers other than NthChoosers, RandomTies) take the
// full scan. Both choose the same node.
func (sc *Scheduler) Choose(p *Pod) (pl Placement, ok bool) {
	mode := sc.mode()
	if mode == modeScan {
		return sc.scan(p)
	}
	node, ok := sc.chooseIndexed(p, mode)
	if !ok {
		return Placement{}, false
	}
	return Placement{Node: node, GPUs: sc.policy.GPUs(sc.state, p, node, sc.rng)}, true
}

// class returns the class number of p, making one for a new class.
func (sc *Scheduler) class(p *Pod) int {
	k := typeKeyMem{keyOf(p), p.MemoryMiB}
	c, ok := sc.classes[k]
	if !ok {
		c = len(sc.classes)
		sc.classes[k] = c
		sc.cache = append(sc.cache, nil)
	}
	return c
}

// scan is Choose by filtering and scoring every node.
func (sc *Scheduler) scan(p *Pod) (pl Placement, ok bool) {
	s := sc.state
	sc.feasible = sc.feasible[:0]
	for i := range s.nodes {
		if s.Fits(p, i) {
			sc.feasible = append(sc.feasible, i)
		}
	}
	if len(sc.feasible) == 0 {
		return Placement{}, false
	}
	var node int
	if ch, isChooser := sc.policy.(Chooser); isChooser {
		node = ch.Choose(s, p, sc.feasible, sc.rng)
	} else {
		node = sc.best(p)
	}
	return Placement{Node: node, GPUs: sc.policy.GPUs(s, p, node, sc.rng)}, true
}

func (sc *Scheduler) best(p *Pod) int {
	s := sc.state
	c := sc.class(p)
	if sc.cache[c] == nil {
		sc.cache[c] = make([]cached, len(s.nodes))
	}
	row := sc.cache[c]
	sc.scores = sc.scores[:0]
	for _, i := range sc.feasible {
		e := &row[i]
		if e.version != s.version[i]+1 {
			e.version, e.score = s.version[i]+1, sc.policy.Score(s, p, i)
		}
		sc.scores = append(sc.scores, e.score)
	}
	if nz, ok := sc.policy.(Normalizer); ok {
		nz.Normalize(sc.scores)
	}
	bestIdx, n := 0, 0
	for j, v := range sc.scores {
		switch {
		case n == 0 || v > sc.scores[bestIdx]:
			bestIdx, n = j, 1
		case v == sc.scores[bestIdx]:
			n++
			if sc.RandomTies {
				// Reservoir sampling: uniform among the ties.
				if sc.rng.IntN(n) == 0 {
					bestIdx = j
				}
			} else if sc.rank[sc.feasible[j]] < sc.rank[sc.feasible[bestIdx]] {
				bestIdx = j
			}
		}
	}
	return sc.feasible[bestIdx]
}

// Schedule places the pod; ok is false, and nothing changes, when it fits
// nowhere.
func (sc *Scheduler) Schedule(p *Pod) (Placement, bool) {
	pl, ok := sc.Choose(p)
	if !ok {
		return pl, false
	}
	if err := sc.state.Place(p, pl); err != nil {
		// The policy picked GPUs that do not hold the pod: a bug.
		panic(err)
	}
	return pl, true
}

// ScheduleGang places all the pods or none (gang scheduling of a multi-pod
// job): pods are placed one by one, and if one fits nowhere the ones
// already placed are removed again.
func (sc *Scheduler) ScheduleGang(pods []*Pod) ([]Placement, bool) {
	pls := make([]Placement, 0, len(pods))
	for _, p := range pods {
		pl, ok := sc.Schedule(p)
		if !ok {
			for j := len(pls) - 1; j >= 0; j-- {
				sc.state.Remove(pods[j], pls[j])
			}
			return nil, false
		}
		pls = append(pls, pl)
	}
	return pls, true
}

// PolicyName is the display name of a policy spec: the canonical name,
// with options (the name results carry).
func PolicyName(spec string) string {
	name, opts, _ := strings.Cut(strings.TrimSpace(spec), ":")
	if canon, ok := Aliases[name]; ok {
		name = canon
	}
	if opts != "" {
		return name + ":" + opts
	}
	return name
}

// Units groups pods into scheduling units, what Schedule and ScheduleGang
// place: one pod each, or with gang one unit per job (Pod.Job, in order
// of first appearance). A unit of one pod is a slice of pods itself
// (capacity 1, so appending to it copies), not a copy: the units of a
// list cost one allocation, not one per pod.
func Units(pods []Pod, gang bool) [][]Pod {
	out := make([][]Pod, 0, len(pods))
	var byJob map[string]int
	for i := range pods {
		if p := &pods[i]; gang && p.Job != "" {
			if byJob == nil {
				byJob = map[string]int{}
			}
			if u, ok := byJob[p.Job]; ok {
				out[u] = append(out[u], *p)
				continue
			}
			byJob[p.Job] = len(out)
		}
		out = append(out, pods[i:i+1:i+1])
	}
	return out
}
