package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Options bounds reading. A nil *Options, or a zero field, means the default.
type Options struct {
	// Pickle bounds the decoder; see pickle.Options.
	Pickle pickle.Options
	// MaxBuiltBytes caps the memory of the typed values built (segments,
	// blocks, history entries, frames, trace entries, annotations, settings
	// and memory_stats keys, at 64-bit Go sizes; default DefaultBuiltFactor
	// per input byte plus DefaultBuiltSlack). Pickles share values through
	// the memo, and each reference to a shared value is built anew (a shared
	// list of frames is the one exception), so a small file could otherwise
	// describe a huge snapshot: 4 MB of references to one segment drove
	// the reader to 2.8 GB.
	MaxBuiltBytes int64
	// SkipTraceFrames leaves TraceEntry.Frames nil, unread and unchecked,
	// except on oom entries. Trace stacks are most of a file's values and
	// a diagnosis needs only the stacks of blocks and failures; skipping
	// them saves about a third of the conversion time.
	SkipTraceFrames bool
	// TraceOOMsOnly keeps, of each device's trace, only the oom entries
	// (Snapshot.TraceLen counts them all). Every entry is still checked
	// as it streams past, as Validate checks a trace (sizes, time order,
	// block events inside segments, the last from the distinct block
	// ranges), but memory then follows the segments, blocks, distinct
	// frames and strings, not the history: for readers that replay
	// nothing (analyze --no-replay, the exporter).
	TraceOOMsOnly bool
	// PackTraces keeps each streamed device trace packed, 40 bytes an
	// entry (a TraceEntry is 136), for a reader that takes the entries in
	// order (Snapshot.Trace: analyze's replay and what-ifs); DeviceTraces[d]
	// is then nil for such a trace. A trace the decoder could not stream (a
	// list the file refers to twice through the memo) stays in
	// DeviceTraces, and Snapshot.Trace reads it there.
	PackTraces bool
}

// The default of Options.MaxBuiltBytes.
const (
	// DefaultBuiltFactor (24) bounds the typed values to 24 bytes per input
	// byte. The real snapshots build 0.8 to 9.6 (the largest shared one,
	// with the stacks of its 4,657 trace entries; 3.2 without them), so 24
	// leaves a margin of 2.5, and a 4 MB file builds at most 97 MiB.
	DefaultBuiltFactor = 24
	// DefaultBuiltSlack (1 MiB) lets tiny inputs build freely.
	DefaultBuiltSlack = 1 << 20
)

// Sizes charged to Options.MaxBuiltBytes for each value built.
var (
	sizeSegment    = int64(unsafe.Sizeof(Segment{}))
	sizeBlock      = int64(unsafe.Sizeof(Block{}))
	sizeHistory    = int64(unsafe.Sizeof(HistoryEntry{}))
	sizeFrame      = int64(unsafe.Sizeof(Frame{}))
	sizeTrace      = int64(unsafe.Sizeof(TraceEntry{}))
	sizeTraceList  = int64(unsafe.Sizeof([]TraceEntry{}))
	sizeAnnotation = int64(unsafe.Sizeof(Annotation{}))
)

// sizeMapEntry (48 bytes) is an entry of a map[string]any (settings,
// memory_stats): key and value headers with the map's per-entry overhead;
// sizeListItem (16) an element of an []any.
const (
	sizeMapEntry = 48
	sizeListItem = 16
)

// Read decodes a snapshot from r. name labels errors (a file name, "stdin");
// it may be empty. Errors about the file are *Error; an error reading r is
// returned wrapped. The snapshot returned has passed Validate.
func Read(r io.Reader, name string) (*Snapshot, error) {
	return ReadOptions(r, name, nil)
}

