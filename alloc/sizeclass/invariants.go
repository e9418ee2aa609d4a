// Size-class allocator self-checks.
// See package alloc for the overview.

package sizeclass

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// CheckInvariants recounts slabs, free lists and live allocations and
// compares them with each other, with the incremental counters and with the
// device (see the package doc's Invariants). It returns the first violation.
// It is O(slots + live allocations) and allocates a bitmap of the slots.
func (a *Allocator) CheckInvariants() error {
	var reserved, allocated, requested, wholeFree int64
	liveSlots, freeSlots := 0, 0
	// Slab indexes and their slot ranges.
	slots, released := 0, 0
	for id := range a.slabs {
		s := &a.slabs[id]
		if s.class < 0 || int(s.class) >= len(a.classes) || int(s.base) != slots {
			return fmt.Errorf("sizeclass: slab %d has class %d and slots from %d, want from %d", id, s.class, s.base, slots)
		}
		slots += int(a.classes[s.class].perSlab)
		if s.released {
			released++
		}
	}
	if slots != len(a.slotPos) {
		return fmt.Errorf("sizeclass: slabs cover %d slots, slotPos has %d", slots, len(a.slotPos))
	}
	listedIDs := 0
	for ci, c := range a.classes {
		for _, id := range c.freeIDs {
			if s := &a.slabs[id]; !s.released || int(s.class) != ci {
				return fmt.Errorf("sizeclass: free slab index %d of class %s is live or of another class", id, c.name)
			}
		}
		listedIDs += len(c.freeIDs)
	}
	if released != listedIDs || len(a.order)+released != len(a.slabs) {
		return fmt.Errorf("sizeclass: %d slabs: %d live, %d released, %d indexes free", len(a.slabs), len(a.order), released, listedIDs)
	}
	// Live slabs, in address order.
	for i, id := range a.order {
		s := &a.slabs[id]
		if s.released {
			return fmt.Errorf("sizeclass: order[%d] = %d is a released slab", i, id)
		}
		c := &a.classes[s.class]
		if i > 0 {
			if p := &a.slabs[a.order[i-1]]; p.addr+uint64(a.classes[p.class].slabBytes) > s.addr {
				return fmt.Errorf("sizeclass: slab %d at %s overlaps or precedes the one before it", id, mem.FormatAddr(s.addr))
			}
		}
		n := 0
		for j := range c.perSlab {
			pos := a.slotPos[s.base+j]
			if pos < 0 {
				n++
				allocated += c.size
				continue
			}
			if int(pos) >= len(c.free) || c.free[pos] != (slotRef{id, j}) {
				return fmt.Errorf("sizeclass: free slot %d of slab %d (class %s) is not where its position %d says", j, id, c.name, pos)
			}
			freeSlots++
		}
		if int(s.live) != n {
			return fmt.Errorf("sizeclass: slab %d counts %d live slots, has %d", id, s.live, n)
		}
		if n == 0 {
			wholeFree += c.slabBytes
		}
		liveSlots += n
		reserved += c.slabBytes
	}
	// Every free-list entry was matched above by its slot's position, so
	// equal counts mean the lists hold exactly the free slots.
	listed := 0
	for _, c := range a.classes {
		listed += len(c.free)
	}
	if listed != freeSlots {
		return fmt.Errorf("sizeclass: free lists hold %d entries, slabs have %d free slots", listed, freeSlots)
	}
	if wholeFree != a.wholeFree {
		return fmt.Errorf("sizeclass: wholly free slabs hold %d bytes, counter says %d", wholeFree, a.wholeFree)
	}
	// Live allocations: each class block in its own live slot.
	var err error
	classBlocks, directs := 0, 0
	largest := a.classes[len(a.classes)-1].size
	held := make([]bool, len(a.slotPos))
	a.live.Each(func(h alloc.Handle, e *entry) {
		if err != nil {
			return
		}
		requested += e.requested
		if e.class < 0 {
			if e.requested <= largest || e.size != mem.PageRound(e.requested) {
				err = fmt.Errorf("sizeclass: direct handle %x: %d bytes for %d requested (largest class %d)", h, e.size, e.requested, largest)
			}
			directs++
			reserved += e.size
			allocated += e.size
			return
		}
		classBlocks++
		if int(e.class) >= len(a.classes) || int(e.ref.slab) >= len(a.slabs) {
			err = fmt.Errorf("sizeclass: handle %x names class %d, slab %d", h, e.class, e.ref.slab)
			return
		}
		c := &a.classes[e.class]
		s := &a.slabs[e.ref.slab]
		at := s.base + e.ref.idx
		switch {
		case s.released || s.class != e.class || e.ref.idx < 0 || e.ref.idx >= c.perSlab:
			err = fmt.Errorf("sizeclass: handle %x of class %s names slot %d of slab %d (class %d, released %v)", h, c.name, e.ref.idx, e.ref.slab, s.class, s.released)
		case a.slotPos[at] >= 0 || held[at]:
			err = fmt.Errorf("sizeclass: handle %x: its slot %d of slab %d is free or held twice", h, e.ref.idx, e.ref.slab)
		case e.addr != s.addr+uint64(e.ref.idx)*uint64(c.size) || e.size != c.size:
			err = fmt.Errorf("sizeclass: handle %x at %s size %d, its slot is at %s size %d", h, mem.FormatAddr(e.addr), e.size,
				mem.FormatAddr(s.addr+uint64(e.ref.idx)*uint64(c.size)), c.size)
		case e.requested <= 0 || e.requested > c.size || (e.class > 0 && e.requested <= a.classes[e.class-1].size):
			err = fmt.Errorf("sizeclass: handle %x: %d requested bytes do not belong in class %s", h, e.requested, c.name)
		}
		if err == nil {
			held[at] = true
		}
	})
	if err != nil {
		return err
	}
	if classBlocks != liveSlots {
		return fmt.Errorf("sizeclass: %d live class handles, %d live slots", classBlocks, liveSlots)
	}
	st := a.st
	switch {
	case st.Reserved != reserved || a.dev.Used() != reserved:
		return fmt.Errorf("sizeclass: stats reserved %d, device holds %d, recount %d", st.Reserved, a.dev.Used(), reserved)
	case st.Allocated != allocated || st.Requested != requested:
		return fmt.Errorf("sizeclass: stats allocated/requested %d/%d, recount %d/%d", st.Allocated, st.Requested, allocated, requested)
	case st.Segments != len(a.order)+directs:
		return fmt.Errorf("sizeclass: stats segments %d, recount %d slabs + %d direct", st.Segments, len(a.order), directs)
	case st.LiveBlocks != classBlocks+directs || a.live.Len() != st.LiveBlocks || st.Allocs-st.Frees != int64(st.LiveBlocks):
		return fmt.Errorf("sizeclass: stats live %d (allocs-frees %d), recount %d", st.LiveBlocks, st.Allocs-st.Frees, classBlocks+directs)
	case st.DeviceAllocs-st.DeviceFrees != int64(st.Segments):
		return fmt.Errorf("sizeclass: %d device allocations and %d frees, %d segments", st.DeviceAllocs, st.DeviceFrees, st.Segments)
	case st.PeakReserved < st.Reserved || st.PeakAllocated < st.Allocated:
		return fmt.Errorf("sizeclass: peaks %d/%d below current %d/%d", st.PeakReserved, st.PeakAllocated, st.Reserved, st.Allocated)
	case st.Capacity != a.dev.Capacity() || st.OtherUse != a.dev.OtherUse():
		return fmt.Errorf("sizeclass: stats capacity/other %d/%d, device %d/%d", st.Capacity, st.OtherUse, a.dev.Capacity(), a.dev.OtherUse())
	}
	return nil
}

// mustCheck panics on a broken invariant; callers guard it with
// invariants.Enabled.
func (a *Allocator) mustCheck() {
	if err := a.CheckInvariants(); err != nil {
		panic(err)
	}
}
