package cluster

import "sync"

// This file holds the scheduler's per-class index: for each class of pods
// (what a score and the filter may depend on, typeKeyMem), the cached
// filter result and score of every node, and a tournament tree over them
// that gives the best feasible node (or the number of feasible nodes, and
// the k-th one) in O(1) to O(log nodes). It is brought up to date lazily,
// from the state's change log, when a pod of the class arrives: only the
// nodes that changed since the class was last used are looked at again, so
// a pod costs O(changes since then × log nodes) instead of a filter and a
// score on every node. The choice is the same as the full scan's (see
// Scheduler.scan): the highest score, ties to the lowest rank.

// classIndex is one class's cache and tree.
type classIndex struct {
	// ver[i] (count trees) is node i's version plus one when its leaf was
	// last set (0: never); a best tree keeps it in the leaf.
	ver []uint32
	// best (scoring policies) is the tournament tree, 2*size slots: slot
	// size+pos is the leaf of the node at position pos (its score, or -1
	// when infeasible or past the last node), slot k < size the winner
	// under it: the feasible node of best score, ties to the lowest
	// position. Positions follow the tie-break order (rank). The winner's
	// score is kept with it, so that comparing two children reads two
	// adjacent slots and nothing else.
	best []slot
	// cnt (NthChoosers) is the count tree, 2*size entries: the number of
	// feasible nodes under each tree node; positions follow the node order.
	cnt []int32
	// scores, for a policy that says what its scores read of a pod
	// (scoreKeyer), is the score row shared by every class of the same
	// scoreKey: classes that differ in memory or allowed GPU models filter
	// differently but score alike, so a node's score is computed once per
	// version for all of them.
	scores []cached
	// allowed is, per model number (State.modelOf), whether the class's
	// pods may use it; nil when they may use any.
	allowed []bool
	// feas has bit i set when node i's leaf says feasible: a node
	// infeasible before and after a change is passed over without
	// touching its leaf (the tree is cold, the state's arrays are not).
	feas  []uint64
	seq   uint64 // the state's change sequence number the index is up to
	built bool
}

// slot is a node of a best tree: a node index (-1: none) and its score;
// in a leaf also the node's version plus one when the leaf was set (0:
// never), in the same 16 bytes, so that checking a changed node and
// setting its leaf touch one cache line.
type slot struct {
	score float64
	node  int32
	ver   uint32 // leaves only
}

// scoreKeyer is implemented by policies whose Score reads only some of a
// pod's fields: pods of equal scoreKey score alike on every node.
type scoreKeyer interface {
	Policy
	scoreKey(p *Pod) scoreKey
}

// scoreKey is what a scoreKeyer's Score reads of a pod: the CPU and GPU
// request, and spec for what a policy reads of the allowed GPU models.
type scoreKey struct {
	cpu   int64
	num   int
	milli int64
	spec  int8
}

// requestKey is the scoreKey of a policy that reads only the pod's CPU and
// GPU request.
func requestKey(p *Pod) scoreKey { return scoreKey{cpu: p.MilliCPU, num: p.NumGPU, milli: p.MilliGPU} }

// indexMode says how the scheduler chooses for the policy.
type indexMode uint8

const (
	modeScan  indexMode = iota // filter and score every node (Scheduler.scan)
	modeBest                   // the tree's best score
	modeCount                  // the tree's k-th feasible node (NthChooser)
)

// keepsBest is implemented by Normalizers whose rescaling keeps the set of
// nodes with the highest score: the highest before Normalize are exactly
// the highest after. The index can then choose on the raw scores.
type keepsBest interface {
	Normalizer
	keepsBest()
}

// mode returns how the scheduler chooses: by the index unless the policy
// needs every feasible node's score (a Normalizer that may reorder the
// best, random tie-breaking that draws once per tie) or the feasible list
// itself (a Chooser that is not an NthChooser).
func (sc *Scheduler) mode() indexMode {
	if sc.forceScan {
		return modeScan
	}
	switch sc.policy.(type) {
	case NthChooser:
		return modeCount
	case Chooser:
		return modeScan
	case keepsBest:
		// chooses on raw scores, below
	case Normalizer:
		return modeScan
	}
	if sc.RandomTies {
		return modeScan
	}
	return modeBest
}