// ReadOptions is Read with explicit limits. It looks at the first bytes
// before reading the rest, so an input that is no snapshot (/dev/zero, a
// torch.save ZIP archive, a compressed file) fails at once with an
// ErrNotSnapshot error that says what it is.
func ReadOptions(r io.Reader, name string, opts *Options) (*Snapshot, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, decodeErr(name, err, nil)
	}
	head = head[:n]
	if err := sniff(name, head); err != nil {
		return nil, err
	}
	if o.Pickle.MaxBytesObject == 0 {
		o.Pickle.MaxBytesObject = DefaultMaxBytesObject
	}
	size := inputSize(r, int64(len(head)))
	if isJSONObject(head) {
		return readJSON(name, head, r, &o)
	}
	if pickle.CheckStart(head) == nil {
		if head, err = checkPickleStart(name, head, r, &o.Pickle); err != nil {
			return nil, err
		}
	}
	// The pickle is decoded in one pass as it is read; the trace entries
	// of each device are converted as they arrive (Options.Pickle.Stream)
	// and the decoder forgets them, so memory follows the segments,
	// blocks, frames and strings, and the converted trace, not the file.
	cr := &countingReader{r: r, n: int64(len(head))}
	c := newConv(name, &o, size, cr)
	c.frames, c.skipTraceFrames, c.oomsOnly, c.pack = map[*any][]Frame{}, o.SkipTraceFrames, o.TraceOOMsOnly, o.PackTraces
	po := o.Pickle
	po.Stream = &pickle.Stream{Key: "device_traces", Items: c.streamItems, ForgetLists: o.SkipTraceFrames || o.TraceOOMsOnly}
	v, derr := pickle.DecodeReader(head, cr, size, &po)
	if derr != nil {
		var ce *Error
		if errors.As(derr, &ce) {
			return nil, derr // a conversion error from a streamed entry
		}
		return nil, decodeErr(name, derr, head)
	}
	s, err := c.snapshot(v)
	if err != nil {
		return nil, err
	}
	if err := s.validate(name); err != nil {
		return nil, c.locate(err, v)
	}
	return s, nil
}

// readJSON reads a memory_stats dump (head is its start).
func readJSON(name string, head []byte, r io.Reader, o *Options) (*Snapshot, error) {
	max := o.Pickle.MaxInputBytes
	if max <= 0 {
		max = MaxStatsBytes
	}
	head, err := checkJSONHead(name, head, r)
	if err != nil {
		return nil, err
	}
	data, err := readRest(head, r, max)
	if err != nil {
		return nil, decodeErr(name, err, nil)
	}
	if int64(len(data)) > max {
		return nil, &Error{Name: name, Offset: max, Err: ErrLimit,
			Msg: fmt.Sprintf("memory_stats JSON longer than %d bytes (MaxStatsBytes, or Options.Pickle.MaxInputBytes when set)", max)}
	}
	c := newConv(name, o, int64(len(data)), nil)
	s, err := c.readMemoryStats(data)
	if err != nil {
		return nil, err
	}
	if err := s.validate(name); err != nil {
		return nil, err
	}
	return s, nil
}

// MaxStatsBytes (64 MiB) caps a memory_stats JSON dump, which is read
// whole: torch.cuda.memory_stats() has a few hundred keys (a few KiB).
const MaxStatsBytes = 64 << 20

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// newConv makes the converter of an input of size bytes (-1: unknown, then
// the budget follows the bytes cr has read).
func newConv(name string, o *Options, size int64, cr *countingReader) *conv {
	c := &conv{name: name, max: o.MaxBuiltBytes, perByte: o.MaxBuiltBytes <= 0}
	if c.perByte {
		if size >= 0 || cr == nil {
			c.max = DefaultBuiltFactor*max(size, 0) + DefaultBuiltSlack
		} else {
			c.counted = cr
		}
	}
	return c
}

// DefaultMaxBytesObject (1 MiB) caps one bytes object in a snapshot
// pickle (pickle.Options.MaxBytesObject, when that is 0). PyTorch's
// snapshots hold none (names and stacks are str), and unknown keys rarely
// need one; the cap lets a declared length in the first bytes tell a
// pickle from random bytes that begin like one (checkPickleStart).
const DefaultMaxBytesObject = 1 << 20

