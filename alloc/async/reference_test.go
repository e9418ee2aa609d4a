package async

// The pool before free.go and readyix.go, kept as the reference that the
// current one must match operation for operation (TestMatchesPerStreamSets):
// every stream kept its own usable set, ready ∪ pending, and every change to
// ready memory was mirrored into each of them, O(streams) per operation.

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/mem"
)

// stream is the pool's view of one CUDA stream.
type refStream struct {
	id int
	// pending holds blocks freed on this stream since the last Sync: safe
	// to reuse here (stream order) but not on other streams yet. +Free,
	// -carve, emptied into ready by Sync.
	pending extent.Set
	// usable is ready ∪ pending, coalesced: every free byte an allocation on
	// this stream may use. It mirrors every change to ready and pending.
	usable extent.Set
}

// refPool is the pool as it was before free.go: a usable set per stream.
type refPool struct {
	dev    *mem.Device
	cfg    Config
	base   uint64 // first address of the reserved virtual range; fixed
	vaSize int64  // bytes of virtual range, whole pages; fixed

	unmapped extent.Set        // virtual range with no physical pages, page aligned
	ready    extent.Set        // free mapped bytes usable by every stream
	streams  []*refStream      // by id; a stream is added at its first Alloc
	live     slot.Table[block] // live allocations by handle
	scratch  []extent.Extent   // reused by Sync; holds nothing between calls

	mapped    int64 // vaSize - unmapped.Total(): physical bytes held; +map, -unmap
	allocated int64 // Σ live sizes; +Alloc, -Free
	requested int64 // Σ live requests; +Alloc, -Free

	peakMapped, peakAlloc int64 // only grow
	allocs, frees, ooms   int64 // only grow
	pagesMapped           int64 // pages mapped over the pool's life; only grows
	pagesUnmapped         int64 // pages unmapped over the pool's life; only grows
	retries               int64 // allocations that needed the trim-and-retry path; only grows
}

// newRefPool reserves the pool's virtual range on dev. No physical memory is taken
// until the first allocation.
func newRefPool(dev *mem.Device, cfg Config) (*refPool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := dev.CheckUnused("async"); err != nil {
		return nil, err
	}
	c := dev.Capacity()
	vaSize := mem.RoundUp(c/vaDen*vaNum+(c%vaDen*vaNum+vaDen-1)/vaDen, mem.PageSize)
	a := &refPool{dev: dev, cfg: cfg, vaSize: vaSize, base: dev.ReserveVA(vaSize)}
	a.unmapped.Init(a.base, vaSize)
	a.unmapped.Insert(a.base, vaSize)
	a.ready.Init(a.base, vaSize)
	a.check()
	return a, nil
}

// streamFor returns the state of stream id, adding it on first use: a new
// stream can use every ready byte and has nothing pending.
func (a *refPool) streamFor(id int) *refStream {
	i, found := slices.BinarySearchFunc(a.streams, id, func(s *refStream, id int) int { return cmp.Compare(s.id, id) })
	if found {
		return a.streams[i]
	}
	st := &refStream{id: id, usable: a.ready.Clone()}
	st.pending.Init(a.base, a.vaSize)
	a.streams = slices.Insert(a.streams, i, st)
	return st
}

// usableFor returns the free extents stream id may use, without adding the
// stream: ready alone for a stream the pool has not seen.
func (a *refPool) usableFor(id int) *extent.Set {
	for _, st := range a.streams {
		if st.id == id {
			return &st.usable
		}
	}
	return &a.ready
}

