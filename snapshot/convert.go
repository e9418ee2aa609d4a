package snapshot

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

func (c *conv) segments(l []any, off int64, path string) ([]Segment, error) {
	if err := c.spend(len(l), sizeSegment, off, path); err != nil {
		return nil, err
	}
	out := make([]Segment, len(l))
	for i, v := range l {
		p := index(path, i)
		o, err := c.obj(v, off, p)
		if err != nil {
			return nil, err
		}
		if err := c.segment(o, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *conv) segment(o obj, s *Segment) error {
	var err error
	if s.Device, err = o.int("device", false); err != nil {
		return err
	}
	if s.Address, _, err = o.addr("address", true); err != nil {
		return err
	}
	if s.TotalSize, _, err = o.size("total_size", true); err != nil {
		return err
	}
	if s.AllocatedSize, _, err = o.size("allocated_size", false); err != nil {
		return err
	}
	if s.ActiveSize, _, err = o.size("active_size", false); err != nil {
		return err
	}
	if s.RequestedSize, _, err = o.size("requested_size", false); err != nil {
		return err
	}
	if s.Stream, _, err = o.int64("stream", false); err != nil {
		return err
	}
	if s.SegmentType, _, err = o.str("segment_type", false); err != nil {
		return err
	}
	if s.IsExpandable, _, err = o.bool("is_expandable"); err != nil {
		return err
	}
	if s.PoolID, _, err = c.poolID(o, "segment_pool_id"); err != nil {
		return err
	}
	if s.Frames, err = c.framesField(o, "frames"); err != nil {
		return err
	}
	blocks, off, _, err := o.list("blocks", true)
	if err != nil {
		return err
	}
	path := join(o.where(), "blocks")
	if err := c.spend(len(blocks), sizeBlock, off, path); err != nil {
		return err
	}
	s.Blocks = make([]Block, len(blocks))
	next := s.Address
	for j, v := range blocks {
		bo, err := c.obj(v, off, index(path, j))
		if err != nil {
			return err
		}
		b := &s.Blocks[j]
		if err := c.block(bo, b, next); err != nil {
			return err
		}
		next = b.Address + uint64(b.Size)
	}
	return nil
}

// block reads one block; next is where it starts if the file does not say
// (legacy files), i.e. the end of the previous block.
func (c *conv) block(o obj, b *Block, next uint64) error {
	var err error
	var ok bool
	if b.Address, ok, err = o.addr("address", false); err != nil {
		return err
	} else if !ok {
		b.Address = next
	}
	if b.Size, _, err = o.size("size", true); err != nil {
		return err
	}
	var hasReq bool
	if b.RequestedSize, hasReq, err = o.size("requested_size", false); err != nil {
		return err
	}
	state, _, err := o.str("state", true)
	if err != nil {
		return err
	}
	switch state {
	case StateAllocated, StatePendingFree, StateInactive:
		b.State = state
	case "active_awaiting_free":
		b.State = StatePendingFree
	default:
		_, off, _ := o.get("state")
		return c.fieldErr(off, join(o.where(), "state"), "unknown block state %q", state)
	}
	if b.Frames, err = c.framesField(o, "frames"); err != nil {
		return err
	}
	hist, off, ok, err := o.list("history", false)
	if err != nil || !ok {
		return err
	}
	// PyTorch ≤ 2.0: history[0] = {addr, real_size, frames} describes the
	// allocation living in the block; later entries are earlier
	// allocations of blocks merged into it.
	c.legacy = true
	if len(hist) == 0 {
		return nil
	}
	hpath := join(o.where(), "history")
	if err := c.spend(len(hist), sizeHistory, off, hpath); err != nil {
		return err
	}
	b.History = make([]HistoryEntry, len(hist))
	hasReal := false
	for i, v := range hist {
		h, err := c.obj(v, off, index(hpath, i))
		if err != nil {
			return err
		}
		e := &b.History[i]
		var has bool
		if e.RealSize, has, err = h.size("real_size", false); err != nil {
			return err
		}
		hasReal = hasReal || (i == 0 && has)
		if e.Addr, _, err = h.addr("addr", false); err != nil {
			return err
		}
		if e.Frames, err = c.framesField(h, "frames"); err != nil {
			return err
		}
	}
	if !hasReq && hasReal {
		b.RequestedSize = b.History[0].RealSize
	}
	if b.Frames == nil {
		b.Frames = b.History[0].Frames
	}
	return nil
}

// framesField reads a list of frames. A list the pickle shares (one memo
// entry used many times) is converted once and shared.
func (c *conv) framesField(o obj, key string) ([]Frame, error) {
	l, off, ok, err := o.list(key, false)
	if err != nil || !ok || len(l) == 0 {
		return nil, err
	}
	id := unsafe.SliceData(l)
	if f, ok := c.frames[id]; ok && len(f) == len(l) {
		return f, nil
	}
	path := join(o.where(), key)
	if err := c.spend(len(l), sizeFrame, off, path); err != nil {
		return nil, err
	}
	out := make([]Frame, len(l))
	for i, v := range l {
		if err := c.frame(v, off, &out[i]); err != nil {
			// Paths are built only on error: frames are the bulk of a file.
			e := err.(*Error)
			if e.Field != "" {
				e.Field = "." + e.Field
			}
			e.Field = index(path, i) + e.Field
			return nil, err
		}
	}
	c.frames[id] = out
	return out, nil
}

// frame reads one frame dict; errors carry a path relative to it.
func (c *conv) frame(v any, off int64, f *Frame) error {
	fo, err := c.obj(v, off, "")
	if err != nil {
		return err
	}
	if f.Filename, _, err = fo.str("filename", false); err != nil {
		return err
	}
	if f.Line, _, err = fo.int64("line", false); err != nil {
		return err
	}
	f.Name, _, err = fo.str("name", false)
	return err
}

func (c *conv) traces(s *Snapshot, top obj, off int64) error {
	devs, _, _, err := top.list("device_traces", false)
	if err != nil {
		return err
	}
	if err := c.spend(len(devs), sizeTraceList, off, "device_traces"); err != nil {
		return err
	}
	s.DeviceTraces = make([][]TraceEntry, len(devs))
	s.TraceLen = make([]int, len(devs))
	for d, dv := range devs {
		path := index("device_traces", d)
		var l []any
		switch x := dv.(type) {
		case *pickle.Streamed:
			// Converted as it streamed (streamItems).
			t := c.streamed[x]
			if t == nil {
				t = &streamedTrace{}
			}
			s.TraceLen[d] = t.total
			if c.pack {
				t.pack(c.actions)
				if s.packed == nil {
					s.packed = make([]*Trace, len(devs))
				}
				s.packed[d] = &t.Trace
			} else {
				s.DeviceTraces[d] = t.expand(c.actions)
			}
			if t.check != nil {
				if err := t.check.clock(c.badField); err != nil {
					return err
				}
				t.check.d = d
				for len(s.traceChecks) <= d {
					s.traceChecks = append(s.traceChecks, nil)
				}
				s.traceChecks[d] = t.check
			}
			continue
		case []any:
			l = x
		case pickle.Tuple:
			l = x
		case nil:
			continue
		default:
			return c.fieldErr(off, path, "want list, got %s", pickle.TypeName(dv))
		}
		if err := c.spend(len(l), sizeTrace, off, path); err != nil {
			return err
		}
		entries := make([]TraceEntry, len(l))
		for i, v := range l {
			if err := c.traceEntry(v, off, path, i, &entries[i]); err != nil {
				return err
			}
		}
		s.DeviceTraces[d], s.TraceLen[d] = entries, len(entries)
	}
	s.HasTimes = s.HasTimes || c.hasTimes
	return nil
}

// streamItems converts a batch of one device's trace entries as the
// decoder hands them over (pickle.Stream).
func (c *conv) streamItems(st *pickle.Streamed, items []pickle.Item) error {
	path := index("device_traces", st.Index)
	off := int64(0)
	if len(items) > 0 {
		off = items[0].Off
	}
	if !c.oomsOnly {
		if err := c.spend(len(items), sizeTrace, off, path); err != nil {
			return err
		}
	}
	if c.streamed == nil {
		c.streamed = map[*pickle.Streamed]*streamedTrace{}
	}
	t := c.streamed[st]
	if t == nil {
		t = &streamedTrace{}
		if c.oomsOnly {
			t.check = &traceCheck{d: st.Index, blocks: map[addrRange]entryAt{}, blockActions: map[addrRange]string{}}
		}
		c.streamed[st] = t
	}
	for i, it := range items {
		var e TraceEntry
		if err := c.traceEntry(it.V, it.Off, path, st.Len+i, &e); err != nil {
			return err
		}
		t.total++
		if t.check == nil {
			t.add(&e, c.intern(e.Action))
			t.offs = binary.AppendVarint(t.offs, it.Off-t.lastOff)
			t.lastOff = it.Off
			continue
		}
		nb := len(t.check.blocks)
		if err := t.check.entry(st.Len+i, it.Off, &e, c.badField); err != nil {
			return at(err, it.Off)
		}
		if len(t.check.blocks) > nb {
			if err := c.spend(1, sizeBlockRange, it.Off, path); err != nil {
				return err
			}
		}
		if e.Action == "oom" {
			if err := c.spend(1, sizeTrace, it.Off, path); err != nil {
				return err
			}
			t.add(&e, c.intern(e.Action))
			t.check.kept = append(t.check.kept, st.Len+i)
		}
	}
	return nil
}

// sizeBlockRange (88 bytes) is a distinct block range kept to check a
// trace whose entries are not kept: map entries of addrRange to entryAt
// and to string.
const sizeBlockRange = 88

// badField is the error of a check of a streamed entry (Validate's rules).
func (c *conv) badField(field, format string, args ...any) error {
	return &Error{Name: c.name, Offset: -1, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrField}
}

// traceEntry reads one trace entry, the value v at offset off, element i
// of the list at path.
func (c *conv) traceEntry(v any, off int64, path string, i int, e *TraceEntry) error {
	o, err := c.objElem(v, off, path, i)
	if err != nil {
		return err
	}
	if e.Action, _, err = o.str("action", true); err != nil {
		return err
	}
	if e.Addr, _, err = o.addr("addr", false); err != nil {
		return err
	}
	if e.Size, _, err = o.size("size", false); err != nil {
		return err
	}
	if e.Stream, _, err = o.int64("stream", false); err != nil {
		return err
	}
	var has bool
	if e.TimeUS, has, err = o.int64("time_us", false); err != nil {
		return err
	}
	c.hasTimes = c.hasTimes || has
	if e.DeviceFree, _, err = o.int64("device_free", false); err != nil {
		return err
	}
	if e.PoolID, e.HasPoolID, err = c.poolID(o, "pool_id"); err != nil {
		return err
	}
	if e.UserMetadata, _, err = o.str("user_metadata", false); err != nil {
		return err
	}
	if e.CompileContext, _, err = o.str("compile_context", false); err != nil {
		return err
	}
	skip := c.skipTraceFrames || c.oomsOnly
	if skip && e.Action != "oom" {
		return nil
	}
	if f, _, ok := o.get("frames"); ok {
		if _, forgotten := f.(pickle.Forgotten); forgotten && skip {
			// An oom entry sharing the stack of an entry already
			// streamed and forgotten: its frames are not known.
			return nil
		}
	}
	e.Frames, err = c.framesField(o, "frames")
	return err
}

func (c *conv) annotations(top obj) ([]Annotation, error) {
	l, off, _, err := top.list("external_annotations", false)
	if err != nil {
		return nil, err
	}
	if err := c.spend(len(l), sizeAnnotation, off, "external_annotations"); err != nil {
		return nil, err
	}
	out := make([]Annotation, len(l))
	for i, v := range l {
		o, err := c.obj(v, off, index("external_annotations", i))
		if err != nil {
			return nil, err
		}
		a := &out[i]
		if a.Stage, _, err = o.str("stage", false); err != nil {
			return nil, err
		}
		if a.Name, _, err = o.str("name", false); err != nil {
			return nil, err
		}
		if a.Device, err = o.int("device", false); err != nil {
			return nil, err
		}
		if a.TimeUS, _, err = o.int64("time_us", false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settings reads allocator_settings, checking the keys that have typed
// accessors and keeping every key.
func (c *conv) settings(top obj, off int64) (AllocatorSettings, error) {
	v, _, _ := top.get("allocator_settings")
	o, err := c.obj(v, off, "allocator_settings")
	if err != nil {
		return nil, err
	}
	if _, _, err := o.str("PYTORCH_CUDA_ALLOC_CONF", false); err != nil {
		return nil, err
	}
	if _, _, err := o.int64("max_split_size", false); err != nil {
		return nil, err
	}
	if _, _, err := o.bool("expandable_segments"); err != nil {
		return nil, err
	}
	out := AllocatorSettings{}
	for i := 0; i < o.d.Len(); i++ {
		k := fmt.Sprint(o.d.Key(i))
		val, voff := o.d.Value(i), o.d.ValueOffset(i)
		switch k {
		case "garbage_collection_threshold":
			switch x := val.(type) {
			case float64:
			case int64:
				val = float64(x)
			default:
				return nil, o.wrong(k, voff, "float", val)
			}
		case "roundup_power2_divisions":
			d, isDict := val.(*pickle.Dict)
			if !isDict {
				return nil, o.wrong(k, voff, "dict", val)
			}
			for j := 0; j < d.Len(); j++ {
				ks, _ := d.Key(j).(string)
				if _, err := strconv.ParseInt(ks, 10, 64); err != nil {
					return nil, c.fieldErr(voff, join(o.where(), k), "key %v is not a decimal integer string", d.Key(j))
				}
				if _, isInt := d.Value(j).(int64); !isInt {
					return nil, c.fieldErr(d.ValueOffset(j), join(o.where(), k)+"["+strconv.Quote(ks)+"]", "want int, got %s", pickle.TypeName(d.Value(j)))
				}
			}
		}
		g, err := c.generic(val, voff, join(o.where(), k))
		if err != nil {
			return nil, err
		}
		out[k] = g
	}
	return out, nil
}

// generic turns a decoded value into plain Go values: *pickle.Dict becomes
// map[string]any (keys formatted with fmt), tuples and lists []any.
func (c *conv) generic(v any, off int64, path string) (any, error) {
	switch x := v.(type) {
	case *pickle.Dict:
		if err := c.spend(x.Len(), sizeMapEntry, off, path); err != nil {
			return nil, err
		}
		m := make(map[string]any, x.Len())
		for i := 0; i < x.Len(); i++ {
			g, err := c.generic(x.Value(i), x.ValueOffset(i), path)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(x.Key(i))] = g
		}
		return m, nil
	case pickle.Tuple:
		return c.generic([]any(x), off, path)
	case []any:
		if err := c.spend(len(x), sizeListItem, off, path); err != nil {
			return nil, err
		}
		out := make([]any, len(x))
		for i, e := range x {
			g, err := c.generic(e, off, path)
			if err != nil {
				return nil, err
			}
			out[i] = g
		}
		return out, nil
	}
	return v, nil
}
