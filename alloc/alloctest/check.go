package alloctest

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// InvariantChecker is implemented by allocators with internal self-checks
// (their checkInvariants under the invariants build tag); the kit calls it
// after every operation in tests.
type InvariantChecker interface {
	CheckInvariants() error
}

// Live is the reference model's record of one live allocation.
type Live struct {
	Addr      uint64
	Size      int64
	Requested int64
}

// Check verifies an allocator against the reference model live (handle →
// block) and returns the first discrepancy.
func Check(a alloc.Allocator, live map[alloc.Handle]Live) error {
	l := a.Layout()
	if err := l.Check(); err != nil {
		return fmt.Errorf("layout: %w\n%s", err, l.String())
	}
	if c, ok := a.(InvariantChecker); ok {
		if err := c.CheckInvariants(); err != nil {
			return fmt.Errorf("self-check: %w", err)
		}
	}
	st := a.Stats()
	c := l.Classes()
	active := 0
	type span struct{ addr, end uint64 }
	var actives []span
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.State != mem.Free {
				active++
				actives = append(actives, span{b.Addr, b.End()})
			}
		}
	}
	switch {
	case st.Capacity != l.Capacity || st.OtherUse != l.OtherUse:
		return fmt.Errorf("stats capacity/other %d/%d, layout %d/%d", st.Capacity, st.OtherUse, l.Capacity, l.OtherUse)
	case st.Reserved != c.Reserved():
		return fmt.Errorf("stats reserved %d, layout recount %d", st.Reserved, c.Reserved())
	case st.Allocated != c.Allocated():
		return fmt.Errorf("stats allocated %d, layout recount %d", st.Allocated, c.Allocated())
	case st.Requested != c.Live:
		return fmt.Errorf("stats requested %d, layout recount %d", st.Requested, c.Live)
	case st.Segments != len(l.Segments):
		return fmt.Errorf("stats segments %d, layout has %d", st.Segments, len(l.Segments))
	case st.LiveBlocks != active || active != len(live):
		return fmt.Errorf("live blocks: stats %d, layout %d, reference %d", st.LiveBlocks, active, len(live))
	case st.PeakReserved < st.Reserved || st.PeakAllocated < st.Allocated:
		return fmt.Errorf("peaks below current: %+v", st)
	case l.DeviceFree != l.Capacity-l.OtherUse-st.Reserved:
		return fmt.Errorf("device free %d, want capacity-other-reserved = %d", l.DeviceFree, l.Capacity-l.OtherUse-st.Reserved)
	}
	// Every reference block must be a live block of the layout.
	byAddr := make(map[uint64]mem.Block, active)
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.State != mem.Free {
				byAddr[b.Addr] = b
			}
		}
	}
	for h, r := range live {
		b, ok := byAddr[r.Addr]
		if !ok || b.Size != r.Size || b.Requested != r.Requested {
			return fmt.Errorf("handle %x: reference %+v, layout has %+v (found=%v)", h, r, b, ok)
		}
	}
	sort.Slice(actives, func(i, j int) bool { return actives[i].addr < actives[j].addr })
	for i := 1; i < len(actives); i++ {
		if actives[i].addr < actives[i-1].end {
			return fmt.Errorf("live blocks overlap at %#x", actives[i].addr)
		}
	}
	return nil
}

// CheckMaxAllocatable verifies on a clone that a request of exactly
// MaxAllocatable() bytes on stream 0 succeeds.
func CheckMaxAllocatable(a alloc.Allocator) error {
	m := a.MaxAllocatable()
	if m < 0 || m > a.Stats().Capacity-a.Stats().OtherUse {
		return fmt.Errorf("MaxAllocatable %d outside [0, capacity-other]", m)
	}
	if m == 0 {
		return nil
	}
	c := a.Clone()
	b, err := c.Alloc(m, 0)
	if err != nil {
		return fmt.Errorf("MaxAllocatable says %d (%s) but a clone fails it: %w\n%s", m, mem.FormatBytes(m), err, a.Layout().String())
	}
	if b.Size < m {
		return fmt.Errorf("alloc of %d returned a %d-byte block", m, b.Size)
	}
	return nil
}

// CheckOOM verifies that err, returned by Alloc(size), is a proper OOM error.
func CheckOOM(err error, size int64) error {
	var oe *alloc.OOMError
	if !errors.As(err, &oe) || !errors.Is(err, alloc.ErrOutOfMemory) {
		return fmt.Errorf("alloc failed with %w, want *alloc.OOMError", err)
	}
	if oe.Requested != size {
		return fmt.Errorf("OOMError.Requested = %d, want %d", oe.Requested, size)
	}
	return nil
}
