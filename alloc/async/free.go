// Async pool: who may use which free bytes, kept so that no operation costs
// time or memory in proportion to the number of streams.
// See package alloc for the overview.

package async

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/mem"
)

// Free mapped memory is ready (usable by every stream) or pending on the one
// stream that freed it. Stream s may use usable(s) = ready ∪ pending(s),
// coalesced. Earlier versions kept usable(s) as a set per stream and
// mirrored every change to ready into each of them: O(streams) per
// operation and a copy of ready per stream, which made 20,000 streams take
// minutes and gigabytes. Now usable(s) is never stored whole:
//
//   - own(s) holds the extents of usable(s) that contain a pending byte of
//     s: each is a pending extent of s merged with the ready extents it
//     touches (and through them with further pending extents of s);
//   - every other extent of usable(s) is a ready extent that touches no
//     pending extent of s, and ready extents that do touch one are tagged
//     with s in the size index (readyix.go), so best fit can skip them;
//   - pendStart and pendEnd name the stream of the pending extent that
//     starts or ends at an address, so a change to a ready extent finds the
//     at most two streams whose own runs it touches. While at most one
//     stream has pending frees (one-stream traces, the common case), its
//     pending set answers that instead and the maps are not kept: they
//     cost a third of a free+alloc pair. They are built when a second
//     stream gets pending frees, from the first one's (no more than it was
//     freed since nothing was pending), and dropped when none has.
//
// Each operation so changes ready memory, at most two streams' own runs and
// the size index, O(log n) each, and a stream with nothing pending costs one
// small struct.

// stream is the pool's view of one CUDA stream.
type stream struct {
	id int
	// pending holds blocks freed on this stream since the last Sync: safe
	// to reuse here (stream order) but not on other streams yet. +Free,
	// -carve, emptied into ready by Sync. Nil while nothing is pending.
	pending *extent.Set
	// own is the part of ready ∪ pending, coalesced, that holds a pending
	// byte of this stream (see above). It is made at the first ready
	// extent that touches a pending one (absorb); until then the own runs
	// are the pending extents themselves and own is nil, which saves a
	// set (5 KiB) per stream with pending frees and its upkeep per
	// operation. Once made it stays until nothing is pending.
	own *extent.Set
	// busy is the stream's index in Allocator.busy while pending is not nil.
	busy int
}

// usable is the free memory one stream may use: ready ∪ its pending frees,
// coalesced, read through ready and the stream's own runs. st is nil for a
// stream the pool has not seen, which may use ready memory alone.
type usable struct {
	a  *Allocator
	st *stream
}

func (u usable) own() *extent.Set {
	if u.st == nil {
		return nil
	}
	return u.st.runs()
}

// runs returns st's own runs: own, or the pending extents while own is not
// made (nil when nothing is pending).
func (st *stream) runs() *extent.Set {
	if st.own != nil {
		return st.own
	}
	return st.pending
}

// Find returns the usable extent that contains addr.
func (u usable) Find(addr uint64) (extent.Extent, bool) {
	if own := u.own(); own != nil {
		if e, ok := own.Find(addr); ok {
			return e, true
		}
	}
	// A ready extent that touches a pending byte of the stream is inside
	// one of its own runs, found above; any other is usable on its own.
	return u.a.ready.Find(addr)
}

// Largest returns the size of the largest usable extent (0 if none). A
// ready extent inside an own run is smaller than the run, so the largest of
// ready and own is the largest usable extent.
func (u usable) Largest() int64 {
	var n int64
	if e, ok := u.a.ready.Largest(); ok {
		n = e.Size
	}
	if own := u.own(); own != nil {
		if e, ok := own.Largest(); ok {
			n = max(n, e.Size)
		}
	}
	return n
}

// BestFit returns the smallest usable extent of at least size bytes, the
// lowest address among equals.
func (u usable) BestFit(size int64) (extent.Extent, bool) {
	own := u.own()
	if own == nil {
		return u.a.ready.BestFit(size)
	}
	o, okO := own.BestFit(size)
	r, okR := u.a.readyIx.bestFitWithout(size, u.st.id)
	switch {
	case !okR:
		return o, okO
	case !okO:
		return r, true
	case r.Size < o.Size || (r.Size == o.Size && r.Addr < o.Addr):
		return r, true
	}
	return o, true
}

