package cluster

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// This file holds the scheduler's index: for each group of pods, the
// cached filter result and score of every node, and a tournament tree over
// them that gives the best feasible node in O(1) to O(log nodes) (for a
// NthChooser, a bitset of the feasible nodes that gives their number and
// the k-th one in O(nodes/64)). It is brought up to date lazily, from the
// state's change log, when a pod of the group arrives: only the nodes that
// changed since the group was last used are looked at again, each once,
// so a pod costs O(changes since then × log nodes) instead of a filter and
// a score on every node. A group that many changes went by (one used
// rarely) keeps only its leaves up to date and chooses by a pass over them
// (its tree is pulled up again when it is used often). The choice is the
// same as the full scan's (see Scheduler.scan): the highest score, ties to
// the lowest rank.
//
// A group is a class of pods (what a score and the filter may depend on,
// typeKeyMem), except for a policy that says what its scores read of a pod
// (scoreKeyer): there a group is every pod of one scoreKey, whatever its
// memory and allowed GPU models. Its leaves filter by the CPU and GPU
// request only, and a pod's memory and models are applied when choosing:
// the leaves are laid out by GPU model (model by model, by rank inside
// one), so a pod restricted to some models asks the ranges of those
// models; and where a winner lacks the pod's memory the search goes down
// to the best one that has it. Most pods take a winner as it is. FGD on
// the openb default list has 91 groups against 151 classes, on gpuspec33
// 91 against 457: fewer, warmer trees, each change replayed fewer times.

// classIndex is one group's cache and tree.
type classIndex struct {
	// best (scoring policies) is the tournament tree, 2*leaves slots
	// (Scheduler.leaves, the number of nodes): slot leaves+lpos[i] is the
	// leaf of node i (its score, or rank -1 when infeasible), slot k in
	// [1, leaves) the winner of its children 2k and 2k+1: the feasible
	// node of best score, ties to the lowest rank. Not a power of two, so
	// a subtree need not cover consecutive positions; the winner compares
	// ranks, so it need not. The winner's score and rank are kept with
	// it, so that comparing two children reads two adjacent slots and
	// nothing else.
	best []slot
	// allowed is, per model number (State.modelOf), whether the class's
	// pods may use it; nil when they may use any, and in a scoreKey group
	// (whose pods choose their models when choosing).
	allowed []bool
	// byKey marks a scoreKey group: its leaves leave GPU models, and
	// memory unless the scoreKey holds it (mem), to the choice
	// (Scheduler.chooseIndexed).
	byKey bool
	mem   int64
	// feas has bit i set when node i passes the group's filter: a node
	// infeasible before and after a change is passed over without
	// touching its leaf (the tree is cold, the state's arrays are not);
	// for an NthChooser it is the whole index.
	feas  []uint64
	seq   uint64 // the state's change sequence number the index is up to
	built bool
	// pulled: the tree above the leaves is up to date. When not, only the
	// leaves are, and the choice is a pass over them (scanLeaves).
	pulled bool
}

// slot is a node of a best tree: a node's rank (-1: none) and its score.
type slot struct {
	score float64
	rank  int32
}

// beats reports whether a (a node) wins over b: a higher score, or the
// same score and a lower rank; any node wins over none.
func (a *slot) beats(b *slot) bool {
	return a.rank >= 0 && (b.rank < 0 || a.score > b.score || a.score == b.score && a.rank < b.rank)
}

// scoreKeyer is implemented by policies whose Score reads only some of a
// pod's fields: pods of equal scoreKey score alike on every node.
type scoreKeyer interface {
	Policy
	scoreKey(p *Pod) scoreKey
}

// scoreKey is what a scoreKeyer's Score reads of a pod: the CPU and GPU
// request (always: a scoreKey group's leaves filter by them), mem for a
// policy that reads the memory request (else 0), and spec for what a
// policy reads of the allowed GPU models.
type scoreKey struct {
	cpu   int64
	num   int
	milli int64
	mem   int64
	spec  int8
}

