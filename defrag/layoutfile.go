// The saved-layout file: a mem.Layout as JSON, for `gpufrag defrag FILE`.
// See doc.go for the overview; docs/json.md documents the format.

package defrag

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
)

// LayoutVersion is the value of "gpufrag_layout" this package writes and reads.
const LayoutVersion = 1

// MaxLayoutFile bounds the size of a layout file ReadLayout accepts: 1 GiB,
// far above the ~100 bytes per block of the format times the blocks of any
// real allocator, and low enough that a hostile file cannot exhaust memory.
const MaxLayoutFile = 1 << 30

// ErrLayoutFile is wrapped by ReadLayout for a file that is not a valid
// layout; the message names the byte offset or the field.
var ErrLayoutFile = errors.New("bad layout file")

// layoutFile is the saved-layout document (docs/json.md).
type layoutFile struct {
	Version        int           `json:"gpufrag_layout"`
	Allocator      string        `json:"allocator,omitempty"`
	Capacity       int64         `json:"capacity_bytes"`
	OtherUse       int64         `json:"other_use_bytes"`
	DeviceFree     *int64        `json:"device_free_bytes,omitempty"`
	MaxAllocatable int64         `json:"max_allocatable_bytes"`
	Segments       []fileSegment `json:"segments"`
}

type fileSegment struct {
	Addr       uint64      `json:"addr"`
	Size       int64       `json:"size"`
	Pool       string      `json:"pool"`
	Stream     int         `json:"stream"`
	Expandable bool        `json:"expandable,omitempty"`
	Blocks     []fileBlock `json:"blocks"`
}

type fileBlock struct {
	Addr      uint64 `json:"addr"`
	Size      int64  `json:"size"`
	Requested int64  `json:"requested,omitempty"`
	State     string `json:"state"`
}

var stateNames = map[mem.BlockState]string{mem.Free: "free", mem.Active: "active", mem.PendingFree: "pending_free"}

// newLayoutFile turns a layout into the saved-layout document; allocator
// ("caching", "arena", "sizeclass" or a spec) tells the planner the rules.
func newLayoutFile(l mem.Layout, allocator string) layoutFile {
	f := layoutFile{Version: LayoutVersion, Allocator: allocator, Capacity: l.Capacity, OtherUse: l.OtherUse,
		MaxAllocatable: l.MaxAllocatable, Segments: make([]fileSegment, len(l.Segments))}
	df := l.DeviceFree
	f.DeviceFree = &df
	for i, s := range l.Segments {
		fs := fileSegment{Addr: s.Addr, Size: s.Size, Pool: s.Pool, Stream: s.Stream, Expandable: s.Expandable,
			Blocks: make([]fileBlock, len(s.Blocks))}
		for j, b := range s.Blocks {
			fs.Blocks[j] = fileBlock{Addr: b.Addr, Size: b.Size, Requested: b.Requested, State: stateNames[b.State]}
		}
		f.Segments[i] = fs
	}
	return f
}

