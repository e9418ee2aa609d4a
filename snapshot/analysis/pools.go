package analysis

import (
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/snapshot"
)

// poolRouter names the pool of each alloc event of a replay, as PyTorch
// routed it (get_pool: the private pool of a CUDA-graph capture or MemPool
// context underway on the stream, else the default pools). A trace entry
// that carries pool_id says so itself. Otherwise the pool is the recorded
// pool of the segment the recorded address lies in: which capture was
// underway is a fact of the program, not a choice of the allocator, and
// the segment's pool is fixed when the segment is made. The address
// within that pool stays the model's choice, so routing from it cannot
// turn a wrong placement into a match.
//
// A segment's pool comes from the entry's pool_id when it has one, else
// from the final snapshot's segment_pool_id for a segment that lives to
// the end (the last segment_alloc at its address, not freed after, of the
// recorded size); a segment made and freed within the trace with no
// pool_id is taken as the default pools'.
type poolRouter struct {
	live  rangeSet            // the recorded live segments
	pools map[uint64][2]int64 // their private pools, by base address
	// final: for a segment_alloc whose segment is the final snapshot's,
	// that segment's pool (by event index).
	final   map[int][2]int64
	private int // alloc events routed to a private pool
}

// seeds is every pre-trace segment to seed, the default pools' first.
func (p preTrace) seeds() []caching.SeedSegment {
	return append(p.segs[:len(p.segs):len(p.segs)], p.private...)
}

// newPoolRouter prepares the routing of device d's trace, starting from the
// pre-trace segments.
func newPoolRouter(s *snapshot.Snapshot, d int, trace *snapshot.Trace, pre preTrace) *poolRouter {
	r := &poolRouter{pools: map[uint64][2]int64{}}
	for _, sg := range pre.segs {
		r.live.set(sg.Addr, sg.Size)
	}
	for _, sg := range pre.private {
		r.live.set(sg.Addr, sg.Size)
		r.pools[sg.Addr] = sg.Pool
	}
	type finalSeg struct {
		size int64
		pool [2]int64
	}
	var finals map[uint64]finalSeg
	for _, seg := range s.Segments {
		if seg.Device == d && seg.PoolID != [2]int64{} {
			if finals == nil {
				finals = map[uint64]finalSeg{}
			}
			finals[seg.Address] = finalSeg{seg.TotalSize, seg.PoolID}
		}
	}
	if finals == nil {
		return r // no private segment at the end: only pool_id entries route
	}
	type segEvent struct {
		i    int
		size int64
	}
	last := map[uint64]segEvent{} // address → its segment_alloc still live at the end
	for i, e := range trace.All() {
		switch e.Action {
		case "segment_alloc":
			last[e.Addr] = segEvent{i, e.Size}
		case "segment_free":
			delete(last, e.Addr)
		}
	}
	r.final = map[int][2]int64{}
	for addr, se := range last {
		if f, ok := finals[addr]; ok && f.size == se.size {
			r.final[se.i] = f.pool
		}
	}
	return r
}

// segmentAlloc records the segment of event i.
func (r *poolRouter) segmentAlloc(i int, e snapshot.TraceEntry) {
	r.live.set(e.Addr, e.Size)
	pool := r.final[i]
	if e.HasPoolID {
		pool = e.PoolID
	}
	if pool != [2]int64{} {
		r.pools[e.Addr] = pool
	} else {
		delete(r.pools, e.Addr)
	}
}

// segmentFree forgets the segment at addr.
func (r *poolRouter) segmentFree(addr uint64) {
	r.live.del(addr)
	delete(r.pools, addr)
}

// route is the pool of alloc event e.
func (r *poolRouter) route(e snapshot.TraceEntry) caching.PoolID {
	pool := [2]int64{}
	if e.HasPoolID {
		pool = e.PoolID
	} else if len(r.pools) > 0 {
		if lo, ok := r.live.containing(e.Addr); ok {
			pool = r.pools[lo]
		}
	}
	if pool != [2]int64{} {
		r.private++
	}
	return caching.PoolID(pool)
}

// containing returns the key of the range that holds address a, if any:
// the one with the largest lo ≤ a, when it reaches past a (the recorded
// segments do not overlap). A range whose end wraps holds every a ≥ lo.
func (s *rangeSet) containing(a uint64) (uint64, bool) {
	var best *rangeNode
	for t := s.root; t != nil; {
		if t.lo <= a {
			best = t
			t = t.right
		} else {
			t = t.left
		}
	}
	if best != nil && best.hi > a {
		return best.lo, true
	}
	found, at := false, uint64(0)
	for lo := range s.wrapped {
		if lo <= a && (!found || lo > at) {
			found, at = true, lo
		}
	}
	return at, found
}