// Alloc serves size bytes on stream.
//
//  1. Round the request up to Align.
//  2. Best fit among the free extents the stream may use (ready memory and
//     its own pending frees): the smallest that holds the request, lowest
//     address among equals, carved from its low end.
//  3. Otherwise grow: map pages at the lowest address where the request
//     fits in usable free memory and unmapped address space together.
//  4. If the device lacks the pages (or no such place exists), trim every
//     whole free page of ready memory, count a retry, and try 2–3 again.
//  5. Still nothing: an *alloc.OOMError.
func (a *refPool) Alloc(size int64, streamID int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: %d", alloc.ErrInvalidSize, size)
	}
	rounded := mem.RoundUpSat(size, Align)
	st := a.streamFor(streamID)
	addr, ok := a.tryAlloc(st, rounded)
	if !ok {
		a.retries++
		a.trimTo(0)
		addr, ok = a.tryAlloc(st, rounded)
	}
	if !ok {
		a.ooms++
		a.check()
		return alloc.Block{}, &alloc.OOMError{
			Requested: size, AllocSize: rounded,
			Capacity: a.dev.Capacity(), DeviceFree: a.dev.Free(),
			Allocated: a.allocated, Reserved: a.mapped,
		}
	}
	h := a.live.Put(block{addr: addr, size: rounded, requested: size, stream: streamID})
	a.allocated += rounded
	a.requested += size
	a.peakAlloc = max(a.peakAlloc, a.allocated)
	a.allocs++
	a.check()
	return alloc.Block{Handle: h, Addr: addr, Size: rounded}, nil
}

// tryAlloc is steps 2 and 3 of Alloc. It changes nothing when it fails.
func (a *refPool) tryAlloc(st *refStream, size int64) (uint64, bool) {
	if addr, ok := st.usable.TakeBestFit(size); ok {
		a.carve(st, addr, size)
		return addr, true
	}
	x, ok := a.placement(&st.usable, size)
	if !ok || a.pagesToMap(x, size)*mem.PageSize > a.dev.Free() {
		return 0, false
	}
	a.mapRange(x, size)
	if !st.usable.Take(x, size) {
		panic(fmt.Sprintf("async: grown range of %d bytes at %s is not free for stream %d", size, mem.FormatAddr(x), st.id))
	}
	a.carve(st, x, size)
	return x, true
}

// carve takes [addr, addr+size), just taken from st.usable, out of the sets
// it came from, piece by piece: out of st.pending, or out of ready (and so
// out of every other stream's usable set).
func (a *refPool) carve(st *refStream, addr uint64, size int64) {
	for at, end := addr, addr+uint64(size); at < end; {
		if e, ok := st.pending.Find(at); ok {
			n := int64(min(e.End(), end) - at)
			st.pending.Take(at, n)
			at += uint64(n)
			continue
		}
		e, ok := a.ready.Find(at)
		if !ok {
			panic(fmt.Sprintf("async: byte %s of stream %d's free memory is neither ready nor pending", mem.FormatAddr(at), st.id))
		}
		n := int64(min(e.End(), end) - at)
		a.ready.Take(at, n)
		for _, o := range a.streams {
			if o != st {
				o.usable.Take(at, n)
			}
		}
		at += uint64(n)
	}
}

// Free returns a live block to its stream's pending set: reusable by that
// stream at once, by the others after the next Sync.
func (a *refPool) Free(h alloc.Handle) error {
	b := a.live.Get(h)
	if b == nil {
		return alloc.ErrInvalidHandle
	}
	st := a.streamFor(b.stream)
	st.pending.Insert(b.addr, b.size)
	st.usable.Insert(b.addr, b.size)
	a.allocated -= b.size
	a.requested -= b.requested
	a.frees++
	a.live.Delete(h)
	a.check()
	return nil
}

// Sync is a device-wide synchronisation: every pending free has completed,
// so its memory becomes usable by every stream; then, if the unused mapped
// bytes exceed the release threshold, whole free pages are unmapped, highest
// addresses first, until they no longer do (cudaMemPoolAttrReleaseThreshold).
func (a *refPool) Sync() {
	for _, st := range a.streams {
		if st.pending.Len() == 0 {
			continue
		}
		a.scratch = slices.AppendSeq(a.scratch[:0], st.pending.All())
		st.pending.Clear()
		for _, e := range a.scratch {
			a.ready.Insert(e.Addr, e.Size)
			for _, o := range a.streams {
				if o != st {
					o.usable.Insert(e.Addr, e.Size)
				}
			}
		}
	}
	a.trimTo(a.cfg.ReleaseThreshold)
	a.check()
}

// EmptyCache is cudaMemPoolTrimTo(pool, 0): it unmaps every whole free page
// of ready memory. Frees still pending on a stream are not released: CUDA
// counts frees whose completion the host has not observed as outstanding.
func (a *refPool) EmptyCache() {
	a.trimTo(0)
	a.check()
}

