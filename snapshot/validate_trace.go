package snapshot

import (
	"sort"

	"github.com/gpufrag/gpufrag/mem"
)

// maxClockSteps (16) is how often the time_us of one device's trace may
// step back. PyTorch records the entries in order, under the allocator's
// lock, from a TSC-based clock on x86 that does not step back; elsewhere
// (ARM hosts such as GH200) from the system's real-time clock, which steps
// back when NTP sets it, a few times in a long run at most. The shared
// trace never steps back (4,657 entries, 1,220 ties). A trace that steps
// back more often is out of order or its times are corrupt.
const maxClockSteps = 16

// Trace actions by what their addr and size describe.
const (
	kindOther   = iota
	kindBlock   // alloc, free_requested, free_completed: a block's request
	kindSegment // segment_alloc, segment_free, segment_map, segment_unmap
)

func actionKind(action string) int {
	switch action {
	case "alloc", "free_requested", "free_completed":
		return kindBlock
	case "segment_alloc", "segment_free", "segment_map", "segment_unmap":
		return kindSegment
	}
	return kindOther
}

// addrRange is [lo, hi); hi does not wrap (Validate checked).
type addrRange struct{ lo, hi uint64 }

// validateTrace checks what the entries of device d's trace say together
// with the segments of that device (segs, indexes into s.Segments), what
// no recorded trace can break, ring buffer or not:
//
//   - the memory of an alloc, free or segment event is at most
//     mem.MaxRequest (4 PiB: more than four devices of the largest kind
//     the model takes). An oom entry's size is a request, which may be
//     anything a caller asked for, and is not limited;
//   - time_us steps back at most maxClockSteps times (entries without a
//     time, 0, are skipped);
//   - a block event (alloc, free_requested, free_completed; size > 0)
//     lies inside a segment that existed while the trace ran: one of the
//     final segments, or one the trace allocates, frees, maps or unmaps.
//     A block always lies inside its segment, and a segment that existed
//     during the trace is either still there at the end or was freed in
//     the trace, so this holds for a trace that begins after its oldest
//     entries were dropped (the ring buffer, max_entries) as well. A free
//     of a block allocated before the trace began passes; whether the
//     replay knew that block is the replay's business (Fidelity).
func (s *Snapshot) validateTrace(d int, tr *Trace, segs []int, bad func(field, format string, args ...any) error) error {
	c := traceCheck{d: d}
	for i, e := range tr.All() {
		if err := c.entry(i, -1, &e, bad); err != nil {
			return err
		}
	}
	if err := c.clock(bad); err != nil {
		return err
	}
	merged := mergeRanges(append(s.segmentRanges(segs), c.segs...))
	for i, e := range tr.All() {
		if e.Size == 0 || actionKind(e.Action) != kindBlock {
			continue
		}
		if !inside(merged, e.Addr, e.Size) {
			return outside(d, i, e.Action, e.Addr, e.Size, bad)
		}
	}
	return nil
}

// segmentRanges are the address ranges of the segments segs (indexes into
// s.Segments).
func (s *Snapshot) segmentRanges(segs []int) []addrRange {
	ranges := make([]addrRange, 0, len(segs))
	for _, i := range segs {
		ranges = append(ranges, addrRange{s.Segments[i].Address, s.Segments[i].End()})
	}
	return ranges
}

func outside(d, i int, action string, addr uint64, size int64, bad func(field, format string, args ...any) error) error {
	return bad(index(index("device_traces", d), i)+".addr", "%s of %d bytes at %#x lies in no segment of device %d: not in the snapshot's segments, "+
		"nor in one the trace allocates or frees", action, size, addr, d)
}

// traceCheck checks a device's trace entry by entry (entry), then its
// clock (clock); the block events are checked against the segments once
// these are known, by validateTrace from the entries, or, for a trace
// whose entries were not kept (Options.TraceOOMsOnly), from blocks.
type traceCheck struct {
	d             int
	last          int64 // the latest time_us seen
	lastAt        int   // its entry; -1 before one
	steps         int
	first         int // the first entry that steps back, and the one before it
	firstPrev     int
	firstOff      int64 // the first's byte offset, -1 if unknown
	firstT, prevT int64
	segs          []addrRange // the trace's segment events
	n             int
	blocks        map[addrRange]entryAt // distinct block events, to their first entry (when kept)
	blockActions  map[addrRange]string
	started       bool
	// kept are the positions in the file's trace of the entries kept (the
	// oom entries), in order: Snapshot.TraceIndex.
	kept []int
}

