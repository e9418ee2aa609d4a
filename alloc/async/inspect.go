// Async pool inspection: stats, layout, clones and the invariant check.
// See package alloc for the overview.

package async

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/mem"
)

// ErrBroken is wrapped by CheckInvariants for a violated invariant.
var ErrBroken = errors.New("async: broken invariant")

// segments counts the maximal mapped runs: the gaps between unmapped
// extents, plus one before the first and one after the last when mapped
// memory reaches the ends of the virtual range.
func (a *Allocator) segments() int {
	k := a.unmapped.Len()
	if k == 0 {
		return 1 // the whole range is mapped (impossible while vaSize > capacity)
	}
	n := k - 1
	if f, _ := a.unmapped.First(); f.Addr > a.base {
		n++
	}
	if l, _ := a.unmapped.Last(); l.End() < a.base+uint64(a.vaSize) {
		n++
	}
	return n
}

// Stats returns the counters, all kept incrementally. Device allocations
// and frees count 2 MiB pages mapped and unmapped.
func (a *Allocator) Stats() alloc.Stats {
	return alloc.Stats{
		Capacity:      a.dev.Capacity(),
		OtherUse:      a.dev.OtherUse(),
		Reserved:      a.mapped,
		Allocated:     a.allocated,
		Requested:     a.requested,
		PeakReserved:  a.peakMapped,
		PeakAllocated: a.peakAlloc,
		Segments:      a.segments(),
		LiveBlocks:    a.live.Len(),
		Allocs:        a.allocs,
		Frees:         a.frees,
		OOMs:          a.ooms,
		DeviceAllocs:  a.pagesMapped,
		DeviceFrees:   a.pagesUnmapped,
		Retries:       a.retries,
	}
}

// pieces returns, in address order, the live blocks and the free mapped
// memory: ready and pending extents, with touching ones merged (a block
// pending on one stream next to ready memory is one free block in the
// layout; who may reuse it when is not part of the layout).
func (a *Allocator) pieces() []mem.Block {
	var free []extent.Extent
	free = slices.AppendSeq(free, a.ready.All())
	for _, st := range a.busy {
		free = slices.AppendSeq(free, st.pending.All())
	}
	out := make([]mem.Block, 0, len(free)+a.live.Len())
	for _, e := range free {
		out = append(out, mem.Block{Addr: e.Addr, Size: e.Size, State: mem.Free})
	}
	a.live.Each(func(_ alloc.Handle, b *block) {
		out = append(out, mem.Block{Addr: b.addr, Size: b.size, Requested: b.requested, State: mem.Active})
	})
	slices.SortFunc(out, func(x, y mem.Block) int { return cmp.Compare(x.Addr, y.Addr) })
	merged := out[:0]
	for _, b := range out {
		if n := len(merged); n > 0 && b.State == mem.Free && merged[n-1].State == mem.Free && merged[n-1].End() == b.Addr {
			merged[n-1].Size += b.Size
			continue
		}
		merged = append(merged, b)
	}
	return merged
}

// Layout returns one expandable segment per maximal mapped run, like
// PyTorch's expandable segments in a snapshot, each tiled by its live and
// free blocks.
func (a *Allocator) Layout() mem.Layout {
	l := mem.Layout{
		Capacity:       a.dev.Capacity(),
		OtherUse:       a.dev.OtherUse(),
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
	}
	pieces := a.pieces()
	i := 0
	addRun := func(start, end uint64) {
		if start >= end {
			return
		}
		s := mem.Segment{Addr: start, Size: int64(end - start), Stream: 0, Pool: Name, Expandable: true}
		for ; i < len(pieces) && pieces[i].Addr < end; i++ {
			s.Blocks = append(s.Blocks, pieces[i])
		}
		l.Segments = append(l.Segments, s)
	}
	at := a.base
	for u := range a.unmapped.All() {
		addRun(at, u.Addr)
		at = u.End()
	}
	addRun(at, a.base+uint64(a.vaSize))
	return l
}

