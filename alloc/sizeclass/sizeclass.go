// Size-class allocator: the allocation and free paths.
// See package alloc for the overview.

package sizeclass

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// slotRef names one slot: a slab and the slot's index in it.
type slotRef struct {
	slab int32 // index into Allocator.slabs
	idx  int32 // slot index within the slab, in address order
}

// slab is one raw device allocation cut into slots of one class.
type slab struct {
	addr     uint64 // start of its virtual range; set by newSlab
	class    int32  // index into Allocator.classes; fixed for the index's life
	live     int32  // slots holding live blocks; +take, -put
	base     int32  // index of its first slot in Allocator.slotPos; fixed for the index's life
	released bool   // released to the device; the index waits in its class's freeIDs
}

// class is one size class: its geometry, its free slots and the indexes of
// its released slabs.
type class struct {
	size      int64     // slot size; fixed
	name      string    // pool name, formatExact(size); fixed
	perSlab   int32     // slots per slab; fixed (slabGeometry)
	slabBytes int64     // page-rounded bytes per slab; fixed (slabGeometry)
	free      []slotRef // free slots of live slabs, LIFO: the last is handed out next
	freeIDs   []int32   // released slab indexes of this class, reused LIFO
}

// entry is one live allocation in the handle table.
type entry struct {
	addr      uint64  // start of the block; changes only by Relocate
	size      int64   // the class size, or the page-rounded size of a direct block
	requested int64   // bytes the caller asked for; fixed
	ref       slotRef // the slot holding the block (class blocks only)
	class     int32   // index into Allocator.classes, or -1 for a direct block
	stream    int     // stream of the request (shown on direct segments only)
}

// Allocator is the size-class allocator. It is not safe for concurrent use.
type Allocator struct {
	cfg     Config
	dev     *mem.Device // owned: dev.Used() == st.Reserved at all times
	classes []class     // one per Config.Classes entry, in increasing size; never reallocated
	// slabs holds every slab ever made. An index is reused only by a new slab
	// of the same class, so its slot range in slotPos stays valid; slabs and
	// slotPos only grow.
	slabs []slab
	// slotPos is the state of every slot, slab by slab (slab.base onwards):
	// its position in its class's free list while free, -1 while live. One
	// flat array keeps the hot path to a few cache lines. Indexes are int32:
	// 2^31 slots is 1 TiB of 512 B slots, more than any GPU holds.
	slotPos []int32
	order   []int32 // live slab indexes in address order; +newSlab, -releaseFree
	// wholeFree is Σ slabBytes over live slabs with no live slot: what the
	// out-of-memory path and EmptyCache would return to the device.
	wholeFree int64
	live      slot.Table[entry] // live allocations; Put by Alloc, Delete by Free
	st        alloc.Stats       // kept incrementally; CheckInvariants recounts it
}

var (
	_ alloc.Allocator = (*Allocator)(nil)
	_ alloc.Relocator = (*Allocator)(nil)
)

// slabGeometry returns the slots per slab of a class, max(1, SlabTarget /
// size), and the slab's size, those slots rounded up to whole driver pages.
func slabGeometry(size int64) (slots, bytes int64) {
	slots = max(1, SlabTarget/size)
	return slots, mem.PageRound(slots * size)
}

// New returns a size-class allocator that owns dev, which must have no
// memory in use yet. Empty cfg.Classes means DefaultClasses.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	cfg.Classes = append([]int64(nil), cfg.Classes...)
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := dev.CheckUnused("sizeclass"); err != nil {
		return nil, err
	}
	a := &Allocator{
		cfg: cfg,
		dev: dev,
		st:  alloc.Stats{Capacity: dev.Capacity(), OtherUse: dev.OtherUse()},
	}
	for _, s := range cfg.Classes {
		n, b := slabGeometry(s)
		a.classes = append(a.classes, class{size: s, name: formatExact(s), perSlab: int32(n), slabBytes: b})
	}
	return a, nil
}

// FromSpec builds a size-class allocator from the spec arguments after
// "sizeclass:".
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Config returns a copy of the allocator's configuration.
func (a *Allocator) Config() Config {
	return Config{Classes: append([]int64(nil), a.cfg.Classes...)}
}

// Spec returns "sizeclass:" and the canonical class list.
func (a *Allocator) Spec() string { return Name + ":" + a.cfg.String() }

// classFor returns the index of the smallest class that holds size, or -1
// when size is larger than every class. Linear: with a handful of classes a
// scan is as fast as a binary search, and simpler.
func (a *Allocator) classFor(size int64) int {
	for i := range a.classes {
		if size <= a.classes[i].size {
			return i
		}
	}
	return -1
}