// checkPickleStart reads the input up to pickle.PrefixLen bytes (head is
// what was read so far) and, when it goes on past them, has the decoder
// check them (pickle.CheckPrefix): random bytes after a PROTO, or a file
// cut and pasted together, fail there instead of after the input was read
// whole. It returns the bytes read.
func checkPickleStart(name string, head []byte, r io.Reader, po *pickle.Options) ([]byte, error) {
	buf := make([]byte, pickle.PrefixLen+1) // one more: whether the input goes on
	n := copy(buf, head)
	m, err := io.ReadFull(r, buf[n:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, decodeErr(name, err, nil)
	}
	buf = buf[:n+m]
	if len(buf) <= pickle.PrefixLen {
		return buf, nil // all of it: DecodeBytes checks it
	}
	if err := pickle.CheckPrefix(buf[:pickle.PrefixLen], inputSize(r, int64(len(buf))), po); err != nil {
		return nil, decodeErr(name, err, head)
	}
	return buf, nil
}

// inputSize is pickle.ReaderSize.
var inputSize = pickle.ReaderSize

// checkJSONHead reads the start of a memory_stats JSON document up to
// untrusted.SniffBytes (head holds its first bytes) and checks it is JSON text
// (untrusted.CheckJSONStart) before Read reads the rest, so that random bytes
// after "{" are refused there rather than after MaxStatsBytes.
// It returns the start read.
func checkJSONHead(name string, head []byte, r io.Reader) ([]byte, error) {
	if len(head) == sniffLen {
		more := make([]byte, untrusted.SniffBytes-len(head))
		m, err := io.ReadFull(r, more)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, decodeErr(name, err, nil)
		}
		head = append(head, more[:m]...)
	}
	var le *untrusted.InputError
	if errors.As(untrusted.CheckJSONStart(head, len(head) < untrusted.SniffBytes), &le) {
		kind := ErrDecode
		if errors.Is(le, untrusted.ErrBinary) {
			kind = ErrNotSnapshot
		} else if je := jsonSyntaxAt(name, head, le.Offset); je != nil {
			return nil, je // the same error, with the field, as when it is further in
		}
		return nil, &Error{Name: name, Offset: le.Offset, Msg: "memory_stats JSON: " + le.Msg, Err: kind}
	}
	return head, nil
}

// jsonSyntaxAt returns the error readMemoryStats gives a document whose
// first syntax error is the byte at offset off of head (found by
// untrusted.CheckJSONStart), with the field it is in: untrusted.CheckJSON
// walks head up to that byte. It returns nil if CheckJSON finds another
// problem first.
func jsonSyntaxAt(name string, head []byte, off int64) *Error {
	body := untrusted.TrimBOM(head)
	base := int64(len(head) - len(body))
	if off < base || off >= int64(len(head)) {
		return nil
	}
	var je *untrusted.JSONError
	if !errors.As(untrusted.CheckJSON(body[:off-base+1]), &je) || !je.Syntax || base+je.Offset != off {
		return nil
	}
	return jsonErr(name, je, base)
}

