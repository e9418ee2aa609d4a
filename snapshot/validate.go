package snapshot

import (
	"fmt"
	"math"
	"sort"
)

// MaxDevices (1024) bounds device indexes and the number of device traces.
// A device index is a CUDA ordinal, below the number of GPUs one process
// sees: 8 or 16 on today's largest nodes, 72 on an NVL72 rack. The analysis
// and the exporter keep state per device, so an index is checked before it
// is used; 1024 leaves a margin of 14 over the largest.
const MaxDevices = 1024

// Validate checks the invariants that every snapshot PyTorch writes holds
// and that the analysis relies on, and returns the first violation as an
// *Error (ErrField) with its field path, for example
//
//	field "segments[3].blocks[2].size": 0: a block has a positive size
//
// The invariants: device indexes lie in [0, MaxDevices) (segments,
// annotations, the number of device traces); sizes and times are not
// negative; a segment ends below 2^64 (address + total_size is at most
// 2^64 − 1, so Segment.End, the first address past it, does not wrap to
// 0: Layout, mem.Layout.Check, defrag and the replay rely on that); the
// segments of one device are disjoint and their sizes add up to an int64;
// a segment's blocks tile it exactly (the first starts at its address,
// each next one where the previous ends, the last at its end, every block
// has a positive size and a known state); allocated_size, active_size and
// requested_size do not exceed total_size; trace and history entries end
// below 2^64 too; a device's trace agrees with itself and its segments
// (validateTrace: event sizes at most mem.MaxRequest, time_us stepping
// back at most maxClockSteps times, every block event inside a segment
// that existed while the trace ran).
//
// Not checked, because real snapshots do not promise them: the order of
// segments (PyTorch sorts them by address, but merged or hand-edited files
// need not; Layout sorts); the segment counters' exact sums (the analysis
// recomputes them from the blocks); requested sizes against block sizes
// (an inactive block keeps the stale request of its last allocation);
// block, segment and trace sizes against the allocator's rounding rules
// (other allocators and PyTorch versions round differently).
//
// Read and ReadOptions return only snapshots that pass, and their errors
// for one that does not carry the byte offset of the value at fault in
// the file as well (the entry's, for an entry of a streamed trace:
// locate.go); Validate's own have none (Offset −1). analysis.Analyze
// validates what it is given.
func (s *Snapshot) Validate() error { return s.validate("") }

func (s *Snapshot) validate(name string) error {
	bad := func(field, format string, args ...any) error {
		return &Error{Name: name, Offset: -1, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrField}
	}
	byDevice := map[int][]int{}
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Device < 0 || seg.Device >= MaxDevices {
			return bad(index("segments", i)+".device", "device %d out of range (0 to %d)", seg.Device, MaxDevices-1)
		}
		if err := seg.validateBlocks(i, bad); err != nil {
			return err
		}
		for _, c := range []struct {
			key string
			v   int64
		}{{"allocated_size", seg.AllocatedSize}, {"active_size", seg.ActiveSize}, {"requested_size", seg.RequestedSize}} {
			if c.v < 0 || c.v > seg.TotalSize {
				return bad(index("segments", i)+"."+c.key, "%d outside 0 to the segment's total_size %d", c.v, seg.TotalSize)
			}
		}
		byDevice[seg.Device] = append(byDevice[seg.Device], i)
	}
	devs := make([]int, 0, len(byDevice))
	for d := range byDevice {
		devs = append(devs, d)
	}
	sort.Ints(devs)
	for _, d := range devs {
		if err := s.validateDisjoint(d, byDevice[d], bad); err != nil {
			return err
		}
	}
	if n := s.traceDevices(); n > MaxDevices {
		return bad("device_traces", "%d devices, more than %d", n, MaxDevices)
	}
	for d := range s.traceDevices() {
		if err := s.validateTrace(d, s.Trace(d), byDevice[d], bad); err != nil {
			return err
		}
		if d < len(s.traceChecks) && s.traceChecks[d] != nil {
			// Entries not kept (Options.TraceOOMsOnly), checked as they
			// streamed: their block events against the segments now.
			if err := s.traceChecks[d].blocksInside(s, byDevice[d], bad); err != nil {
				return err
			}
		}
	}
	for i, a := range s.ExternalAnnotations {
		if a.Device < 0 || a.Device >= MaxDevices {
			return bad(index("external_annotations", i)+".device", "device %d out of range (0 to %d)", a.Device, MaxDevices-1)
		}
	}
	return nil
}