// clone returns a deep copy on a clone of the device.
func (a *Allocator) clone() *Allocator {
	c := *a
	c.dev = a.dev.Clone()
	c.unmapped = a.unmapped.Clone()
	c.ready = a.ready.Clone()
	c.readyIx = a.readyIx.clone()
	c.streams = make(map[int]*stream, len(a.streams))
	for id := range a.streams {
		c.streams[id] = &stream{id: id, busy: -1}
	}
	c.busy = make([]*stream, len(a.busy))
	for i, st := range a.busy {
		cs := c.streams[st.id]
		p := st.pending.Clone()
		cs.pending, cs.busy = &p, i
		if st.own != nil {
			o := st.own.Clone()
			cs.own = &o
		}
		c.busy[i] = cs
	}
	c.pendStart, c.pendEnd = maps.Clone(a.pendStart), maps.Clone(a.pendEnd)
	c.live = a.live.Clone()
	c.scratch, c.spareSets = nil, nil
	return &c
}

// Clone returns an independent copy with its own device.
func (a *Allocator) Clone() alloc.Allocator { return a.clone() }

// CheckInvariants verifies the invariants listed in the package doc and
// returns the first violation, wrapping ErrBroken. It costs O(n log n), and
// O(n log n) more for each stream with pending frees.
func (a *Allocator) CheckInvariants() error {
	type named struct {
		name string
		s    *extent.Set
	}
	sets := []named{{"unmapped", &a.unmapped}, {"ready", &a.ready}}
	for i, st := range a.busy {
		if st.pending == nil || st.pending.Len() == 0 || st.busy != i || a.streams[st.id] != st {
			return fmt.Errorf("%w: stream %d is listed as having pending frees, but has none or is not known", ErrBroken, st.id)
		}
		sets = append(sets,
			named{fmt.Sprintf("stream %d pending", st.id), st.pending},
			named{fmt.Sprintf("stream %d own", st.id), st.runs()})
	}
	for id, st := range a.streams {
		if st.id != id || (st.busy < 0) != (st.pending == nil) || (st.pending == nil && st.own != nil) {
			return fmt.Errorf("%w: stream %d: busy %d with pending %v, own %v", ErrBroken, id, st.busy, st.pending != nil, st.own != nil)
		}
	}
	for _, x := range sets {
		if err := x.s.CheckInvariants(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBroken, x.name, err)
		}
	}
	end := a.base + uint64(a.vaSize)
	switch {
	case a.mapped != a.vaSize-a.unmapped.Total():
		return fmt.Errorf("%w: mapped %d, but %d of %d virtual bytes are unmapped", ErrBroken, a.mapped, a.unmapped.Total(), a.vaSize)
	case a.dev.Used() != a.mapped:
		return fmt.Errorf("%w: device holds %d bytes, pool maps %d", ErrBroken, a.dev.Used(), a.mapped)
	case a.peakMapped < a.mapped || a.peakAlloc < a.allocated:
		return fmt.Errorf("%w: peaks %d/%d below current %d/%d", ErrBroken, a.peakMapped, a.peakAlloc, a.mapped, a.allocated)
	}
	for u := range a.unmapped.All() {
		if (u.Addr-a.base)%uint64(mem.PageSize) != 0 || u.Size%mem.PageSize != 0 || u.Addr < a.base || u.End() > end {
			return fmt.Errorf("%w: unmapped extent %v is not whole pages of the range", ErrBroken, u)
		}
	}
	// Every virtual byte is in exactly one of: unmapped, ready, one stream's
	// pending, one live block.
	type piece struct {
		addr uint64
		size int64
		what string
	}
	var ps []piece
	add := func(s *extent.Set, what string) {
		for e := range s.All() {
			ps = append(ps, piece{e.Addr, e.Size, what})
		}
	}
	add(&a.unmapped, "unmapped")
	add(&a.ready, "ready")
	for _, st := range a.busy {
		add(st.pending, fmt.Sprintf("pending on stream %d", st.id))
	}
	var allocated, requested int64
	var bad error
	a.live.Each(func(h alloc.Handle, b *block) {
		ps = append(ps, piece{b.addr, b.size, "live"})
		allocated += b.size
		requested += b.requested
		if b.size%Align != 0 || b.requested <= 0 || b.requested > b.size {
			bad = fmt.Errorf("%w: live block %x at %s: size %d requested %d", ErrBroken, h, mem.FormatAddr(b.addr), b.size, b.requested)
		}
		if a.streams[b.stream] == nil {
			bad = fmt.Errorf("%w: live block %x on unknown stream %d", ErrBroken, h, b.stream)
		}
	})
	if bad != nil {
		return bad
	}
	slices.SortFunc(ps, func(x, y piece) int { return cmp.Compare(x.addr, y.addr) })
	at := a.base
	for _, p := range ps {
		if p.addr != at || (p.addr-a.base)%Align != 0 {
			return fmt.Errorf("%w: %s piece at %s, expected the next one at %s (aligned to %d)", ErrBroken,
				p.what, mem.FormatAddr(p.addr), mem.FormatAddr(at), Align)
		}
		at += uint64(p.size)
	}
	if at != end {
		return fmt.Errorf("%w: pieces end at %s, the range at %s", ErrBroken, mem.FormatAddr(at), mem.FormatAddr(end))
	}
	if allocated != a.allocated || requested != a.requested {
		return fmt.Errorf("%w: live blocks sum to %d/%d, counters say %d/%d", ErrBroken, allocated, requested, a.allocated, a.requested)
	}
	return a.checkFree()
}