// WriteLayout writes l as an indented saved-layout document.
func WriteLayout(w io.Writer, l mem.Layout, allocator string) error {
	b, err := json.MarshalIndent(newLayoutFile(l, allocator), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// IsLayoutFile says whether data looks like a saved layout (a JSON object
// with the "gpufrag_layout" key) rather than a PyTorch snapshot.
func IsLayoutFile(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && bytes.Contains(data, []byte(`"gpufrag_layout"`))
}

// ParseAlloc parses an allocator spec named in a layout file: the
// registry's Parse (alloc/registry), passed in by the caller.
type ParseAlloc func(spec string) (alloc.Described, error)

// ReadLayout reads a saved-layout document from r (name labels errors) and
// returns the layout and the allocator it names. Errors wrap ErrLayoutFile
// and name the byte offset (syntax, wrong types) or the field path
// (segments[3].blocks[7].state), and the layout must pass mem.Layout.Check.
// The allocator must be a spec parse takes (the command line passes
// alloc/registry.Parse: defrag links no allocator registry), and is returned
// parsed, nil when the file names none; byte counts are
// checked against capacity_bytes (at most mem.MaxCapacity) field by field
// before they are added. device_free_bytes, when given, must be capacity −
// other use − reserved, which it is computed as when absent.
// The first 4 KiB must be JSON text (untrusted.CheckJSONStart) before the rest
// is read, so random bytes or another format fail there.
func ReadLayout(r io.Reader, name string, parse ParseAlloc) (mem.Layout, alloc.Described, error) {
	head, atEOF, whole, err := untrusted.Head(r)
	if err != nil {
		return mem.Layout{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := untrusted.CheckJSONStart(head, atEOF); err != nil {
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: %w", ErrLayoutFile, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(whole, MaxLayoutFile+1))
	if err != nil {
		return mem.Layout{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxLayoutFile {
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrLayoutFile, name, MaxLayoutFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f layoutFile
	if err := dec.Decode(&f); err != nil {
		switch off, field := untrusted.LocateDecodeError(data, err); {
		case off >= 0 && field != "":
			return mem.Layout{}, nil, fmt.Errorf("%w: %s: offset %d: field %q: %s", ErrLayoutFile, name, off, field, untrusted.DecodeMessage(err))
		case off >= 0:
			return mem.Layout{}, nil, fmt.Errorf("%w: %s: offset %d: %s", ErrLayoutFile, name, off, untrusted.DecodeMessage(err))
		}
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: offset %d: %w", ErrLayoutFile, name, dec.InputOffset(), err)
	}
	if dec.More() {
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: offset %d: data after the document", ErrLayoutFile, name, dec.InputOffset())
	}
	bad := func(field, format string, args ...any) (mem.Layout, alloc.Described, error) {
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: field %q: %s", ErrLayoutFile, name, field, fmt.Sprintf(format, args...))
	}
	if f.Version != LayoutVersion {
		return bad("gpufrag_layout", "version %d, want %d", f.Version, LayoutVersion)
	}
	// The allocator's rules decide the plan: a spec replay --alloc refuses
	// is refused here too, not read by its name alone.
	var a alloc.Described
	if f.Allocator != "" {
		if parse == nil {
			return bad("allocator", "%s: no allocator registry to parse it with", untrusted.Quote(f.Allocator))
		}
		if a, err = parse(f.Allocator); err != nil {
			return bad("allocator", "%v", err)
		}
	}
	// Every byte count is checked against the device's bounds before any
	// is added, so that no sum overflows (mem.MaxCapacity: 1 PiB).
	if f.Capacity < 0 || f.Capacity > mem.MaxCapacity {
		return bad("capacity_bytes", "%d: want 0 to %d (mem.MaxCapacity, 1 PiB)", f.Capacity, mem.MaxCapacity)
	}
	for _, c := range []struct {
		field string
		v     *int64
	}{{"other_use_bytes", &f.OtherUse}, {"device_free_bytes", f.DeviceFree}, {"max_allocatable_bytes", &f.MaxAllocatable}} {
		if c.v != nil && (*c.v < 0 || *c.v > f.Capacity) {
			return bad(c.field, "%d: want 0 to capacity_bytes (%d)", *c.v, f.Capacity)
		}
	}
	l := mem.Layout{Capacity: f.Capacity, OtherUse: f.OtherUse, MaxAllocatable: f.MaxAllocatable,
		Segments: make([]mem.Segment, len(f.Segments))}
	var reserved int64
	for i, fs := range f.Segments {
		if fs.Size <= 0 || fs.Size > f.Capacity-reserved {
			return bad(fmt.Sprintf("segments[%d].size", i), "%d: want 1 to the %d bytes of capacity_bytes (%d) the segments before it leave", fs.Size, f.Capacity-reserved, f.Capacity)
		}
		if fs.Addr > math.MaxUint64-uint64(fs.Size) {
			return bad(fmt.Sprintf("segments[%d].addr", i), "%#x + size %d runs past the end of the address space (2^64)", fs.Addr, fs.Size)
		}
		s := mem.Segment{Addr: fs.Addr, Size: fs.Size, Pool: fs.Pool, Stream: fs.Stream, Expandable: fs.Expandable,
			Blocks: make([]mem.Block, len(fs.Blocks))}
		reserved += fs.Size
		for j, fb := range fs.Blocks {
			b := mem.Block{Addr: fb.Addr, Size: fb.Size, Requested: fb.Requested}
			switch fb.State {
			case "free":
				b.State = mem.Free
			case "active":
				b.State = mem.Active
			case "pending_free":
				b.State = mem.PendingFree
			default:
				return mem.Layout{}, nil, fmt.Errorf("%w: %s: field \"segments[%d].blocks[%d].state\": %q (want active, free or pending_free)",
					ErrLayoutFile, name, i, j, fb.State)
			}
			if fb.Size <= 0 || fb.Size > fs.Size || fb.Requested < 0 || fb.Requested > fb.Size {
				return bad(fmt.Sprintf("segments[%d].blocks[%d]", i, j), "size %d, requested %d: want 0 < size ≤ the segment's %d and 0 ≤ requested ≤ size",
					fb.Size, fb.Requested, fs.Size)
			}
			s.Blocks[j] = b
		}
		l.Segments[i] = s
	}
	if f.OtherUse > f.Capacity-reserved {
		return bad("other_use_bytes", "%d, but capacity_bytes (%d) less the segments (%d) leaves %d", f.OtherUse, f.Capacity, reserved, f.Capacity-reserved)
	}
	l.DeviceFree = f.Capacity - f.OtherUse - reserved
	if f.DeviceFree != nil {
		if *f.DeviceFree != l.DeviceFree {
			return bad("device_free_bytes", "%d, but capacity_bytes %d − other_use_bytes %d − the segments' %d is %d", *f.DeviceFree, f.Capacity, f.OtherUse, reserved, l.DeviceFree)
		}
	}
	l.Sort()
	if err := l.Check(); err != nil {
		return mem.Layout{}, nil, fmt.Errorf("%w: %s: %w", ErrLayoutFile, name, err)
	}
	return l, a, nil
}