// below2To64 reports whether the range of size bytes (size ≥ 0) from addr
// ends below 2^64: its end, addr+size, fits a uint64 without wrapping to 0.
func below2To64(addr uint64, size int64) bool { return uint64(size) <= math.MaxUint64-addr }

// validateBlocks checks that seg, segments[i], has an address range that
// does not wrap and blocks that tile it.
func (seg *Segment) validateBlocks(i int, bad func(field, format string, args ...any) error) error {
	p := func() string { return index("segments", i) } // built only for an error
	if seg.TotalSize <= 0 {
		return bad(p()+".total_size", "%d: a segment has a positive size", seg.TotalSize)
	}
	if !below2To64(seg.Address, seg.TotalSize) {
		return bad(p()+".total_size", "segment at %#x of %d bytes reaches 2^64: a segment ends below 2^64", seg.Address, seg.TotalSize)
	}
	if len(seg.Blocks) == 0 {
		return bad(p()+".blocks", "empty: a segment's blocks tile it")
	}
	at, end := seg.Address, seg.End()
	for j := range seg.Blocks {
		b := &seg.Blocks[j]
		bp := func() string { return index(p()+".blocks", j) }
		switch {
		case b.Address != at:
			return bad(bp()+".address", "%#x, want %#x: blocks tile their segment, each starting where the previous ends", b.Address, at)
		case b.Size <= 0:
			return bad(bp()+".size", "%d: a block has a positive size", b.Size)
		case uint64(b.Size) > end-at:
			return bad(bp()+".size", "%d: the block ends at %#x, past the segment's end %#x (total_size %d)", b.Size, at+uint64(b.Size), end, seg.TotalSize)
		case b.RequestedSize < 0:
			return bad(bp()+".requested_size", "negative (%d)", b.RequestedSize)
		}
		switch b.State {
		case StateAllocated, StatePendingFree, StateInactive:
		default:
			return bad(bp()+".state", "unknown block state %q", b.State)
		}
		for k, h := range b.History {
			if h.RealSize < 0 || !below2To64(h.Addr, h.RealSize) {
				return bad(index(bp()+".history", k), "addr %#x + real_size %d is negative or reaches 2^64", h.Addr, h.RealSize)
			}
		}
		at += uint64(b.Size)
	}
	if at != end {
		return bad(p()+".total_size", "%d, but the blocks add up to %d", seg.TotalSize, at-seg.Address)
	}
	return nil
}

// validateDisjoint checks that the segments idx of device d do not overlap
// and that their sizes add up to an int64.
func (s *Snapshot) validateDisjoint(d int, idx []int, bad func(field, format string, args ...any) error) error {
	sort.Slice(idx, func(a, b int) bool { return s.Segments[idx[a]].Address < s.Segments[idx[b]].Address })
	var total int64
	for k, i := range idx {
		seg := &s.Segments[i]
		if total > math.MaxInt64-seg.TotalSize {
			return bad(index("segments", i)+".total_size", "device %d: the segments add up to more than 2^63-1 bytes", d)
		}
		total += seg.TotalSize
		if k == 0 {
			continue
		}
		prev := &s.Segments[idx[k-1]]
		if seg.Address < prev.End() {
			return bad(index("segments", i)+".address", "%#x overlaps segments[%d] (%#x to %#x) on device %d: segments are disjoint",
				seg.Address, idx[k-1], prev.Address, prev.End(), d)
		}
	}
	return nil
}