// requestKey is the scoreKey of a policy that reads only the pod's CPU and
// GPU request.
func requestKey(p *Pod) scoreKey { return scoreKey{cpu: p.MilliCPU, num: p.NumGPU, milli: p.MilliGPU} }

// memKey is the scoreKey of a policy that reads the pod's CPU, memory and
// GPU request.
func memKey(p *Pod) scoreKey {
	k := requestKey(p)
	k.mem = p.MemoryMiB
	return k
}

// indexMode says how the scheduler chooses for the policy.
type indexMode uint8

const (
	modeScan  indexMode = iota // filter and score every node (Scheduler.scan)
	modeBest                   // the tree's best score
	modeCount                  // the k-th feasible node (NthChooser)
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

// chooseIndexed returns the node for p through its group's index; ok is
// false when no node passes the filter.
func (sc *Scheduler) chooseIndexed(p *Pod, mode indexMode) (int, bool) {
	ix := sc.index(p, mode)
	if mode == modeCount {
		n := 0
		for _, w := range ix.feas {
			n += bits.OnesCount64(w)
		}
		if n == 0 {
			return 0, false
		}
		k := sc.policy.(NthChooser).ChooseNth(n, sc.rng)
		return nthSet(ix.feas, k), true
	}
	if !ix.byKey && ix.pulled {
		w := ix.best[1].rank
		return sc.nodeOf(w), w >= 0
	}
	// A scoreKey group: the best node with p's memory free, among the
	// models p may use (a class's leaves hold its memory and models).
	b := slot{rank: -1}
	mem := p.MemoryMiB
	if !ix.byKey {
		mem = 0
	}
	switch {
	case ix.byKey && p.NumGPU > 0 && len(p.GPUSpec) > 0:
		for _, name := range p.GPUSpec {
			if m := slices.Index(sc.state.models, name); m >= 0 {
				r := sc.models[m]
				if ix.pulled {
					sc.searchRange(ix, r[0], r[1], mem, &b)
				} else {
					sc.scanLeaves(ix, r[0], r[1], mem, &b)
				}
			}
		}
	case ix.pulled:
		sc.search(ix, 1, mem, &b)
	default:
		sc.scanLeaves(ix, 0, sc.leaves, mem, &b)
	}
	return sc.nodeOf(b.rank), b.rank >= 0
}

// scanLeaves makes *b the best of itself and the leaves at positions
// [lo, hi) with mem MiB of memory free: search without the tree, for a
// group whose tree is not pulled up. A leaf that beats the best so far is
// rare after the first few, so the pass is a stream of predictable
// comparisons.
func (sc *Scheduler) scanLeaves(ix *classIndex, lo, hi int, mem int64, b *slot) {
	for _, l := range ix.best[sc.leaves+lo : sc.leaves+hi] {
		if l.beats(b) && sc.state.memFree[sc.order[l.rank]] >= mem {
			*b = l
		}
	}
}

// nthSet returns the position of the k-th set bit (0-based) of the
// bitset; k must be below the number of bits set.
func nthSet(set []uint64, k int) int {
	k0 := k
	for w, word := range set {
		if n := bits.OnesCount64(word); k >= n {
			k -= n
			continue
		}
		for ; k > 0; k-- {
			word &= word - 1 // drop the lowest set bit
		}
		return w*64 + bits.TrailingZeros64(word)
	}
	panic(fmt.Sprintf("cluster: nthSet: bit %d of %d set", k0, k0-k))
}

// nodeOf is the node of rank r (r >= 0), or -1.
func (sc *Scheduler) nodeOf(r int32) int {
	if r < 0 {
		return -1
	}
	return sc.order[r]
}

// search makes *b the best of itself and the nodes under tree node t with
// mem MiB of memory free. The winner under t is the best there: when it
// has the memory, nothing under t can do better; when *b beats it, nothing
// under t can beat *b.
func (sc *Scheduler) search(ix *classIndex, t int, mem int64, b *slot) {
	w := &ix.best[t]
	if !w.beats(b) {
		return
	}
	if sc.state.memFree[sc.order[w.rank]] >= mem {
		*b = *w
		return
	}
	if t < sc.leaves {
		sc.search(ix, 2*t, mem, b)
		sc.search(ix, 2*t+1, mem, b)
	}
}

// searchRange is search over the leaves at positions [lo, hi): the tree
// nodes that cover them exactly.
func (sc *Scheduler) searchRange(ix *classIndex, lo, hi int, mem int64, b *slot) {
	for l, r := lo+sc.leaves, hi+sc.leaves; l < r; l, r = l/2, r/2 {
		if l&1 == 1 {
			sc.search(ix, l, mem, b)
			l++
		}
		if r&1 == 1 {
			r--
			sc.search(ix, r, mem, b)
		}
	}
}

// group returns p's group number, making one for a new group: for a
// scoreKeyer choosing the best node, p's scoreKey (byKey), else p's class
// (typeKeyMem).
func (sc *Scheduler) group(p *Pod, mode indexMode) (c int, byKey bool) {
	var ok bool
	if byKey = sc.keyer != nil && mode == modeBest; byKey {
		k := sc.keyer.scoreKey(p)
		if c, ok = sc.keyGroups[k]; !ok {
			c = len(sc.indexes)
			sc.keyGroups[k] = c
		}
	} else {
		k := typeKeyMem{keyOf(p), p.MemoryMiB}
		if c, ok = sc.classGroups[k]; !ok {
			c = len(sc.indexes)
			sc.classGroups[k] = c
		}
	}
	if !ok {
		sc.indexes = append(sc.indexes, nil)
	}
	return c, byKey
}

// index returns p's group index, brought up to date with the state.
func (sc *Scheduler) index(p *Pod, mode indexMode) *classIndex {
	s := sc.state
	c, byKey := sc.group(p, mode)
	ix := sc.indexes[c]
	if ix == nil {
		ix = &classIndex{byKey: byKey}
		if byKey {
			ix.mem = sc.keyer.scoreKey(p).mem
		}
		if mode != modeCount {
			ix.best = newTree(2 * sc.leaves)
		}
		if !byKey && p.NumGPU > 0 && len(p.GPUSpec) > 0 {
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
		// In leaf order, so that the group's (cold) tree is read and
		// written in sequence; the state's per-node arrays, which every
		// group reads, are the ones accessed out of order. The tree above
		// is pulled up when the group is used again soon.
		if sc.build++; sc.build == 0 { // wrapped: no memo may look current
			clear(sc.shapeScores)
			sc.build = 1
		}
		for pos := range s.nodes {
			i := pos
			if mode != modeCount {
				i = sc.leafNode[pos]
			}
			if ix.byKey && s.version[i] == 0 {
				sc.refreshUntouched(ix, p, i)
			} else {
				sc.refresh(ix, p, i, mode)
			}
		}
		ix.built = true
	case ok && ix.pulled && len(changes) < sc.staleFrom:
		// Each changed node once, at its latest change: FGD-like
		// policies fill a node with several pods in a row.
		for k, i := range changes {
			if s.isLatest(i, ix.seq+uint64(k)) && sc.refresh(ix, p, int(i), mode) {
				sc.update(ix, int(i))
			}
		}
	case ok:
		// The leaves only; then, for a group used again soon, the tree
		// above them in one pass, in sequence (instead of a walk up from
		// each change), kept up to date from then on until a use finds
		// many changes again.
		for k, i := range changes {
			if s.isLatest(i, ix.seq+uint64(k)) {
				sc.refresh(ix, p, int(i), mode)
			}
		}
		if len(changes) < sc.pullBelow && mode != modeCount {
			sc.pullAll(ix)
			ix.pulled = true
		} else {
			ix.pulled = false
		}
	default:
		// The log no longer reaches back: the nodes changed since.
		for i := range s.nodes {
			if s.changedSince(i, ix.seq) {
				sc.refresh(ix, p, i, mode)
			}
		}
		ix.pulled = false
	}
	ix.seq = s.changeSeq()
	return ix
}

// pullAll recomputes every tree node above the leaves.
func (sc *Scheduler) pullAll(ix *classIndex) {
	best := ix.best
	for t := sc.leaves - 1; t >= 1; t-- {
		pull(best, t)
	}
}

// update recomputes the tree above node i's leaf after it changed. Going
// up, it stops where a winner other than node i stays the winner: nothing
// above can change then.
func (sc *Scheduler) update(ix *classIndex, i int) {
	best := ix.best
	r := int32(sc.rank[i])
	for t := (sc.leaves + sc.lpos[i]) / 2; t >= 1; t /= 2 {
		w := best[t].rank
		pull(best, t)
		if best[t].rank == w && w != r {
			return
		}
	}
}

// refreshUntouched sets the fresh leaf of node i, which never changed, in
// a scoreKey group's tree being built: its filter result and score are
// those of every untouched node of its shape (a scoreKeyer's Score reads
// the node's capacity, model and what is free on it, not its name), so
// the score is computed once per shape and build (the openb cluster has
// 1213 nodes of 15 shapes, and most are untouched while the groups of
// common pods are built).
func (sc *Scheduler) refreshUntouched(ix *classIndex, p *Pod, i int) {
	if !sc.fits(ix, p, i) {
		return
	}
	ix.feas[i/64] |= uint64(1) << (i % 64)
	sh := sc.shapeOf[i]
	if m := &sc.shapeScores[sh]; m.build != sc.build {
		m.build, m.score = sc.build, sc.policy.Score(sc.state, p, i)
	}
	l := &ix.best[sc.leaves+sc.lpos[i]]
	l.rank, l.score = int32(sc.rank[i]), sc.shapeScores[sh].score
}

// refresh recomputes node i's leaf (filter result and score) for p after
// the node changed, and reports whether the leaf changed (a node whose
// change left its filter result and score as they were changes nothing in
// the tree). The caller calls it once per change of the node.
func (sc *Scheduler) refresh(ix *classIndex, p *Pod, i int, mode indexMode) bool {
	s := sc.state
	fits := sc.fits(ix, p, i)
	word, bit := &ix.feas[i/64], uint64(1)<<(i%64)
	was := *word&bit != 0
	if !fits && !was {
		return false // infeasible before and after: the leaf stays empty
	}
	if fits {
		*word |= bit
	} else {
		*word &^= bit
	}
	if mode == modeCount {
		return fits != was
	}
	l := &ix.best[sc.leaves+sc.lpos[i]]
	rank, score := int32(-1), 0.0
	if fits {
		rank, score = int32(sc.rank[i]), sc.policy.Score(s, p, i)
	}
	if l.rank == rank && l.score == score {
		return false
	}
	l.rank, l.score = rank, score
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
			(*t)[k] = slot{rank: -1}
		}
		return *t
	}
	t := make([]slot, n)
	for k := range t {
		t[k].rank = -1
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

// fits is the filter of node i for p's group: s.Fits(p, i) with the model
// check from the class's table, or for a scoreKey group the CPU and GPU
// request, and the memory the scoreKey holds (models, and memory it does
// not hold, are left to the choice).
func (sc *Scheduler) fits(ix *classIndex, p *Pod, i int) bool {
	s := sc.state
	if ix.byKey {
		return s.cpuFree[i] >= p.MilliCPU && s.memFree[i] >= ix.mem && (p.NumGPU == 0 || s.gpuFits(p, i))
	}
	return s.fitsModel(p, i, ix.allowed == nil || ix.allowed[s.modelOf[i]])
}

// pull recomputes tree node t of a best tree from its children.
func pull(best []slot, t int) {
	a, b := &best[2*t], &best[2*t+1]
	if b.beats(a) {
		best[t] = *b
	} else {
		best[t] = *a
	}
}