// trimTo unmaps whole pages of ready memory, highest addresses first, while
// the unused mapped bytes (mapped - allocated) exceed keep.
func (a *refPool) trimTo(keep int64) {
	cursor := a.base + uint64(a.vaSize)
	for a.mapped-a.allocated > keep {
		e, ok := a.ready.Prev(cursor)
		if !ok {
			return
		}
		cursor = e.Addr
		lo := mem.RoundUp(int64(e.Addr-a.base), mem.PageSize)
		hi := int64(e.End()-a.base) / mem.PageSize * mem.PageSize
		if hi <= lo {
			continue // no whole page in this extent
		}
		excess := a.mapped - a.allocated - keep
		n := min(hi-lo, mem.RoundUp(excess, mem.PageSize))
		a.unmap(a.base+uint64(hi-n), n)
	}
}

// unmap releases the pages of [addr, addr+size), which lie in ready memory.
func (a *refPool) unmap(addr uint64, size int64) {
	if !a.ready.Take(addr, size) {
		panic(fmt.Sprintf("async: unmap of %d bytes at %s that are not ready", size, mem.FormatAddr(addr)))
	}
	for _, st := range a.streams {
		st.usable.Take(addr, size)
	}
	a.unmapped.Insert(addr, size)
	for range size / mem.PageSize {
		a.dev.Release(mem.PageSize)
	}
	a.mapped -= size
	a.pagesUnmapped += size / mem.PageSize
}

func (a *refPool) check() {}

// A run is a maximal range of addresses that are either free and usable by
// the requesting stream or unmapped: a request placed anywhere inside one
// needs only the unmapped pages it covers mapped. Runs are what growth
// chooses between. Only runs with some unmapped space matter, because a run
// of usable memory alone is one usable extent, and best fit has already
// found that none of those holds the request.

// runAround returns the run that contains the unmapped extent u.
func (a *refPool) runAround(usable *extent.Set, u extent.Extent) (start, end uint64) {
	start = u.Addr
	if u.Addr > a.base {
		if f, ok := usable.Find(u.Addr - 1); ok {
			start = f.Addr // a usable extent ending where u starts
		}
	}
	end = u.End()
	for {
		// The byte at end is mapped (u is coalesced): extend through a
		// usable extent starting there, then through the unmapped extent
		// after it, and so on.
		g, ok := usable.Find(end)
		if !ok {
			return start, end
		}
		end = g.End()
		v, ok := a.unmapped.Find(end)
		if !ok {
			return start, end
		}
		end = v.End()
	}
}

// runs calls f on every run in address order until f returns false.
func (a *refPool) runs(usable *extent.Set, f func(start, end uint64) bool) {
	for at := a.base; ; {
		u, ok := a.unmapped.Next(at)
		if !ok {
			return
		}
		start, end := a.runAround(usable, u)
		if !f(start, end) {
			return
		}
		at = end
	}
}

// placement returns where growth puts a request of size bytes: the start of
// the lowest run that holds it.
func (a *refPool) placement(usable *extent.Set, size int64) (addr uint64, ok bool) {
	a.runs(usable, func(start, end uint64) bool {
		if int64(end-start) >= size {
			addr, ok = start, true
			return false
		}
		return true
	})
	return addr, ok
}

// pagesToMap counts the unmapped pages that [addr, addr+size) touches, where
// addr is the start of a run (so no unmapped extent begins before addr and
// reaches into the range).
func (a *refPool) pagesToMap(addr uint64, size int64) int64 {
	var pages int64
	for at, end := addr, addr+uint64(size); at < end; {
		v, ok := a.unmapped.Next(at)
		if !ok || v.Addr >= end {
			break
		}
		pages += mem.RoundUp(int64(min(v.End(), end)-v.Addr), mem.PageSize) / mem.PageSize
		at = v.End()
	}
	return pages
}