// Alloc serves size from the smallest class that holds it (a free slot, or a
// new slab), or directly from the device when size is larger than every
// class. See the package doc for the numbered path.
func (a *Allocator) Alloc(size int64, stream int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: sizeclass: got %d bytes", alloc.ErrInvalidSize, size)
	}
	ci := a.classFor(size)
	if ci < 0 {
		return a.allocDirect(size, stream)
	}
	c := &a.classes[ci]
	if len(c.free) == 0 && !a.newSlab(ci) {
		return alloc.Block{}, a.oom(size, c.slabBytes)
	}
	ref := c.free[len(c.free)-1]
	a.take(ci, ref)
	addr := a.slabs[ref.slab].addr + uint64(ref.idx)*uint64(c.size)
	h := a.live.Put(entry{addr: addr, size: c.size, requested: size, ref: ref, class: int32(ci), stream: stream})
	a.allocated(c.size, size)
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: addr, Size: c.size}, nil
}

// allocDirect serves a request larger than every class with its own
// page-rounded raw allocation, as package direct does.
func (a *Allocator) allocDirect(size int64, stream int) (alloc.Block, error) {
	n := size // only for a size whose rounding overflows, which no device holds
	if size <= math.MaxInt64-mem.PageSize {
		n = mem.PageRound(size)
	}
	if !a.reserve(n) {
		return alloc.Block{}, a.oom(size, n)
	}
	addr, ok := a.dev.TryReserveVA(n)
	if !ok {
		a.dev.Unreserve(n) // no address range left for it: out of memory all the same
		return alloc.Block{}, a.oom(size, n)
	}
	h := a.live.Put(entry{addr: addr, size: n, requested: size, class: -1, stream: stream})
	a.reserved(n)
	a.allocated(n, size)
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: addr, Size: n}, nil
}

// reserve takes n bytes from the device; when the device lacks them it
// releases every wholly free slab and tries once more, counting a retry
// (PyTorch counts num_alloc_retries the same way: whenever the retry runs).
func (a *Allocator) reserve(n int64) bool {
	if a.dev.Reserve(n) {
		return true
	}
	a.st.Retries++
	a.releaseFree()
	return a.dev.Reserve(n)
}

// reserved accounts a new segment of n bytes.
func (a *Allocator) reserved(n int64) {
	st := &a.st
	st.Reserved += n
	st.PeakReserved = max(st.PeakReserved, st.Reserved)
	st.Segments++
	st.DeviceAllocs++
}

// allocated accounts a new live block of n bytes for req requested.
func (a *Allocator) allocated(n, req int64) {
	st := &a.st
	st.Allocated += n
	st.Requested += req
	st.PeakAllocated = max(st.PeakAllocated, st.Allocated)
	st.LiveBlocks++
	st.Allocs++
}

// oom counts and returns an out-of-memory error for a request of size bytes
// that needed n bytes from the device (a slab, or the page-rounded request).
func (a *Allocator) oom(size, n int64) error {
	a.st.OOMs++
	if invariants.Enabled {
		a.mustCheck()
	}
	return &alloc.OOMError{
		Requested: size, AllocSize: n,
		Capacity: a.st.Capacity, DeviceFree: a.dev.Free(),
		Allocated: a.st.Allocated, Reserved: a.st.Reserved,
	}
}

// newSlab obtains a slab for class ci from the device and puts its slots on
// the class's free list, highest address first, so the lowest is handed out
// first. It reports false when the device cannot supply the slab even after
// releasing wholly free slabs.
func (a *Allocator) newSlab(ci int) bool {
	c := &a.classes[ci]
	if !a.reserve(c.slabBytes) {
		return false
	}
	addr, ok := a.dev.TryReserveVA(c.slabBytes)
	if !ok {
		a.dev.Unreserve(c.slabBytes) // no address range left for it: out of memory all the same
		return false
	}
	var id int32
	if n := len(c.freeIDs); n > 0 { // reuse a released slab of this class, and its slots
		id = c.freeIDs[n-1]
		c.freeIDs = c.freeIDs[:n-1]
	} else {
		id = int32(len(a.slabs))
		a.slabs = append(a.slabs, slab{class: int32(ci), base: int32(len(a.slotPos))})
		a.slotPos = append(a.slotPos, make([]int32, c.perSlab)...)
	}
	s := &a.slabs[id]
	s.addr = addr
	s.live = 0
	s.released = false
	for i := c.perSlab - 1; i >= 0; i-- {
		a.slotPos[s.base+i] = int32(len(c.free))
		c.free = append(c.free, slotRef{slab: id, idx: i})
	}
	a.wholeFree += c.slabBytes
	a.insertOrder(id)
	a.reserved(c.slabBytes)
	return true
}