// readRest returns head followed by the rest of r, at most limit+1 bytes in
// all (one more than allowed, so that the caller sees the input is too
// long). When r knows its size (a regular *os.File, a bytes.Reader) the
// buffer is allocated once at that size instead of doubling.
func readRest(head []byte, r io.Reader, limit int64) ([]byte, error) {
	size := int64(512)
	if n := inputSize(r, int64(len(head))); n >= 0 {
		size = n + 1 // +1: EOF is seen without growing the buffer
	}
	size = max(min(size, limit+1), int64(len(head))+1)
	data := make([]byte, len(head), size)
	copy(data, head)
	lr := io.LimitReader(r, limit+1-int64(len(head)))
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := lr.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadBytes decodes a snapshot held in memory.
func ReadBytes(data []byte, name string) (*Snapshot, error) {
	return ReadOptions(bytes.NewReader(data), name, nil)
}

// conv turns decoded pickle values into a Snapshot. Paths are built only
// when an error is reported.
type conv struct {
	name    string
	spent   int64 // bytes built so far
	max     int64
	perByte bool // max is the default, DefaultBuiltFactor per input byte
	// counted, when set, is the input of unknown size: the budget is
	// DefaultBuiltFactor per byte read from it so far.
	counted *countingReader
	// frames shares the conversion of a frames list that the pickle shares.
	frames map[*any][]Frame
	legacy bool // a block carried a history list
	// skipTraceFrames: see Options.SkipTraceFrames.
	skipTraceFrames bool
	// streamed holds the trace entries converted as they streamed, by
	// device list; hasTimes: one of them carried time_us.
	streamed map[*pickle.Streamed]*streamedTrace
	hasTimes bool
	// oomsOnly: see Options.TraceOOMsOnly; pack: Options.PackTraces.
	oomsOnly, pack bool
	// actions interns the trace actions of streamed entries (action
	// indexes them).
	actions []string
	action  map[string]uint32
}

// intern returns the index of action in c.actions.
func (c *conv) intern(action string) uint32 {
	if i, ok := c.action[action]; ok {
		return i
	}
	if c.action == nil {
		c.action = map[string]uint32{}
	}
	c.action[action] = uint32(len(c.actions))
	c.actions = append(c.actions, action)
	return uint32(len(c.actions) - 1)
}

// streamedTrace is a device's trace converted as it streamed: its entries
// packed (Trace: 40 bytes an entry, half a TraceEntry, grown a chunk at a
// time so that it is never copied at a doubling), then kept packed
// (Options.PackTraces) or expanded once the trace ends; or with oomsOnly
// the oom entries, the count and the checks.
type streamedTrace struct {
	Trace
	total int // the entries streamed, kept or not
	check *traceCheck
	// offs are the byte offsets of the entries kept (not with oomsOnly,
	// whose checks run as the entries stream), each a varint of its
	// difference from the previous one's (lastOff): one or two bytes an
	// entry, read only to name the offset of an entry Validate refuses
	// (conv.locate).
	offs    []byte
	lastOff int64
}

func (c *conv) fieldErr(off int64, field, format string, args ...any) *Error {
	return &Error{Name: c.name, Offset: off, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrField}
}

// spend charges n values of each bytes to the budget before they are built.
func (c *conv) spend(n int, each int64, off int64, field string) error {
	c.spent += int64(n) * each
	max := c.max
	if c.counted != nil {
		max = DefaultBuiltFactor*c.counted.n + DefaultBuiltSlack
	}
	if c.spent > max {
		msg := fmt.Sprintf("the snapshot builds more than %d bytes of values (Options.MaxBuiltBytes)", max)
		if c.perByte {
			msg = fmt.Sprintf("the snapshot builds more than %d bytes of values (Options.MaxBuiltBytes: %d per input byte); "+
				"only a file that refers to the same values again and again through the pickle memo names that much", max, DefaultBuiltFactor)
		}
		return &Error{Name: c.name, Offset: off, Field: field, Err: ErrLimit, Msg: msg}
	}
	return nil
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func index(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }

// obj is a dict being read field by field. Its field path is path, or
// path[elem] when elem >= 0: built only for an error, so that reading the
// elements of a long list (a trace's entries) builds no string each.
type obj struct {
	c    *conv
	d    *pickle.Dict
	path string
	elem int
}

// where is o's field path.
func (o obj) where() string {
	if o.elem < 0 {
		return o.path
	}
	return index(o.path, o.elem)
}

func (c *conv) obj(v any, off int64, path string) (obj, error) {
	return c.objElem(v, off, path, -1)
}

// objElem is obj of element elem of the list at path.
func (c *conv) objElem(v any, off int64, path string, elem int) (obj, error) {
	o := obj{c: c, path: path, elem: elem}
	d, ok := v.(*pickle.Dict)
	if !ok {
		return obj{}, c.fieldErr(off, o.where(), "want dict, got %s", pickle.TypeName(v))
	}
	o.d = d
	return o, nil
}

// get returns the value of key, its offset, and whether it is present and
// not None (None counts as absent: writers use it for "unknown").
func (o obj) get(key string) (any, int64, bool) {
	i := o.d.Index(key)
	if i < 0 || o.d.Value(i) == nil {
		return nil, o.d.Offset(), false
	}
	return o.d.Value(i), o.d.ValueOffset(i), true
}

func (o obj) missing(key string) error {
	return o.c.fieldErr(o.d.Offset(), join(o.where(), key), "missing")
}

func (o obj) wrong(key string, off int64, want string, v any) error {
	return o.c.fieldErr(off, join(o.where(), key), "want %s, got %s", want, pickle.TypeName(v))
}

// int64 reads an integer field that must fit an int64.
func (o obj) int64(key string, required bool) (int64, bool, error) {
	v, off, ok := o.get(key)
	if !ok {
		if required {
			return 0, false, o.missing(key)
		}
		return 0, false, nil
	}
	switch x := v.(type) {
	case int64:
		return x, true, nil
	case uint64:
		return 0, false, o.c.fieldErr(off, join(o.where(), key), "%d does not fit a signed 64-bit integer", x)
	}
	return 0, false, o.wrong(key, off, "int", v)
}

// size reads a non-negative integer field.
func (o obj) size(key string, required bool) (int64, bool, error) {
	n, ok, err := o.int64(key, required)
	if err == nil && n < 0 {
		_, off, _ := o.get(key)
		err = o.c.fieldErr(off, join(o.where(), key), "negative (%d)", n)
	}
	return n, ok, err
}

// addr reads an address: a non-negative integer up to 2^64-1.
func (o obj) addr(key string, required bool) (uint64, bool, error) {
	v, off, ok := o.get(key)
	if !ok {
		if required {
			return 0, false, o.missing(key)
		}
		return 0, false, nil
	}
	switch x := v.(type) {
	case uint64:
		return x, true, nil
	case int64:
		if x < 0 {
			return 0, false, o.c.fieldErr(off, join(o.where(), key), "negative address %d", x)
		}
		return uint64(x), true, nil
	}
	return 0, false, o.wrong(key, off, "int", v)
}

func (o obj) str(key string, required bool) (string, bool, error) {
	v, off, ok := o.get(key)
	if !ok {
		if required {
			return "", false, o.missing(key)
		}
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, o.wrong(key, off, "str", v)
	}
	return s, true, nil
}

func (o obj) bool(key string) (bool, bool, error) {
	v, off, ok := o.get(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, o.wrong(key, off, "bool", v)
	}
	return b, true, nil
}

// list reads a list field; a tuple is accepted too.
func (o obj) list(key string, required bool) ([]any, int64, bool, error) {
	v, off, ok := o.get(key)
	if !ok {
		if required {
			return nil, off, false, o.missing(key)
		}
		return nil, off, false, nil
	}
	switch l := v.(type) {
	case []any:
		return l, off, true, nil
	case pickle.Tuple:
		return l, off, true, nil
	}
	return nil, off, false, o.wrong(key, off, "list", v)
}

func (o obj) int(key string, required bool) (int, error) {
	n, _, err := o.int64(key, required)
	if err == nil && int64(int(n)) != n {
		_, off, _ := o.get(key)
		err = o.c.fieldErr(off, join(o.where(), key), "%d out of range", n)
	}
	return int(n), err
}

func (c *conv) snapshot(v any) (*Snapshot, error) {
	s := &Snapshot{}
	if l, ok := v.([]any); ok {
		s.Format = FormatSegmentList
		segs, err := c.segments(l, 0, "segments")
		if err != nil {
			return nil, err
		}
		s.Segments = segs
		return s, nil
	}
	top, err := c.obj(v, 0, "")
	if err != nil {
		err.(*Error).Msg = fmt.Sprintf("top level: want dict or list of segments, got %s", pickle.TypeName(v))
		return nil, err
	}
	s.Format = FormatNoSettings
	for i := 0; i < top.d.Len(); i++ {
		key, val, off := top.d.Key(i), top.d.Value(i), top.d.ValueOffset(i)
		k, ok := key.(string)
		if !ok {
			// PyTorch writes str keys only; a dict of other keys would
			// read as a snapshot of nothing.
			return nil, c.fieldErr(off, "", "top-level key %s, not a str: a snapshot's keys are str (segments, device_traces, ...); the offset is its value's", keyDesc(key))
		}
		if val == nil && k != "" {
			continue
		}
		switch k {
		case "segments":
			l, _, _, err := top.list(k, true)
			if err != nil {
				return nil, err
			}
			if s.Segments, err = c.segments(l, off, k); err != nil {
				return nil, err
			}
		case "device_traces":
			if err := c.traces(s, top, off); err != nil {
				return nil, err
			}
		case "allocator_settings":
			if s.AllocatorSettings, err = c.settings(top, off); err != nil {
				return nil, err
			}
			s.Format = FormatModern
		case "external_annotations":
			if s.ExternalAnnotations, err = c.annotations(top); err != nil {
				return nil, err
			}
		default:
			if s.Extra == nil {
				s.Extra = map[string]any{}
			}
			s.Extra[k] = val
		}
	}
	if _, _, ok := top.get("segments"); !ok {
		return nil, top.missing("segments")
	}
	if c.legacy && s.Format != FormatModern {
		s.Format = FormatLegacy
	}
	return s, nil
}

// keyDesc names a dict key that is not a str: its type, and its value when
// that is a number, a bool or None, or the start of bytes.
func keyDesc(key any) string {
	switch k := key.(type) {
	case nil:
		return "None"
	case int64, uint64, float64, bool:
		return fmt.Sprintf("%v (%s)", k, pickle.TypeName(k))
	case []byte:
		if len(k) > 32 {
			return fmt.Sprintf("b%s... (bytes, %d long)", strconv.Quote(string(k[:32])), len(k))
		}
		return fmt.Sprintf("b%s (bytes)", strconv.Quote(string(k)))
	}
	return "of type " + pickle.TypeName(key)
}