// ownRuns recomputes st's own runs from ready memory and its pending
// frees: each pending extent extended through the ready extents and
// further pending extents of st that it touches, in address order. It
// costs O(log n) per pending extent and ready extent it reaches, not a pass
// over all of ready memory per stream.
func (a *Allocator) ownRuns(st *stream) []extent.Extent {
	var runs []extent.Extent
	for p := range st.pending.All() {
		if k := len(runs); k > 0 && runs[k-1].End() >= p.End() {
			continue // inside the previous run
		}
		lo, hi := p.Addr, p.End()
		for {
			r, ok := a.readyEndingAt(lo)
			if !ok {
				break
			}
			lo = r.Addr
			q, ok := st.pending.Find(lo - 1)
			if lo == 0 || !ok || q.End() != lo {
				break
			}
			lo = q.Addr
		}
		for {
			r, ok := a.readyStartingAt(hi)
			if !ok {
				break
			}
			hi = r.End()
			q, ok := st.pending.Find(hi)
			if !ok || q.Addr != hi {
				break
			}
			hi = q.End()
		}
		runs = append(runs, extent.Extent{Addr: lo, Size: int64(hi - lo)})
	}
	return runs
}

// checkFree verifies the structures of free.go: pendStart and pendEnd name
// exactly the ends of the pending extents, each stream's own runs are the
// extents of ready ∪ its pending, coalesced, that hold a pending byte, and
// the size index holds every ready extent tagged with the streams whose
// pending extents touch it.
func (a *Allocator) checkFree() error {
	start, end := map[uint64]int{}, map[uint64]int{}
	for _, st := range a.busy {
		for e := range st.pending.All() {
			start[e.Addr], end[e.End()] = st.id, st.id
		}
		if got, want := slices.Collect(st.runs().All()), a.ownRuns(st); !slices.Equal(got, want) {
			return fmt.Errorf("%w: stream %d own runs %v, want %v (ready ∪ pending runs with a pending byte)", ErrBroken, st.id, got, want)
		}
	}
	if !a.tracked {
		start, end = map[uint64]int{}, map[uint64]int{}
		if len(a.busy) > 1 {
			return fmt.Errorf("%w: %d streams have pending frees, but their ends are not tracked", ErrBroken, len(a.busy))
		}
	}
	if !maps.Equal(start, a.pendStart) || !maps.Equal(end, a.pendEnd) {
		return fmt.Errorf("%w: pending extent ends %v/%v, want %v/%v", ErrBroken, a.pendStart, a.pendEnd, start, end)
	}
	tagged := map[extent.Extent]tags{}
	for e := range a.ready.All() {
		tagged[e] = a.tagsOf(e)
	}
	if err := a.readyIx.check(tagged); err != nil {
		return fmt.Errorf("%w: %w", ErrBroken, err)
	}
	return nil
}