// insertOrder adds slab id to the address-ordered list. Fresh virtual ranges
// come last (the device's address space only grows), so this is an append
// unless a VA hook hands out lower addresses.
func (a *Allocator) insertOrder(id int32) {
	addr := a.slabs[id].addr
	n := len(a.order)
	if n == 0 || a.slabs[a.order[n-1]].addr < addr {
		a.order = append(a.order, id)
		return
	}
	i := sort.Search(n, func(i int) bool { return a.slabs[a.order[i]].addr > addr })
	a.order = append(a.order, 0)
	copy(a.order[i+1:], a.order[i:])
	a.order[i] = id
}

// take marks the free slot ref of class ci live, taking it off the free
// list (the last entry moves into its place).
func (a *Allocator) take(ci int, ref slotRef) {
	c := &a.classes[ci]
	s := &a.slabs[ref.slab]
	at := s.base + ref.idx
	last := int32(len(c.free) - 1)
	if pos := a.slotPos[at]; pos != last {
		moved := c.free[last]
		c.free[pos] = moved
		a.slotPos[a.slabs[moved.slab].base+moved.idx] = pos
	}
	c.free = c.free[:last]
	a.slotPos[at] = -1
	if s.live == 0 {
		a.wholeFree -= c.slabBytes
	}
	s.live++
}

// put returns the live slot ref of class ci to the top of the free list.
func (a *Allocator) put(ci int, ref slotRef) {
	c := &a.classes[ci]
	s := &a.slabs[ref.slab]
	a.slotPos[s.base+ref.idx] = int32(len(c.free))
	c.free = append(c.free, ref)
	s.live--
	if s.live == 0 {
		a.wholeFree += c.slabBytes
	}
}

// Free returns a class block's slot to its class (the slab stays) or
// releases a direct block to the device.
func (a *Allocator) Free(h alloc.Handle) error {
	p := a.live.Get(h)
	if p == nil {
		return alloc.ErrInvalidHandle
	}
	e := *p
	a.live.Delete(h)
	st := &a.st
	if e.class < 0 {
		a.dev.Release(e.size)
		st.Reserved -= e.size
		st.Segments--
		st.DeviceFrees++
	} else {
		a.put(int(e.class), e.ref)
	}
	st.Allocated -= e.size
	st.Requested -= e.requested
	st.LiveBlocks--
	st.Frees++
	if invariants.Enabled {
		a.mustCheck()
	}
	return nil
}

// EmptyCache releases every wholly free slab to the device, as
// torch.cuda.empty_cache() does; slabs with a live slot stay.
func (a *Allocator) EmptyCache() {
	a.releaseFree()
	if invariants.Enabled {
		a.mustCheck()
	}
}

// releaseFree releases every slab with no live slot and drops its slots from
// the free lists (keeping their order). O(slabs + free slots).
func (a *Allocator) releaseFree() {
	if a.wholeFree == 0 {
		return
	}
	st := &a.st
	kept := a.order[:0]
	for _, id := range a.order {
		s := &a.slabs[id]
		if s.live > 0 {
			kept = append(kept, id)
			continue
		}
		c := &a.classes[s.class]
		a.dev.Release(c.slabBytes)
		st.Reserved -= c.slabBytes
		st.Segments--
		st.DeviceFrees++
		s.released = true
		c.freeIDs = append(c.freeIDs, id)
	}
	a.order = kept
	for ci := range a.classes {
		c := &a.classes[ci]
		k := c.free[:0]
		for _, r := range c.free {
			if s := &a.slabs[r.slab]; !s.released {
				a.slotPos[s.base+r.idx] = int32(len(k))
				k = append(k, r)
			}
		}
		c.free = k
	}
	a.wholeFree = 0
}

// Clone returns an independent deep copy on a copy of the device.
func (a *Allocator) Clone() alloc.Allocator {
	c := *a
	c.dev = a.dev.Clone()
	c.cfg = a.Config()
	c.classes = append([]class(nil), a.classes...)
	for i := range c.classes {
		c.classes[i].free = append([]slotRef(nil), a.classes[i].free...)
		c.classes[i].freeIDs = append([]int32(nil), a.classes[i].freeIDs...)
	}
	c.slabs = append([]slab(nil), a.slabs...)
	c.slotPos = append([]int32(nil), a.slotPos...)
	c.order = append([]int32(nil), a.order...)
	c.live = a.live.Clone()
	return &c
}
