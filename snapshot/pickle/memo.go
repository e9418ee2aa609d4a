package pickle

import "math"

// The decoder's memo: the dense table grown in chunks, the sparse
// entries past its end, PUT and GET.

// memoEntry is a memo slot: an item and whether it was stored (32 bytes).
type memoEntry struct {
	v     any
	off   int64
	depth int32
	set   bool
}

func (e *memoEntry) item() item { return item{v: e.v, off: e.off, depth: e.depth} }

// memoChunk (4096 entries, 128 KiB) is the unit the memo grows by. Chunks
// are never copied: a memo kept in one doubling slice left every smaller
// array behind as garbage (16M MEMOIZE opcodes peaked at 1.65 GB for a
// 640 MB memo while the collector was held off).
const memoChunk = 4096

// memoTable is the dense memo, index i at chunks[i/memoChunk][i%memoChunk];
// every chunk but the last is full.
type memoTable struct {
	chunks [][]memoEntry
	// dead[c] counts the forgotten entries of chunks[c]; a full chunk
	// whose entries are all forgotten is dropped (chunks[c] = nil).
	dead []int32
	n    int
}

func (m *memoTable) len() int { return m.n }

// at returns entry i, or nil when its chunk was dropped.
func (m *memoTable) at(i uint64) *memoEntry {
	c := m.chunks[i/memoChunk]
	if c == nil {
		return nil
	}
	return &c[i%memoChunk]
}

func (m *memoTable) push(e memoEntry) {
	if k := len(m.chunks); k > 0 && len(m.chunks[k-1]) < memoChunk && m.chunks[k-1] != nil {
		// The first chunk may start small and grow up to memoChunk.
		m.chunks[k-1] = append(m.chunks[k-1], e)
	} else {
		c := make([]memoEntry, 1, memoChunk)
		c[0] = e
		m.chunks = append(m.chunks, c)
	}
	m.n++
}

// forget replaces entry i by a Forgotten value, and drops its chunk once
// all of a full chunk is forgotten. It reports whether the entry was held.
func (m *memoTable) forget(i uint64) bool {
	e := m.at(i)
	if e == nil || !e.set {
		return false
	}
	if _, ok := e.v.(Forgotten); ok {
		return false
	}
	*e = memoEntry{v: Forgotten{Index: i}, off: e.off, set: true}
	c := i / memoChunk
	for uint64(len(m.dead)) <= c {
		m.dead = append(m.dead, 0)
	}
	m.dead[c]++
	if m.dead[c] == memoChunk {
		m.chunks[c] = nil
	}
	return true
}

// forget forgets the memo entry of v, a dict an opts.Stream consumed, and
// with lists, the lists memoized after it and before end.
func (d *decoder) forget(v any, end int, lists bool) {
	dict, ok := v.(*Dict)
	if !ok || dict.memo == 0 {
		return
	}
	i := uint64(dict.memo - 1)
	if d.memo.forget(i) {
		d.forgotten++
	}
	if !lists {
		return
	}
	for j := i + 1; j < uint64(end) && j < uint64(d.memo.len()); j++ {
		if e := d.memo.at(j); e != nil && e.set {
			if _, isList := e.v.(*list); isList && d.memo.forget(j) {
				d.forgotten++
			}
		}
	}
}

func (d *decoder) memoPut(idx uint64) error {
	if len(d.stack) == d.base {
		return d.fail(ErrMalformed, "memo store with an empty stack")
	}
	top := d.stack[len(d.stack)-1]
	e := memoEntry{v: top.v, off: d.op, depth: top.depth, set: true}
	cost := int64(0)
	switch n := uint64(d.memo.len()); {
	case idx < n:
		m := d.memo.at(idx)
		if m == nil { // a dropped chunk: bring it back, all forgotten
			c := make([]memoEntry, memoChunk)
			base := idx / memoChunk * memoChunk
			for k := range c {
				c[k] = memoEntry{v: Forgotten{Index: base + uint64(k)}, set: true}
			}
			d.memo.chunks[idx/memoChunk] = c
			m = d.memo.at(idx)
		}
		if !m.set {
			d.nmemo++
		}
		if _, was := m.v.(Forgotten); was {
			d.forgotten--
			d.memo.dead[idx/memoChunk]--
		}
		*m = e
	case idx == n && !d.inSparse(idx):
		d.memo.push(e)
		d.nmemo++
		cost = costMemo
	default:
		if d.sparse == nil {
			d.sparse = make(map[uint32]item)
		}
		if !d.inSparse(idx) {
			d.nmemo++
			cost = costSparse
		}
		d.sparse[uint32(idx)] = e.item()
	}
	if dict, ok := top.v.(*Dict); ok && idx < uint64(d.memo.len()) && idx < math.MaxInt32 {
		dict.memo = int32(idx) + 1
	}
	if held := d.nmemo - d.forgotten; held > d.opts.MaxMemo {
		return d.fail(ErrLimit, "more than %d memo entries held at once (Options.MaxMemo; a snapshot holds about one per distinct string, frame, stack, segment and block, besides its trace)", d.opts.MaxMemo)
	}
	if per := max(d.read(), d.limit)/memoBytesPerEntry + memoSlack; int64(d.nmemo) > per && d.opts.MaxMemo == DefaultMaxMemo {
		return d.fail(ErrLimit, "more than %d memo entries (Options.MaxMemo: at most one per %d input bytes, which no pickle Python writes exceeds; this one stored %d in its first %d bytes)",
			per, memoBytesPerEntry, d.nmemo, d.read()+1)
	}
	return d.charge(cost)
}

func (d *decoder) inSparse(idx uint64) bool {
	_, ok := d.sparse[uint32(idx)]
	return ok
}

func (d *decoder) memoGet(idx uint64) error {
	var it item
	if idx < uint64(d.memo.len()) {
		m := d.memo.at(idx)
		switch {
		case m == nil:
			it = item{v: Forgotten{Index: idx}}
		case m.set:
			it = m.item()
		default:
			return d.fail(ErrMalformed, "memo index %d was never stored", idx)
		}
	} else if s, ok := d.sparse[uint32(idx)]; ok {
		it = s
	} else {
		return d.fail(ErrMalformed, "memo index %d was never stored", idx)
	}
	it.off = d.op
	d.pushItem(it)
	return nil
}