// entryAt is a trace entry's index and byte offset.
type entryAt struct {
	i   int
	off int64
}

// entry checks entry i's fields alone and adds it to the trace's state;
// off is its byte offset, -1 if unknown.
func (c *traceCheck) entry(i int, off int64, e *TraceEntry, bad func(field, format string, args ...any) error) error {
	if !c.started {
		c.started, c.lastAt, c.first, c.firstPrev = true, -1, -1, -1
	}
	c.n++
	p := func() string { return index(index("device_traces", c.d), i) } // built only for an error
	switch {
	case e.Size < 0:
		return bad(p()+".size", "negative (%d)", e.Size)
	case !below2To64(e.Addr, e.Size):
		return bad(p()+".addr", "%#x + size %d reaches 2^64: an address range ends below 2^64", e.Addr, e.Size)
	case e.TimeUS < 0:
		return bad(p()+".time_us", "negative (%d)", e.TimeUS)
	case e.DeviceFree < 0:
		return bad(p()+".device_free", "negative (%d)", e.DeviceFree)
	}
	k := actionKind(e.Action)
	if k != kindOther && e.Size > mem.MaxRequest {
		return bad(p()+".size", "%s of %d bytes, more than any device holds (%d, mem.MaxRequest)", e.Action, e.Size, mem.MaxRequest)
	}
	if k == kindSegment && e.Size > 0 {
		c.segs = append(c.segs, addrRange{e.Addr, e.Addr + uint64(e.Size)})
	}
	if k == kindBlock && e.Size > 0 && c.blocks != nil {
		r := addrRange{e.Addr, e.Addr + uint64(e.Size)}
		if _, ok := c.blocks[r]; !ok {
			c.blocks[r] = entryAt{i, off}
			c.blockActions[r] = e.Action
		}
	}
	if e.TimeUS == 0 {
		return nil
	}
	if c.lastAt >= 0 && e.TimeUS < c.last {
		c.steps++
		if c.first < 0 {
			c.first, c.firstPrev, c.firstOff, c.firstT, c.prevT = i, c.lastAt, off, e.TimeUS, c.last
		}
	}
	c.last, c.lastAt = e.TimeUS, i
	return nil
}

// clock checks how often time_us stepped back.
func (c *traceCheck) clock(bad func(field, format string, args ...any) error) error {
	if c.steps > maxClockSteps {
		return at(bad(index(index("device_traces", c.d), c.first)+".time_us", "%d, %d µs before entry %d's: time_us steps back %d times in this trace; entries are recorded in order, "+
			"and a clock is set back a few times at most (%d allowed)", c.firstT, c.prevT-c.firstT, c.firstPrev, c.steps, maxClockSteps), c.firstOff)
	}
	return nil
}

// blocksInside checks the distinct block events c kept against the
// segments segs of s and the trace's segment events, reporting the first
// in trace order that lies in none.
func (c *traceCheck) blocksInside(s *Snapshot, segs []int, bad func(field, format string, args ...any) error) error {
	merged := mergeRanges(append(s.segmentRanges(segs), c.segs...))
	worst, wr := entryAt{i: -1}, addrRange{}
	for r, e := range c.blocks {
		if !inside(merged, r.lo, int64(r.hi-r.lo)) && (worst.i < 0 || e.i < worst.i) {
			worst, wr = e, r
		}
	}
	if worst.i >= 0 {
		return at(outside(c.d, worst.i, c.blockActions[wr], wr.lo, int64(wr.hi-wr.lo), bad), worst.off)
	}
	return nil
}

// mergeRanges sorts r and merges the ranges that overlap or touch.
func mergeRanges(r []addrRange) []addrRange {
	sort.Slice(r, func(i, j int) bool { return r[i].lo < r[j].lo })
	out := r[:0]
	for _, x := range r {
		if n := len(out); n > 0 && x.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// inside reports whether [addr, addr+size) lies within one of the merged
// ranges m (size > 0, addr+size not wrapping).
func inside(m []addrRange, addr uint64, size int64) bool {
	i := sort.Search(len(m), func(i int) bool { return m[i].lo > addr }) - 1
	return i >= 0 && addr+uint64(size) <= m[i].hi
}
