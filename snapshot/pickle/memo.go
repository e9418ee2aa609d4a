package pickle

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
	n      int
}

func (m *memoTable) len() int { return m.n }

func (m *memoTable) at(i uint64) *memoEntry {
	return &m.chunks[i/memoChunk][i%memoChunk]
}

func (m *memoTable) push(e memoEntry) {
	if k := len(m.chunks); k > 0 && len(m.chunks[k-1]) < memoChunk {
		// The first chunk may start small and grow up to memoChunk.
		m.chunks[k-1] = append(m.chunks[k-1], e)
	} else {
		c := make([]memoEntry, 1, memoChunk)
		c[0] = e
		m.chunks = append(m.chunks, c)
	}
	m.n++
}

func (d *decoder) memoPut(idx uint64) error {
	if len(d.stack) == d.base {
		return d.fail(ErrMalformed, "memo store with an empty stack")
	}
	top := d.stack[len(d.stack)-1]
	e := memoEntry{v: top.v, off: int64(d.op), depth: top.depth, set: true}
	cost := int64(0)
	switch n := uint64(d.memo.len()); {
	case idx < n:
		m := d.memo.at(idx)
		if !m.set {
			d.nmemo++
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
	if d.nmemo > d.opts.MaxMemo {
		return d.fail(ErrLimit, "more than %d memo entries (Options.MaxMemo; a pickle Python writes stores at most one per %d input bytes)", d.opts.MaxMemo, memoBytesPerEntry)
	}
	return d.charge(cost)
}

func (d *decoder) inSparse(idx uint64) bool {
	_, ok := d.sparse[uint32(idx)]
	return ok
}

func (d *decoder) memoGet(idx uint64) error {
	var it item
	if idx < uint64(d.memo.len()) && d.memo.at(idx).set {
		it = d.memo.at(idx).item()
	} else if s, ok := d.sparse[uint32(idx)]; ok {
		it = s
	} else {
		return d.fail(ErrMalformed, "memo index %d was never stored", idx)
	}
	it.off = int64(d.op)
	d.pushItem(it)
	return nil
}
