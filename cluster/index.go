package cluster

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
	row []cached // per node
	// win[k], 1 <= k < size, is the winner of tree node k: the feasible
	// node of best score (ties: the lowest position) under it, or -1. The
	// leaves, size+pos, are implicit: the node at position pos when it is
	// feasible. Positions follow the tie-break order (rank) for scoring
	// policies and the node order for NthChoosers.
	win []int32
	// cnt[k] is the number of feasible nodes under tree node k (kept for
	// NthChoosers only).
	cnt   []int32
	seq   uint64 // the state's change sequence number the index is up to
	built bool
}

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
	w := ix.win[1]
	return int(w), w >= 0
}

// index returns p's class index, brought up to date with the state.
func (sc *Scheduler) index(p *Pod, mode indexMode) *classIndex {
	s := sc.state
	c := sc.class(p)
	ix := sc.indexes[c]
	if ix == nil {
		ix = &classIndex{row: make([]cached, len(s.nodes)), win: make([]int32, sc.size)}
		if mode == modeCount {
			ix.cnt = make([]int32, sc.size)
		}
		sc.indexes[c] = ix
	}
	changes, ok := s.changesSince(ix.seq)
	if !ix.built || !ok || len(changes) >= len(s.nodes) {
		for i := range s.nodes {
			sc.refresh(ix, p, i)
		}
		for t := sc.size - 1; t >= 1; t-- {
			sc.pull(ix, t)
		}
		ix.built = true
	} else {
		for _, i := range changes {
			if sc.refresh(ix, p, int(i)) {
				sc.update(ix, int(i), mode)
			}
		}
	}
	ix.seq = s.changeSeq()
	return ix
}

// update recomputes the tree above node i's leaf after its entry changed.
// Going up, it stops where a winner other than node i stays the winner
// (and, for a count index, the count is unchanged): nothing above can
// change then.
func (sc *Scheduler) update(ix *classIndex, i int, mode indexMode) {
	for t := (sc.size + sc.posOf(i, mode)) / 2; t >= 1; t /= 2 {
		w := ix.win[t]
		var n int32
		if ix.cnt != nil {
			n = ix.cnt[t]
		}
		sc.pull(ix, t)
		if ix.win[t] == w && int(w) != i && (ix.cnt == nil || ix.cnt[t] == n) {
			return
		}
	}
}

// refresh recomputes node i's filter result and score for p when the node
// changed since they were cached, and reports whether it did.
func (sc *Scheduler) refresh(ix *classIndex, p *Pod, i int) bool {
	s := sc.state
	e := &ix.row[i]
	if e.version == s.version[i]+1 {
		return false
	}
	e.version, e.feasible, e.score = s.version[i]+1, s.Fits(p, i), 0
	if e.feasible && ix.cnt == nil {
		e.score = sc.policy.Score(s, p, i)
	}
	return true
}

// posOf is node i's leaf position.
func (sc *Scheduler) posOf(i int, mode indexMode) int {
	if mode == modeCount {
		return i
	}
	return sc.rank[i]
}

// leaf returns the node at position pos when it is feasible, else -1.
func (sc *Scheduler) leaf(ix *classIndex, pos int) int32 {
	if pos >= len(sc.order) {
		return -1
	}
	i := pos
	if ix.cnt == nil {
		i = sc.order[pos]
	}
	if !ix.row[i].feasible {
		return -1
	}
	return int32(i)
}

// child returns the winner and count of tree node t.
func (sc *Scheduler) child(ix *classIndex, t int) (int32, int32) {
	if t >= sc.size {
		w := sc.leaf(ix, t-sc.size)
		if w < 0 {
			return -1, 0
		}
		return w, 1
	}
	if ix.cnt == nil {
		return ix.win[t], 0
	}
	return ix.win[t], ix.cnt[t]
}

// pull recomputes tree node t from its children: the left one (lower
// position) wins ties.
func (sc *Scheduler) pull(ix *classIndex, t int) {
	a, na := sc.child(ix, 2*t)
	b, nb := sc.child(ix, 2*t+1)
	switch {
	case a < 0:
		ix.win[t] = b
	case b < 0:
		ix.win[t] = a
	case ix.row[b].score > ix.row[a].score:
		ix.win[t] = b
	default:
		ix.win[t] = a
	}
	if ix.cnt != nil {
		ix.cnt[t] = na + nb
	}
}

// nth returns the k-th feasible node (0-based, in node order) of a count
// index; k must be below cnt[1].
func (sc *Scheduler) nth(ix *classIndex, k int) int {
	t := 1
	for t < sc.size {
		_, n := sc.child(ix, 2*t)
		if int32(k) < n {
			t = 2 * t
		} else {
			k -= int(n)
			t = 2*t + 1
		}
	}
	return t - sc.size
}