// All yields the usable extents in address order. It costs O(n log n); the
// tests use it.
func (u usable) All() iter.Seq[extent.Extent] {
	return func(yield func(extent.Extent) bool) {
		own := u.own()
		var out []extent.Extent
		for e := range u.a.ready.All() {
			if own == nil {
				if !yield(e) {
					return
				}
				continue
			}
			if _, in := own.Find(e.Addr); !in {
				out = append(out, e)
			}
		}
		if own == nil {
			return
		}
		out = slices.AppendSeq(out, own.All())
		slices.SortFunc(out, func(x, y extent.Extent) int { return cmp.Compare(x.Addr, y.Addr) })
		for _, e := range out {
			if !yield(e) {
				return
			}
		}
	}
}

// usableFor returns what stream id may use, without adding the stream.
func (a *Allocator) usableFor(id int) usable {
	return usable{a: a, st: a.streams[id]}
}

// streamFor returns the state of stream id, adding it on first use.
func (a *Allocator) streamFor(id int) *stream {
	st := a.streams[id]
	if st == nil {
		st = &stream{id: id, busy: -1}
		a.streams[id] = st
	}
	return st
}

// tagsOf returns the streams whose pending extents touch the ready extent e.
func (a *Allocator) tagsOf(e extent.Extent) tags {
	var t tags
	if id, ok := a.pendingEndingAt(e.Addr); ok {
		t.add(id)
	}
	if id, ok := a.pendingStartingAt(e.End()); ok {
		t.add(id)
	}
	return t
}

// pendingEndingAt returns the stream of the pending extent that ends at addr.
func (a *Allocator) pendingEndingAt(addr uint64) (int, bool) {
	if a.tracked {
		id, ok := a.pendEnd[addr]
		return id, ok
	}
	if len(a.busy) == 0 || addr == 0 {
		return 0, false
	}
	st := a.busy[0]
	e, ok := st.pending.Find(addr - 1)
	return st.id, ok && e.End() == addr
}

// pendingStartingAt returns the stream of the pending extent that starts at addr.
func (a *Allocator) pendingStartingAt(addr uint64) (int, bool) {
	if a.tracked {
		id, ok := a.pendStart[addr]
		return id, ok
	}
	if len(a.busy) == 0 {
		return 0, false
	}
	st := a.busy[0]
	e, ok := st.pending.Find(addr)
	return st.id, ok && e.Addr == addr
}

// readyEndingAt returns the ready extent that ends at addr, if any.
func (a *Allocator) readyEndingAt(addr uint64) (extent.Extent, bool) {
	if addr == 0 {
		return extent.Extent{}, false
	}
	e, ok := a.ready.Find(addr - 1)
	return e, ok && e.End() == addr
}

// readyStartingAt returns the ready extent that starts at addr, if any.
func (a *Allocator) readyStartingAt(addr uint64) (extent.Extent, bool) {
	e, ok := a.ready.Find(addr)
	return e, ok && e.Addr == addr
}

// addReady makes [addr, addr+n) ready: pages just mapped, or frees that a
// Sync completed.
func (a *Allocator) addReady(addr uint64, n int64) {
	if l, ok := a.readyEndingAt(addr); ok {
		a.readyIx.remove(l)
	}
	if r, ok := a.readyStartingAt(addr + uint64(n)); ok {
		a.readyIx.remove(r)
	}
	a.ready.Insert(addr, n)
	e, _ := a.ready.Find(addr)
	t := a.tagsOf(e)
	a.readyIx.insert(e, t)
	for i := range t.n {
		a.absorb(a.streams[t.s[i]], e)
	}
}

