package mem

import (
	"fmt"
	"sort"
	"strings"
)

// BlockState says whether a block inside a segment is live.
type BlockState uint8

const (
	// Free: part of a segment that no caller holds (PyTorch "inactive").
	Free BlockState = iota
	// Active: held by a caller (PyTorch "active_allocated").
	Active
	// PendingFree: freed by the caller but still awaited by another stream
	// (PyTorch "active_pending_free"); counted as allocated.
	PendingFree
)

func (s BlockState) String() string {
	switch s {
	case Free:
		return "free"
	case Active:
		return "active"
	case PendingFree:
		return "pending_free"
	}
	return fmt.Sprintf("BlockState(%d)", uint8(s))
}

// Block is one contiguous piece of a segment.
type Block struct {
	Addr      uint64
	Size      int64 // bytes the block occupies (after rounding and splitting)
	Requested int64 // bytes the caller asked for; 0 for free blocks
	State     BlockState
}

// End is the first address past the block.
func (b Block) End() uint64 { return b.Addr + uint64(b.Size) }

// Segment is a contiguous virtual range that an allocator obtained from the
// device (a cudaMalloc, or one mapped run of an expandable segment). Its
// blocks tile it in address order.
type Segment struct {
	Addr       uint64
	Size       int64
	Stream     int
	Pool       string // allocator-specific pool name ("small", "large", "8MiB", "arena", ...)
	Expandable bool   // a mapped run of a virtual range that can grow
	Blocks     []Block
}

// End is the first address past the segment.
func (s Segment) End() uint64 { return s.Addr + uint64(s.Size) }

// Layout is an allocator's memory at one moment: the device, every segment and
// block, and the largest request the allocator could serve now. It is a plain
// value (no pointers into the allocator) so it can be kept, compared and
// serialised.
type Layout struct {
	Capacity int64 // device memory
	OtherUse int64 // weights, CUDA context, other processes
	// DeviceFree is physical memory nobody holds. Usually Capacity − OtherUse −
	// Reserved; it is smaller when an allocator holds physical pages that are
	// mapped but not in any segment (none of ours do).
	DeviceFree int64
	// MaxAllocatable is the largest single request (stream 0) that would
	// succeed now, counting what the allocator would release before giving up.
	// Only the allocator knows its own rules, so it fills this in.
	MaxAllocatable int64
	Segments       []Segment
}

// Classes splits a device's capacity into disjoint memory classes.
//
//	OtherUse + Live + InternalWaste + CachedFree + DeviceFree == Capacity
type Classes struct {
	OtherUse      int64 // weights, context, other processes
	Live          int64 // bytes callers asked for (Σ requested of live blocks)
	InternalWaste int64 // rounding inside live blocks (allocated − requested)
	CachedFree    int64 // reserved but not allocated (reserved − allocated)
	DeviceFree    int64 // not reserved by anyone
}

// Sum is the total of all classes; equal to the capacity for a valid layout.
func (c Classes) Sum() int64 {
	return c.OtherUse + c.Live + c.InternalWaste + c.CachedFree + c.DeviceFree
}

// Reserved is what the allocator holds: live + internal waste + cached free.
func (c Classes) Reserved() int64 { return c.Live + c.InternalWaste + c.CachedFree }

// Allocated is Σ sizes of live blocks.
func (c Classes) Allocated() int64 { return c.Live + c.InternalWaste }

// Classes recounts the memory classes from the segments.
func (l Layout) Classes() Classes {
	var reserved, allocated, requested int64
	for _, s := range l.Segments {
		reserved += s.Size
		for _, b := range s.Blocks {
			if b.State != Free {
				allocated += b.Size
				requested += b.Requested
			}
		}
	}
	return Classes{
		OtherUse:      l.OtherUse,
		Live:          requested,
		InternalWaste: allocated - requested,
		CachedFree:    reserved - allocated,
		DeviceFree:    l.DeviceFree,
	}
}