// chooseIndexed returns the node for p through its class's index; ok is
// false when no node passes the filter.
func (sc *Scheduler) chooseIndexed(p *Pod, mode indexMode) (int, bool) {
	ix := sc.index(p, mode)
	if mode == modeCount {
		n := int(ix.cnt[1])
		if n == 0 {
			return 0, false
		}
		k := sc.policy.(NthChooser).ChooseNth(n, sc.rng)
		return sc.nth(ix, k), true
	}
	w := ix.best[1].node
	return int(w), w >= 0
}

// index returns p's class index, brought up to date with the state.
func (sc *Scheduler) index(p *Pod, mode indexMode) *classIndex {
	s := sc.state
	c := sc.class(p)
	ix := sc.indexes[c]
	if ix == nil {
		ix = &classIndex{}
		if mode == modeCount {
			ix.ver, ix.cnt = make([]uint32, len(s.nodes)), make([]int32, 2*sc.size)
		} else {
			ix.best = newTree(2 * sc.size)
			if k, ok := sc.policy.(scoreKeyer); ok {
				ix.scores = sc.sharedScores(k.scoreKey(p))
			}
		}
		if p.NumGPU > 0 && len(p.GPUSpec) > 0 {
			ix.allowed = make([]bool, len(s.models))
			for m, name := range s.models {
				ix.allowed[m] = p.AllowsModel(name)
			}
		}
		ix.feas = make([]uint64, (len(s.nodes)+63)/64)
		sc.indexes[c] = ix
	}
	changes, ok := s.changesSince(ix.seq)
	switch {
	case !ix.built:
		// In leaf order, so that the class's (cold) tree is read and
		// written in sequence; the state's per-node arrays, which every
		// class reads, are the ones accessed out of order.
		for pos := range s.nodes {
			i := pos
			if mode != modeCount {
				i = sc.order[pos]
			}
			sc.refresh(ix, p, i, mode)
		}
		sc.pullAll(ix)
		ix.built = true
	case ok:
		// Each changed node once, at its latest change: FGD-like
		// policies fill a node with several pods in a row.
		for k, i := range changes {
			if s.isLatest(i, ix.seq+uint64(k)) && sc.refresh(ix, p, int(i), mode) {
				sc.update(ix, int(i), mode)
			}
		}
	default:
		// The log no longer reaches back: the nodes changed since, then
		// the tree above them in one pass.
		changed := false
		for i := range s.nodes {
			if s.changedSince(i, ix.seq) && sc.refresh(ix, p, i, mode) {
				changed = true
			}
		}
		if changed {
			sc.pullAll(ix)
		}
	}
	ix.seq = s.changeSeq()
	return ix
}

// pullAll recomputes every tree node above the leaves.
func (sc *Scheduler) pullAll(ix *classIndex) {
	for t := sc.size - 1; t >= 1; t-- {
		sc.pull(ix, t)
	}
}

// update recomputes the tree above node i's leaf after it changed. Going
// up, it stops where a winner other than node i stays the winner (for a
// count tree: where the count is unchanged): nothing above can change
// then.
func (sc *Scheduler) update(ix *classIndex, i int, mode indexMode) {
	t := (sc.size + sc.posOf(i, mode)) / 2
	if ix.cnt != nil {
		for ; t >= 1; t /= 2 {
			n := ix.cnt[2*t] + ix.cnt[2*t+1]
			if n == ix.cnt[t] {
				return
			}
			ix.cnt[t] = n
		}
		return
	}
	for ; t >= 1; t /= 2 {
		w := ix.best[t].node
		sc.pull(ix, t)
		if ix.best[t].node == w && int(w) != i {
			return
		}
	}
}