// takeReady takes [addr, addr+n), which lies in one ready extent, out of
// ready memory: it is allocated or unmapped.
func (a *Allocator) takeReady(addr uint64, n int64) {
	e, ok := a.ready.Find(addr)
	end := addr + uint64(n)
	if !ok || end > e.End() || end <= addr {
		panic(fmt.Sprintf("async: taking %d bytes at %s that are not ready", n, mem.FormatAddr(addr)))
	}
	t := a.readyIx.remove(e)
	a.ready.Take(addr, n)
	if e.Addr < addr {
		l := extent.Extent{Addr: e.Addr, Size: int64(addr - e.Addr)}
		a.readyIx.insert(l, a.tagsOf(l))
	}
	if end < e.End() {
		r := extent.Extent{Addr: end, Size: int64(e.End() - end)}
		a.readyIx.insert(r, a.tagsOf(r))
	}
	for i := range t.n {
		a.cut(a.streams[t.s[i]], addr, end)
	}
}

// absorb makes the ready extent e, which touches a pending extent of st,
// part of st's own runs.
func (a *Allocator) absorb(st *stream, e extent.Extent) {
	if st.own == nil {
		// The first ready extent to touch st's pending frees: from now on
		// the own runs differ from them. The copy costs no more than the
		// frees that made them since st last had nothing pending.
		st.own = a.newSet()
		for p := range st.pending.All() {
			st.own.Insert(p.Addr, p.Size)
		}
	}
	for {
		o, ok := st.own.Find(e.Addr)
		if !ok {
			o, ok = st.own.Next(e.Addr)
		}
		if !ok || o.Addr >= e.End() {
			break
		}
		lo, hi := max(o.Addr, e.Addr), min(o.End(), e.End())
		st.own.Take(lo, int64(hi-lo))
	}
	st.own.Insert(e.Addr, e.Size)
}

// cut takes [lo, hi), bytes of one of st's own runs that are no longer
// free, out of the run, and drops what is left on either side if it no
// longer holds a pending byte of st.
func (a *Allocator) cut(st *stream, lo, hi uint64) {
	if st.own == nil {
		return // the own runs are the pending extents, which the caller changed
	}
	m, ok := st.own.Find(lo)
	if !ok || hi > m.End() {
		panic(fmt.Sprintf("async: bytes [%s,%s) are not in stream %d's own free memory", mem.FormatAddr(lo), mem.FormatAddr(hi), st.id))
	}
	st.own.Take(lo, int64(hi-lo))
	if m.Addr < lo && !st.hasPending(m.Addr, lo) {
		st.own.Take(m.Addr, int64(lo-m.Addr))
	}
	if hi < m.End() && !st.hasPending(hi, m.End()) {
		st.own.Take(hi, int64(m.End()-hi))
	}
}

// hasPending reports whether [lo, hi) holds a byte pending on st.
func (st *stream) hasPending(lo, hi uint64) bool {
	if _, ok := st.pending.Find(lo); ok {
		return true
	}
	e, ok := st.pending.Next(lo)
	return ok && e.Addr < hi
}

// addPending records [addr, addr+n), a block just freed on st, as pending
// on st. Where the block joins a pending extent of st, the ready extent on
// that side (if any) touched st already and stays as it is; where it does
// not, a ready extent there now touches st.
func (a *Allocator) addPending(st *stream, addr uint64, n int64) {
	if st.pending == nil {
		a.makeBusy(st)
	}
	end := addr + uint64(n)
	// Untracked, st is the one stream with pending frees; whether the
	// block joins them matters only for the ready extents, and a ready
	// extent where it would join is not there.
	joinsLeft, joinsRight := false, false
	if a.tracked {
		id, ok := a.pendEnd[addr]
		joinsLeft = ok && id == st.id
		id, ok = a.pendStart[end]
		joinsRight = ok && id == st.id
		if joinsLeft {
			delete(a.pendEnd, addr)
		} else {
			a.pendStart[addr] = st.id
		}
		if joinsRight {
			delete(a.pendStart, end)
		} else {
			a.pendEnd[end] = st.id
		}
	}
	st.pending.Insert(addr, n)
	if st.own != nil {
		st.own.Insert(addr, n)
	}
	if a.ready.Len() == 0 {
		return
	}
	if !joinsLeft {
		if r, ok := a.readyEndingAt(addr); ok {
			a.readyIx.retag(r, a.tagsOf(r))
			a.absorb(st, r)
		}
	}
	if !joinsRight {
		if r, ok := a.readyStartingAt(end); ok {
			a.readyIx.retag(r, a.tagsOf(r))
			a.absorb(st, r)
		}
	}
}

