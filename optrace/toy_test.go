package optrace_test

import (
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// toy is a tiny allocator for testing Replay without depending on the real
// ones: every request gets its own page-rounded segment; a freed segment is
// cached and reused by a later request of exactly its size, and given back
// by EmptyCache, or by Sync when syncTrims is set. It is deterministic.
type toy struct {
	dev       *mem.Device
	next      alloc.Handle
	segs      map[alloc.Handle]*toySeg // live and cached segments by handle
	stats     alloc.Stats
	syncTrims bool
	syncs     int
}

type toySeg struct {
	addr      uint64
	size      int64
	requested int64 // 0 when cached (free)
}

var (
	_ alloc.Allocator = (*toy)(nil)
	_ alloc.Syncer    = (*toy)(nil)
)

func newToy(dev *mem.Device) *toy {
	return &toy{dev: dev, segs: map[alloc.Handle]*toySeg{},
		stats: alloc.Stats{Capacity: dev.Capacity(), OtherUse: dev.OtherUse()}}
}

func (t *toy) Spec() string { return "toy" }

func (t *toy) Alloc(size int64, stream int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, alloc.ErrInvalidSize
	}
	n := mem.PageRound(size)
	// Reuse a cached segment of exactly n bytes, lowest handle first.
	for _, h := range t.sortedHandles() {
		s := t.segs[h]
		if s.requested == 0 && s.size == n {
			s.requested = size
			t.stats.Allocated += n
			t.stats.Requested += size
			t.count()
			return alloc.Block{Handle: h, Addr: s.addr, Size: n}, nil
		}
	}
	if !t.dev.Reserve(n) {
		t.stats.OOMs++
		return alloc.Block{}, &alloc.OOMError{Requested: size, AllocSize: n, Capacity: t.dev.Capacity(),
			DeviceFree: t.dev.Free(), Allocated: t.stats.Allocated, Reserved: t.stats.Reserved}
	}
	t.next++
	s := &toySeg{addr: t.dev.ReserveVA(n), size: n, requested: size}
	t.segs[t.next] = s
	t.stats.Reserved += n
	t.stats.Allocated += n
	t.stats.Requested += size
	t.count()
	return alloc.Block{Handle: t.next, Addr: s.addr, Size: n}, nil
}

func (t *toy) count() {
	t.stats.Allocs++
	t.stats.LiveBlocks++
	t.stats.Segments = len(t.segs)
	t.stats.PeakReserved = max(t.stats.PeakReserved, t.stats.Reserved)
	t.stats.PeakAllocated = max(t.stats.PeakAllocated, t.stats.Allocated)
}

func (t *toy) Free(h alloc.Handle) error {
	s, ok := t.segs[h]
	if !ok || s.requested == 0 {
		return alloc.ErrInvalidHandle
	}
	t.stats.Allocated -= s.size
	t.stats.Requested -= s.requested
	t.stats.LiveBlocks--
	t.stats.Frees++
	s.requested = 0
	return nil
}

func (t *toy) EmptyCache() {
	for _, h := range t.sortedHandles() {
		if s := t.segs[h]; s.requested == 0 {
			t.dev.Release(s.size)
			t.stats.Reserved -= s.size
			delete(t.segs, h)
		}
	}
	t.stats.Segments = len(t.segs)
}

func (t *toy) Sync() {
	t.syncs++
	if t.syncTrims {
		t.EmptyCache()
	}
}

func (t *toy) Stats() alloc.Stats { return t.stats }

func (t *toy) Layout() mem.Layout {
	l := mem.Layout{Capacity: t.dev.Capacity(), OtherUse: t.dev.OtherUse(),
		DeviceFree: t.dev.Free(), MaxAllocatable: t.MaxAllocatable()}
	for _, h := range t.sortedHandles() {
		s := t.segs[h]
		b := mem.Block{Addr: s.addr, Size: s.size, Requested: s.requested, State: mem.Active}
		if s.requested == 0 {
			b.State = mem.Free
		}
		l.Segments = append(l.Segments, mem.Segment{Addr: s.addr, Size: s.size, Pool: "toy", Blocks: []mem.Block{b}})
	}
	l.Sort()
	return l
}

func (t *toy) MaxAllocatable() int64 {
	free := t.dev.Free()
	for _, s := range t.segs {
		if s.requested == 0 {
			free = max(free, s.size)
		}
	}
	return free - free%mem.PageSize
}

func (t *toy) Clone() alloc.Allocator {
	c := *t
	c.dev = t.dev.Clone()
	c.segs = make(map[alloc.Handle]*toySeg, len(t.segs))
	for h, s := range t.segs {
		cp := *s
		c.segs[h] = &cp
	}
	return &c
}

func (t *toy) sortedHandles() []alloc.Handle {
	hs := make([]alloc.Handle, 0, len(t.segs))
	for h := range t.segs {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	return hs
}

func (t *toy) String() string { return fmt.Sprintf("toy%+v", t.stats) }
