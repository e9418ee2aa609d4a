// A table from SeqIDs to per-sequence state for the strategies' hot paths.
// See doc.go for the overview.

package strategy

import (
	"cmp"
	"slices"
)

// denseMax bounds the ids kept in the slice part of a seqTable (16M: a
// pointer each, 128 MiB at most, for traces of up to 16M requests).
const denseMax = 1 << 24

// seqTable maps SeqIDs to *T: a slice for ids in [0, denseMax), which is
// what an engine numbering its requests uses, and a map for any other id.
// The engine looks a sequence up once per running request per step; an
// index costs a fraction of a hash lookup there.
//
// Invariants: n == non-nil dense entries + len(sparse); no id is in both.
type seqTable[T any] struct {
	dense  []*T
	sparse map[SeqID]*T
	n      int
}

func (t *seqTable[T]) get(id SeqID) (*T, bool) {
	if id >= 0 && id < SeqID(len(t.dense)) {
		v := t.dense[id]
		return v, v != nil
	}
	v, ok := t.sparse[id]
	return v, ok
}

// put stores v (not nil) under id, which must not be present.
func (t *seqTable[T]) put(id SeqID, v *T) {
	t.n++
	if id >= 0 && id < denseMax {
		if id >= SeqID(len(t.dense)) {
			nd := make([]*T, min(max(int(id)+1, 2*len(t.dense), 64), denseMax))
			copy(nd, t.dense)
			t.dense = nd
		}
		t.dense[id] = v
		return
	}
	if t.sparse == nil {
		t.sparse = make(map[SeqID]*T)
	}
	t.sparse[id] = v
}

func (t *seqTable[T]) del(id SeqID) {
	if id >= 0 && id < SeqID(len(t.dense)) {
		if t.dense[id] != nil {
			t.dense[id] = nil
			t.n--
		}
		return
	}
	if _, ok := t.sparse[id]; ok {
		delete(t.sparse, id)
		t.n--
	}
}

func (t *seqTable[T]) len() int { return t.n }

// ids returns the ids present, sorted.
func (t *seqTable[T]) ids() []SeqID {
	out := make([]SeqID, 0, t.n)
	for i, v := range t.dense {
		if v != nil {
			out = append(out, SeqID(i))
		}
	}
	for id := range t.sparse {
		out = append(out, id)
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