// takePending takes [addr, addr+n) out of p, a pending extent of st that
// holds it: it is allocated again on st. Only an end of p that moves
// changes what the ready extent beyond it touches.
func (a *Allocator) takePending(st *stream, p extent.Extent, addr uint64, n int64) {
	end := addr + uint64(n)
	if addr < p.Addr || end > p.End() || end <= addr {
		panic(fmt.Sprintf("async: taking %d bytes at %s that are not pending on stream %d", n, mem.FormatAddr(addr), st.id))
	}
	st.pending.Take(addr, n)
	left, right := p.Addr < addr, end < p.End() // pieces of p that stay pending
	if a.tracked {
		if left {
			a.pendEnd[addr] = st.id
		} else {
			delete(a.pendStart, p.Addr)
		}
		if right {
			a.pendStart[end] = st.id
		} else {
			delete(a.pendEnd, p.End())
		}
	}
	// The ready extents beyond an end of p that moved now touch a live
	// block there instead of st's pending bytes.
	var rl, rr extent.Extent
	var okL, okR bool
	if a.ready.Len() != 0 {
		if !left {
			if rl, okL = a.readyEndingAt(p.Addr); okL {
				a.readyIx.retag(rl, a.tagsOf(rl))
			}
		}
		if !right {
			if rr, okR = a.readyStartingAt(p.End()); okR {
				a.readyIx.retag(rr, a.tagsOf(rr))
			}
		}
	}
	switch {
	case st.own == nil:
	case okL || okR:
		a.cut(st, addr, end)
	default:
		// What is left of the own run on each side is a pending piece of
		// p, or nothing: the run keeps its pending bytes, and cut's
		// checks would find nothing to drop.
		st.own.Take(addr, n)
	}
	if st.pending.Len() == 0 {
		if st.own != nil && st.own.Len() != 0 {
			panic(fmt.Sprintf("async: stream %d has own free memory %s without pending frees", st.id, st.own.String()))
		}
		a.retire(st)
	}
}

// makeBusy gives st its pending set, recycled where possible. A
// second stream with pending frees starts the tracking of pending extent
// ends.
func (a *Allocator) makeBusy(st *stream) {
	if len(a.busy) == 1 && !a.tracked {
		first := a.busy[0]
		for e := range first.pending.All() {
			a.pendStart[e.Addr], a.pendEnd[e.End()] = first.id, first.id
		}
		a.tracked = true
	}
	st.pending = a.newSet()
	st.busy = len(a.busy)
	a.busy = append(a.busy, st)
}

func (a *Allocator) newSet() *extent.Set {
	if n := len(a.spareSets); n > 0 {
		s := a.spareSets[n-1]
		a.spareSets = a.spareSets[:n-1]
		return s
	}
	s := new(extent.Set)
	s.Init(a.base, a.vaSize)
	return s
}

// retire empties st's sets and recycles them: nothing is pending on st.
// The caller fixes pendStart and pendEnd; with no stream left with pending
// frees, tracking stops.
func (a *Allocator) retire(st *stream) {
	for _, s := range []*extent.Set{st.pending, st.own} {
		if s != nil {
			s.Clear()
			a.spareSets = append(a.spareSets, s)
		}
	}
	st.pending, st.own = nil, nil
	last := a.busy[len(a.busy)-1]
	a.busy[st.busy], last.busy = last, st.busy
	a.busy = a.busy[:len(a.busy)-1]
	st.busy = -1
	if len(a.busy) == 0 && a.tracked {
		clear(a.pendStart)
		clear(a.pendEnd)
		a.tracked = false
	}
}

// completePending is the first half of Sync: every pending free becomes
// ready.
func (a *Allocator) completePending() {
	a.scratch = a.scratch[:0]
	for len(a.busy) > 0 {
		st := a.busy[len(a.busy)-1]
		a.scratch = slices.AppendSeq(a.scratch, st.pending.All())
		a.retire(st)
	}
	// With nothing pending no ready extent is tagged; every tagged one
	// touches a pending extent inserted here, so addReady replaces it.
	for _, e := range a.scratch {
		a.addReady(e.Addr, e.Size)
	}
}