// Check verifies the layout's own invariants: segments sorted and disjoint,
// blocks tiling each segment, requested ≤ size, and classes adding up to the
// capacity. It returns the first violation.
func (l Layout) Check() error {
	var prevEnd uint64
	for i, s := range l.Segments {
		if s.Size <= 0 {
			return fmt.Errorf("segment %d at %#x has size %d", i, s.Addr, s.Size)
		}
		if i > 0 && s.Addr < prevEnd {
			return fmt.Errorf("segment %d at %#x overlaps or precedes the previous one ending at %#x", i, s.Addr, prevEnd)
		}
		prevEnd = s.End()
		at := s.Addr
		for j, b := range s.Blocks {
			if b.Addr != at {
				return fmt.Errorf("segment %#x block %d starts at %#x, want %#x (blocks must tile the segment)", s.Addr, j, b.Addr, at)
			}
			if b.Size <= 0 || b.Requested < 0 || b.Requested > b.Size {
				return fmt.Errorf("segment %#x block %d at %#x: size %d requested %d", s.Addr, j, b.Addr, b.Size, b.Requested)
			}
			if b.State == Free && b.Requested != 0 {
				return fmt.Errorf("segment %#x free block %d at %#x has requested %d", s.Addr, j, b.Addr, b.Requested)
			}
			at = b.End()
		}
		if at != s.End() {
			return fmt.Errorf("segment %#x of %d bytes: blocks end at %#x, want %#x", s.Addr, s.Size, at, s.End())
		}
	}
	c := l.Classes()
	if c.DeviceFree < 0 || c.Sum() != l.Capacity {
		return fmt.Errorf("memory classes %+v add up to %d, capacity %d", c, c.Sum(), l.Capacity)
	}
	return nil
}

// Sort orders segments by address (allocators build layouts in any order).
func (l *Layout) Sort() {
	sort.Slice(l.Segments, func(i, j int) bool { return l.Segments[i].Addr < l.Segments[j].Addr })
}

// String renders the layout for people and golden files: one line per
// segment with its offset from the first segment, size, pool, stream and an
// ASCII map (see Segment.Map), then one line per block.
func (l Layout) String() string {
	var sb strings.Builder
	c := l.Classes()
	fmt.Fprintf(&sb, "reserved=%s allocated=%s requested=%s device_free=%s max_allocatable=%s\n",
		FormatBytesExact(c.Reserved()), FormatBytesExact(c.Allocated()), FormatBytesExact(c.Live),
		FormatBytesExact(c.DeviceFree), FormatBytesExact(l.MaxAllocatable))
	if len(l.Segments) == 0 {
		sb.WriteString("(no segments)\n")
		return sb.String()
	}
	for _, s := range l.Segments {
		kind := ""
		if s.Expandable {
			kind = " expandable"
		}
		fmt.Fprintf(&sb, "segment %s size=%s pool=%s stream=%d%s %s\n",
			FormatAddr(s.Addr), FormatBytesExact(s.Size), s.Pool, s.Stream, kind, s.Map(24))
		for _, b := range s.Blocks {
			if b.State == Free {
				fmt.Fprintf(&sb, "  %s %s free\n", FormatAddr(b.Addr), FormatBytesExact(b.Size))
			} else {
				fmt.Fprintf(&sb, "  %s %s %s requested=%s\n", FormatAddr(b.Addr), FormatBytesExact(b.Size), b.State, FormatBytesExact(b.Requested))
			}
		}
	}
	return sb.String()
}

// Map draws the segment as width cells between brackets. A cell shows the
// block covering most of it: a letter for a live block (A, B, ... in address
// order, cycling), '.' for free space. Example: [AAAA..BB.CCC....].
func (s Segment) Map(width int) string {
	if width <= 0 || s.Size <= 0 {
		return "[]"
	}
	cells := make([]byte, width)
	live := 0
	letters := make([]byte, len(s.Blocks))
	for i, b := range s.Blocks {
		if b.State == Free {
			letters[i] = '.'
			continue
		}
		letters[i] = byte('A' + live%26)
		live++
	}
	j := 0
	for c := range width {
		mid := s.Addr + uint64((2*int64(c)+1)*s.Size/int64(2*width))
		for j < len(s.Blocks)-1 && s.Blocks[j].End() <= mid {
			j++
		}
		if j < len(s.Blocks) {
			cells[c] = letters[j]
		} else {
			cells[c] = '?'
		}
	}
	return "[" + string(cells) + "]"
}

// FormatAddr prints a device address for people: "@20MiB" for an offset from
// DefaultVABase (where the modelled device's first range starts), hex for
// addresses below it (for example addresses taken from a real trace).
func FormatAddr(a uint64) string {
	if a >= DefaultVABase {
		return "@" + FormatBytesExact(int64(a-DefaultVABase))
	}
	return fmt.Sprintf("%#x", a)
}

// ParseAddr reads what FormatAddr prints ("@20MiB" or "0x7f00...").
func ParseAddr(s string) (uint64, error) {
	if strings.HasPrefix(s, "@") {
		n, err := ParseBytes(s[1:])
		if err != nil {
			return 0, err
		}
		return DefaultVABase + uint64(n), nil
	}
	var a uint64
	if _, err := fmt.Sscanf(s, "0x%x", &a); err != nil {
		return 0, fmt.Errorf("%w: address %q (want @OFFSET or 0xHEX)", ErrBadSize, s)
	}
	return a, nil
}