// mapRange maps the unmapped pages that [addr, addr+size) touches (see
// pagesToMap; the device must have them). A mapped page is new memory that
// no stream has used, so all of it, including any part past the request,
// becomes ready.
func (a *refPool) mapRange(addr uint64, size int64) {
	for at, end := addr, addr+uint64(size); at < end; {
		v, ok := a.unmapped.Next(at)
		if !ok || v.Addr >= end {
			return
		}
		n := mem.RoundUp(int64(min(v.End(), end)-v.Addr), mem.PageSize)
		a.unmapped.Take(v.Addr, n)
		for range n / mem.PageSize {
			if !a.dev.Reserve(mem.PageSize) {
				panic(fmt.Sprintf("async: mapping %s at %s without the device pages pagesToMap counted", mem.FormatBytes(n), mem.FormatAddr(v.Addr)))
			}
		}
		a.ready.Insert(v.Addr, n)
		for _, st := range a.streams {
			st.usable.Insert(v.Addr, n)
		}
		a.mapped += n
		a.peakMapped = max(a.peakMapped, a.mapped)
		a.pagesMapped += n / mem.PageSize
		at = v.Addr + uint64(n)
	}
}

// MaxAllocatable is the largest request on stream 0 that Alloc would serve
// now. Alloc's first attempt serves r when r fits a usable extent, or when
// the lowest run of at least r bytes needs at most the device's free pages
// for its first r bytes; the answer is the largest such r. If the first
// attempt fails, Alloc trims every whole ready page and tries again, so the
// largest r the trimmed pool would serve counts too: it is computed on a
// trimmed clone, and only when there is a page to trim.
func (a *refPool) MaxAllocatable() int64 {
	m := a.maxFirstAttempt()
	if a.hasWholeReadyPage() {
		c := a.clone()
		c.trimTo(0)
		m = max(m, c.maxFirstAttempt())
	}
	return m
}

func (a *refPool) hasWholeReadyPage() bool {
	for e := range a.ready.All() {
		lo := mem.RoundUp(int64(e.Addr-a.base), mem.PageSize)
		if lo+mem.PageSize <= int64(e.End()-a.base) {
			return true
		}
	}
	return false
}

// maxFirstAttempt is the largest request stream 0 gets from best fit or one
// growth (tryAlloc), without the trim.
func (a *refPool) maxFirstAttempt() int64 {
	usable := a.usableFor(0)
	var best int64
	if e, ok := usable.Largest(); ok {
		best = e.Size
	}
	budget := a.dev.Free() / mem.PageSize
	// A request r > best grows into the lowest run of at least r bytes. So
	// run i serves the requests in (largest earlier run, its size] whose
	// first r bytes need at most budget pages; the page count only grows
	// with r, so the largest of them is its reach, if that clears the
	// earlier runs.
	var earlier int64
	a.runs(usable, func(start, end uint64) bool {
		size := int64(end - start)
		if r := min(size, a.reach(usable, start, end, budget)); r > earlier && r > best {
			best = r
		}
		earlier = max(earlier, size)
		return true
	})
	return best &^ (Align - 1)
}

// reach is the longest prefix of the run [start, end) that needs at most
// budget pages mapped.
func (a *refPool) reach(usable *extent.Set, start, end uint64, budget int64) int64 {
	for at := start; at < end; {
		if v, ok := a.unmapped.Find(at); ok {
			pages := int64(v.End()-at) / mem.PageSize // unmapped extents are whole pages
			if pages > budget {
				return int64(at-start) + budget*mem.PageSize
			}
			budget -= pages
			at = v.End()
			continue
		}
		g, ok := usable.Find(at)
		if !ok {
			panic(fmt.Sprintf("async: byte %s of a run is neither usable nor unmapped", mem.FormatAddr(at)))
		}
		at = g.End()
	}
	return int64(end - start)
}

// segments counts the maximal mapped runs: the gaps between unmapped
// extents, plus one before the first and one after the last when mapped
// memory reaches the ends of the virtual range.
func (a *refPool) segments() int {
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
func (a *refPool) Stats() alloc.Stats {
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
func (a *refPool) pieces() []mem.Block {
	var free []extent.Extent
	free = slices.AppendSeq(free, a.ready.All())
	for _, st := range a.streams {
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
func (a *refPool) Layout() mem.Layout {
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
func (a *refPool) clone() *refPool {
	c := *a
	c.dev = a.dev.Clone()
	c.unmapped = a.unmapped.Clone()
	c.ready = a.ready.Clone()
	c.streams = make([]*refStream, len(a.streams))
	for i, st := range a.streams {
		c.streams[i] = &refStream{id: st.id, pending: st.pending.Clone(), usable: st.usable.Clone()}
	}
	c.live = a.live.Clone()
	c.scratch = nil
	return &c
}