// refresh recomputes node i's leaf (filter result and score) for p when
// the node changed since it was set, and reports whether the leaf changed
// (a node whose change left its filter result and score as they were
// changes nothing in the tree).
func (sc *Scheduler) refresh(ix *classIndex, p *Pod, i int, mode indexMode) bool {
	s := sc.state
	fits := sc.fits(ix, p, i)
	word, bit := &ix.feas[i/64], uint64(1)<<(i%64)
	if !fits && *word&bit == 0 {
		return false // infeasible before and after: the leaf stays empty
	}
	if fits {
		*word |= bit
	} else {
		*word &^= bit
	}
	v := s.version[i] + 1
	t := sc.size + sc.posOf(i, mode)
	if ix.cnt != nil {
		if ix.ver[i] == v {
			return false
		}
		ix.ver[i] = v
		var n int32
		if fits {
			n = 1
		}
		old := ix.cnt[t]
		ix.cnt[t] = n
		return n != old
	}
	l := &ix.best[t]
	if l.ver == v {
		return false
	}
	l.ver = v
	node, score := int32(-1), 0.0
	switch {
	case !fits:
	case ix.scores != nil:
		e := &ix.scores[i]
		if e.version != v {
			e.version, e.score = v, sc.policy.Score(s, p, i)
		}
		node, score = int32(i), e.score
	default:
		node, score = int32(i), sc.policy.Score(s, p, i)
	}
	if l.node == node && l.score == score {
		return false
	}
	l.node, l.score = node, score
	return true
}

// trees recycles the best trees of finished schedulers (Simulate's): a run
// makes one per class of pods, 64 KiB each on the openb cluster, hundreds
// per run. A tree is reset when taken, so what the pool holds, and
// whether it holds anything, changes no result.
var trees sync.Pool

// newTree returns a best tree of n slots, every one empty.
func newTree(n int) []slot {
	if t, ok := trees.Get().(*[]slot); ok && len(*t) == n {
		for k := range *t {
			(*t)[k] = slot{node: -1}
		}
		return *t
	}
	t := make([]slot, n)
	for k := range t {
		t[k].node = -1
	}
	return t
}

// Release gives the scheduler's trees back for the schedulers made after
// it (a grid's runs reuse them instead of allocating their own); the
// scheduler must not be used after.
func (sc *Scheduler) Release() {
	for c, ix := range sc.indexes {
		if ix != nil && ix.best != nil {
			trees.Put(&ix.best)
		}
		sc.indexes[c] = nil
	}
}

// sharedScores returns the score row of k, making it.
func (sc *Scheduler) sharedScores(k scoreKey) []cached {
	row, ok := sc.typeScores[k]
	if !ok {
		row = make([]cached, len(sc.state.nodes))
		sc.typeScores[k] = row
	}
	return row
}

// fits is s.Fits(p, i) with the model check from the class's table.
func (sc *Scheduler) fits(ix *classIndex, p *Pod, i int) bool {
	s := sc.state
	return s.fitsModel(p, i, ix.allowed == nil || ix.allowed[s.modelOf[i]])
}

// posOf is node i's leaf position.
func (sc *Scheduler) posOf(i int, mode indexMode) int {
	if mode == modeCount {
		return i
	}
	return sc.rank[i]
}

// pull recomputes tree node t from its children: the left one (lower
// position) wins ties.
func (sc *Scheduler) pull(ix *classIndex, t int) {
	if ix.cnt != nil {
		ix.cnt[t] = ix.cnt[2*t] + ix.cnt[2*t+1]
		return
	}
	a, b := &ix.best[2*t], &ix.best[2*t+1]
	if b.node >= 0 && (a.node < 0 || b.score > a.score) {
		ix.best[t] = *b
	} else {
		ix.best[t] = *a
	}
}

// nth returns the k-th feasible node (0-based, in node order) of a count
// index; k must be below cnt[1].
func (sc *Scheduler) nth(ix *classIndex, k int) int {
	t := 1
	for t < sc.size {
		if n := ix.cnt[2*t]; int32(k) < n {
			t = 2 * t
		} else {
			k -= int(n)
			t = 2*t + 1
		}
	}
	return t - sc.size
}
