package pickle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math"
)

// Default limits; see Options.
const (
	// DefaultMaxDepth (1000) matches CPython's default recursion limit, so
	// anything Python itself could pickle and unpickle fits. Snapshots nest
	// 6 deep (segments → segment → blocks → block → frames → frame).
	DefaultMaxDepth = 1000
	// DefaultDecodedFactor (48) bounds the estimated bytes of the values
	// decoded to 48 times the input read so far plus DefaultDecodedSlack:
	// a bound on work per input byte, checked as the input streams in. The
	// four real snapshots decode 7 to 17 times their size (estimate and
	// live heap agree within 25%; the legacy file, dense with shared
	// frames, is the highest), so 48 leaves a margin of almost 3. Inputs
	// built to amplify go past 100 (a file of EMPTY_DICT bytes: 144) and
	// are stopped. Values a Stream consumed and the decoder forgot stay
	// charged: the bound is on what is built, not on what is kept.
	DefaultDecodedFactor = 48
	// DefaultDecodedSlack (1 MiB) lets tiny inputs decode without fuss.
	DefaultDecodedSlack = 1 << 20
	// DefaultMaxMemo (1<<24 entries, 512 MiB of memo) bounds the memo
	// entries held at once: stored and not forgotten (Options.Stream). A
	// snapshot holds one per distinct string, frame, stack, segment and
	// block, and, unless streamed, one or two per trace entry: the largest
	// shared snapshot stores about 11,500 per MiB, and a 1 GB file written
	// by Python at one per 64 bytes stores 16M, which only streaming its
	// trace keeps below the cap. Memo entries are charged to
	// MaxDecodedBytes as well.
	DefaultMaxMemo = 1 << 24
	// memoBytesPerEntry (2): Python's pickler memoizes an object once,
	// right after the opcodes that build it (at least one byte), with a
	// memo opcode of at least one byte, so nothing Python writes has more
	// than one memo entry per 2 input bytes read (the shared snapshots:
	// one per 8 to 22; generated LLM-serving histories one per 30). A
	// file of bare MEMOIZE opcodes (one entry per byte) is cut off at half
	// its length instead of building a memo of 32 bytes per input byte.
	memoBytesPerEntry = 2
	// memoSlack (1024 entries) lets tiny hand-written pickles memoize freely.
	memoSlack = 1024
)

// Options bounds decoding. The zero value (or a nil *Options) means the
// defaults; a field left at zero takes its default.
type Options struct {
	// MaxInputBytes caps the input; 0 means no cap. Decoding streams, so
	// the input's size does not bound the decoder's memory: the limits
	// below, on what the values build and hold, do.
	MaxInputBytes int64
	// MaxDepth caps the nesting of decoded containers and of open MARKs
	// (default DefaultMaxDepth).
	MaxDepth int
	// MaxDecodedBytes caps an estimate of the memory the decoded values use
	// (default DefaultDecodedFactor × the input read so far +
	// DefaultDecodedSlack, checked as decoding goes). The estimate counts
	// containers, entries, strings, boxed numbers, the memo and the
	// stack's high-water mark at 64-bit Go sizes.
	MaxDecodedBytes int64
	// MaxMemo caps the memo entries held at once (default DefaultMaxMemo);
	// besides, an input may store at most one memo entry per 2 bytes read
	// (plus 1024), as every pickle Python writes does.
	MaxMemo int
	// MaxBytesObject caps the length of one bytes object (BINBYTES and
	// its short and 8-byte forms); 0 means no cap but the input's. A
	// reader of a format without bytes objects sets it, so that a
	// declared length within the first bytes decides, instead of the
	// bytes it names, whether the input can be its format (package
	// snapshot: CheckPrefix).
	MaxBytesObject int64
	// Stream, when set, receives the items of chosen lists as they are
	// appended instead of the lists keeping them; see Stream.
	Stream *Stream
}

// Stream hands a caller the items of the lists that are the items of the
// list under Key in the top-level dict (a snapshot's device_traces: one
// list of trace entries per device), batch by batch as they are appended,
// so that the caller converts each and the decoder can forget it: a
// pickle's history is read in one pass, in memory that does not grow with
// its length. Such a list decodes as a *Streamed in place of its []any.
//
// A list is recognised from its place on the stack when it is first
// appended to: the top-level dict at the bottom with its key-value batch
// open, Key, then the outer list, then this list, with no other container
// open between them; a list built otherwise (LIST from a MARK, or shared
// through the memo) is decoded as usual.
type Stream struct {
	Key string
	// Items receives a batch; s.Len counts the items of earlier batches.
	// An error stops decoding and is returned as it is.
	Items func(s *Streamed, items []Item) error
	// ForgetLists: besides each item dict, forget the lists memoized
	// while it was built (a trace entry's frames list), which a later
	// reference then finds as a Forgotten value. Set it when the caller
	// does not read those lists again.
	ForgetLists bool
}

// Streamed stands for a list whose items went to Stream.Items: its
// position in the outer list and its length.
type Streamed struct {
	Index, Len int
}

// Item is a value handed to Stream.Items, with the offset of the opcode
// that pushed it.
type Item struct {
	V   any
	Off int64
}

// Forgotten is what a memo reference to a value Stream consumed yields
// (the decoder forgot it): its memo index.
type Forgotten struct {
	Index uint64
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = DefaultMaxDepth
	}
	if r.MaxMemo <= 0 {
		r.MaxMemo = DefaultMaxMemo
	}
	return r
}

// Decode decodes one pickle from r in one pass, reading it in pieces
// (never the whole input in memory). Errors from the pickle are *Error; an
// error reading r is returned wrapped. The first two bytes are checked
// (CheckStart), then the first PrefixLen (CheckPrefix), before the rest is
// read, so an endless stream that is no pickle (/dev/zero) fails at once,
// and one that only begins like a pickle within its first kilobytes. When
// r knows its size (a regular *os.File, a bytes.Reader), declared lengths
// are checked against it before anything is read.
func Decode(r io.Reader, opts *Options) (any, error) {
	return DecodeSize(r, -1, opts)
}

// DecodeSize is Decode of an input of size bytes (-1: unknown; then r's
// own size when it knows it).
func DecodeSize(r io.Reader, size int64, opts *Options) (any, error) {
	head := make([]byte, PrefixLen+1) // one more: whether the input goes on
	n, err := io.ReadFull(r, head[:2])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	if err := CheckStart(head[:n]); err != nil {
		return nil, err
	}
	if size < 0 {
		size = ReaderSize(r, int64(n))
	}
	if n == 2 {
		m, err := io.ReadFull(r, head[2:])
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		n += m
		if n == len(head) {
			if err := CheckPrefix(head[:PrefixLen], size, opts); err != nil {
				return nil, err
			}
		}
	}
	return DecodeReader(head[:n], r, size, opts)
}

// ReaderSize is the size of an input of which read bytes were read from
// r, when r knows it (a regular file, a bytes.Reader), else -1.
func ReaderSize(r io.Reader, read int64) int64 {
	switch x := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := x.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	case interface{ Len() int }:
		return read + int64(x.Len())
	}
	return -1
}

// DecodeReader decodes one pickle whose first bytes, head, were read
// already, and whose rest r holds; size is the whole input's length, or -1
// when unknown. It does not check the prefix (Decode does); a caller that
// sniffed the input itself calls CheckPrefix, then this.
func DecodeReader(head []byte, r io.Reader, size int64, opts *Options) (any, error) {
	o := opts.withDefaults()
	if size >= 0 && o.MaxInputBytes > 0 && size > o.MaxInputBytes {
		return nil, &Error{Offset: o.MaxInputBytes, Err: ErrLimit,
			Msg: fmt.Sprintf("input larger than %d bytes", o.MaxInputBytes)}
	}
	buf := make([]byte, len(head), max(len(head), readChunk))
	copy(buf, head)
	d := decoder{data: buf, r: r, opts: o, limit: size}
	d.memo.chunks = [][]memoEntry{make([]memoEntry, 0, 256)}
	return d.run()
}

// readChunk (256 KiB) is how much the decoder reads at a time.
const readChunk = 256 << 10

// CheckStart looks at the first bytes of an input (two are enough; fewer
// if the input is shorter) and returns an *Error when no pickle this
// package decodes can begin with them: an opcode that needs a value on the
// stack or is no opcode at all, or a PROTO of an unsupported protocol. It
// lets a reader refuse a file that is no pickle before reading all of it.
// An empty head passes (DecodeBytes reports the truncation).
func CheckStart(head []byte) error {
	if len(head) == 0 {
		return nil
	}
	op := head[0]
	if op == opProto {
		if len(head) > 1 && (head[1] < minProtocol || head[1] > maxProtocol) {
			return protocolErr(0, head[1])
		}
		return nil
	}
	if canStart[op] {
		return nil
	}
	if forbidden[op] {
		return &Error{Offset: 0, Op: op, OpName: OpName(op), Err: ErrForbidden,
			Msg: "refused: it would look up or call a Python object; snapshots hold only plain data"}
	}
	return &Error{Offset: 0, Err: ErrOpcode,
		Msg: fmt.Sprintf("not a pickle: first byte %#02x is no opcode a pickle this package decodes can start with", op)}
}

// The protocols this package decodes: 2 (Python 2.3 on, what PyTorch's C++
// pickler writes) to 5 (Python 3.8 on). Python 3.8 to 3.13 write 4 by
// default, 3.14 writes 5.
const (
	minProtocol = 2
	maxProtocol = 5
)

// protocolErr refuses the PROTO opcode at off, whose argument (the next
// byte) is protocol p.
func protocolErr(off int64, p byte) *Error {
	return &Error{Offset: off, Op: opProto, OpName: OpName(opProto), Err: ErrMalformed,
		Msg: fmt.Sprintf("pickle protocol %d (the byte at offset %d), which this decoder does not read: it reads protocols %d to %d "+
			"(Python 3.8 to 3.13 write 4 by default, 3.14 writes 5)", p, off+1, minProtocol, maxProtocol)}
}

// PrefixLen (16 KiB) is how much of an input Decode, and package snapshot,
// check with CheckPrefix before reading the rest. Random bytes after a
// PROTO give themselves away far sooner: of 100,000 such streams, half
// failed at byte 2, 99.9% within 199 bytes; the longest went on for
// 149 KiB, the bytes object of a plausible BINBYTES length (which
// Options.MaxBytesObject bounds).
// Checking the first 16 KiB of the largest shared snapshot took 0.34 ms,
// 0.6% of decoding all of it (56 ms, both on a loaded 2-core machine).
const PrefixLen = 16 << 10

// CheckPrefix decodes prefix, the first bytes of an input that does not
// end there, as far as they go, and returns the first error that no bytes
// following them could undo: an opcode that is none or is refused, a
// protocol, a memo reference or a stack that does not add up, invalid
// UTF-8 in the part of a string it holds, a declared length longer than
// the input (total bytes, or opts.MaxInputBytes when total is negative,
// unknown) or than opts.MaxBytesObject, a limit. It returns nil when
// prefix runs out first. A reader calls it before reading the rest, so an
// input that begins like a pickle and goes on as garbage (PROTO, then
// random bytes) fails within its first kilobytes instead of after
// MaxInputBytes of reading. Limits that depend on the input's size take
// total (or MaxInputBytes) as that size. DecodeBytes refuses the whole
// input too, and when total is known, with the same error.
func CheckPrefix(prefix []byte, total int64, opts *Options) error {
	o := opts.withDefaults()
	sized := total >= 0 && (o.MaxInputBytes <= 0 || total <= o.MaxInputBytes)
	if !sized {
		total = o.MaxInputBytes
		if total <= 0 {
			total = -1 // unknown and unbounded
		}
	}
	if total >= 0 {
		total = max(total, int64(len(prefix)))
	}
	d := decoder{data: prefix, opts: o, prefix: true, sized: sized, limit: total}
	d.memo.chunks = [][]memoEntry{make([]memoEntry, 0, min(len(prefix)/16+16, memoChunk))}
	_, err := d.run()
	return err
}

// DecodeBytes decodes one pickle that fills data. Nothing may follow STOP.
// The result does not refer to data.
func DecodeBytes(data []byte, opts *Options) (any, error) {
	o := opts.withDefaults()
	if o.MaxInputBytes > 0 && int64(len(data)) > o.MaxInputBytes {
		return nil, &Error{Offset: o.MaxInputBytes, Err: ErrLimit,
			Msg: fmt.Sprintf("input larger than %d bytes", o.MaxInputBytes)}
	}
	d := decoder{data: data, opts: o, limit: int64(len(data))}
	// Snapshots memoize nearly every dict and string: one memo entry per 8
	// to 22 input bytes in the real files. Sizing the first memo chunk at
	// one entry per 16 input bytes saves its doubling appends.
	d.memo.chunks = [][]memoEntry{make([]memoEntry, 0, min(len(data)/16+16, memoChunk))}
	return d.run()
}

type decoder struct {
	// data is the input's bytes from offset inBase on, of which pos is the
	// next to read; r, when not nil, holds the rest (fill reads it).
	data   []byte
	r      io.Reader
	inBase int64
	eof    bool // r returned io.EOF
	// prefix: data is the beginning of a longer input (CheckPrefix), of
	// limit bytes in all (sized), or of at most limit bytes: running out of
	// data ends the check, not the pickle. Otherwise limit is the input's
	// length, or -1 when it is not known (a stream).
	prefix bool
	sized  bool
	limit  int64
	pos    int // next byte to read, in data
	// frameOp and frameEnd: the last FRAME's offset and the end it
	// declares, checked at STOP when the input's length was not known.
	frameOp, frameEnd int64
	op                int64 // offset of the opcode being run
	opb               byte  // the opcode being run
	opts              Options
	stack             []item
	marks             []int // stack lengths at each open MARK
	base              int   // len of stack at the innermost MARK (0 if none)
	memo              memoTable
	// sparse holds memo entries whose index is past the end of memo.
	sparse map[uint32]item
	nmemo  int
	// forgotten counts memo entries forgotten (Stream); nmemo-forgotten
	// are held.
	forgotten int
	spent     int64 // estimated decoded bytes built so far
	// maxStack is the largest capacity the stack has had; see grew.
	maxStack int
	// Slabs: dicts, lists and the first batch of a dict's entries are
	// carved from arrays allocated slabSize at a time, one allocation for
	// many small values instead of one each (a snapshot is mostly 3-key
	// frame dicts; this cuts allocations per decode fivefold). A carved
	// entries slice has its capacity capped, so a later SETITEMS on the
	// same dict reallocates instead of writing into a neighbour's entries.
	dicts []Dict
	lists []list
	ents  []entry
	// streamed counts the lists routed to opts.Stream.
	streamed int
}

// slabSize is the number of values allocated at once for each slab, and
// slabEntries the entries: 32 KiB or so each, small next to any snapshot
// and amortising an allocation over a few hundred values.
const (
	slabSize    = 256
	slabEntries = 1024
)

func (d *decoder) newDict() *Dict {
	if len(d.dicts) == cap(d.dicts) {
		d.dicts = make([]Dict, 0, slabSize)
	}
	d.dicts = append(d.dicts, Dict{off: d.op, depth: 1})
	return &d.dicts[len(d.dicts)-1]
}

func (d *decoder) newList() *list {
	if len(d.lists) == cap(d.lists) {
		d.lists = make([]list, 0, slabSize)
	}
	d.lists = append(d.lists, list{depth: 1})
	return &d.lists[len(d.lists)-1]
}

// carveEntries returns an empty entries slice with room for exactly n.
func (d *decoder) carveEntries(n int) []entry {
	if n > slabEntries/8 {
		return make([]entry, 0, n)
	}
	if cap(d.ents)-len(d.ents) < n {
		d.ents = make([]entry, 0, slabEntries)
	}
	l := len(d.ents)
	d.ents = d.ents[:l+n]
	return d.ents[l : l : l+n]
}

// Approximate sizes charged against MaxDecodedBytes (64-bit Go).
const (
	costValue  = 16 // an interface slot in a container
	costScalar = 8  // a boxed int64 or float64
	costStack  = 32 // an item on the stack
	costDict   = 112
	costList   = 48
	costEntry  = 40 // key, value and offset of a Dict entry
	costMemo   = 32 // a memoEntry
	// costSparse is a memo entry stored in the map of out-of-order
	// indexes: a 4-byte key and an item, with the map's control bytes,
	// load factor and growth.
	costSparse = 96
)

func (d *decoder) fail(kind error, format string, args ...any) *Error {
	return &Error{Offset: d.op, Op: d.opb, OpName: OpName(d.opb),
		Msg: fmt.Sprintf(format, args...), Err: kind}
}

func (d *decoder) charge(n int64) error {
	d.spent += n
	if m := d.opts.MaxDecodedBytes; m > 0 {
		if d.spent > m {
			return d.fail(ErrLimit, "decoded values exceed %d bytes (Options.MaxDecodedBytes)", m)
		}
		return nil
	}
	if allowed := DefaultDecodedFactor*max(d.read(), d.limit) + DefaultDecodedSlack; d.spent > allowed {
		return d.fail(ErrLimit, "decoded values exceed %d bytes (Options.MaxDecodedBytes: %d per input byte)", allowed, DefaultDecodedFactor)
	}
	return nil
}

// read is the number of input bytes read so far (up to the opcode being
// decoded).
func (d *decoder) read() int64 { return d.inBase + int64(d.pos) }

// fill reads from r until at least n bytes follow pos or the input ends,
// and reports whether they do. The buffer grows only as bytes arrive, so
// a declared length cannot make it allocate more than the input holds.
func (d *decoder) fill(n int) (bool, error) {
	if len(d.data)-d.pos >= n {
		return true, nil
	}
	if d.r == nil || d.eof {
		return false, nil
	}
	if d.pos > 0 { // keep only the unread bytes
		k := copy(d.data, d.data[d.pos:])
		d.inBase += int64(d.pos)
		d.data, d.pos = d.data[:k], 0
	}
	for len(d.data) < n {
		if len(d.data) == cap(d.data) {
			nb := make([]byte, len(d.data), max(readChunk, min(2*cap(d.data), n+readChunk)))
			copy(nb, d.data)
			d.data = nb
		}
		m, err := d.r.Read(d.data[len(d.data):cap(d.data)])
		d.data = d.data[:len(d.data)+m]
		if d.opts.MaxInputBytes > 0 && d.inBase+int64(len(d.data)) > d.opts.MaxInputBytes {
			return false, &Error{Offset: d.opts.MaxInputBytes, Err: ErrLimit,
				Msg: fmt.Sprintf("input larger than %d bytes", d.opts.MaxInputBytes)}
		}
		if err == io.EOF {
			d.eof = true
			return len(d.data) >= n, nil
		}
		if err != nil {
			return false, fmt.Errorf("pickle: reading input at offset %d: %w", d.inBase+int64(len(d.data)), err)
		}
	}
	return true, nil
}

// end is the input's length when it is known (-1 otherwise).
func (d *decoder) end() int64 {
	if d.prefix {
		return d.limit
	}
	if d.r == nil || d.eof {
		return d.inBase + int64(len(d.data))
	}
	return d.limit
}

// errPrefixEnd: the data of a CheckPrefix ran out; nothing was wrong.
var errPrefixEnd = &Error{Offset: -1, Err: ErrTruncated, Msg: "end of the prefix"}

// need checks that n more bytes follow before anything is read.
func (d *decoder) need(n int) error {
	ok, err := d.fill(n)
	if err != nil {
		return err
	}
	if !ok {
		if d.prefix {
			return errPrefixEnd
		}
		have := len(d.data) - d.pos
		return &Error{Offset: d.inBase + int64(len(d.data)), Op: d.opb, OpName: OpName(d.opb), Err: ErrTruncated,
			Msg: fmt.Sprintf("input ends inside the opcode at offset %d (needs %d more bytes, has %d)", d.op, n, have)}
	}
	return nil
}

// take returns the next n bytes (n already checked to be ≥ 0); they stay
// valid until the next read.
func (d *decoder) take(n int) ([]byte, error) {
	if err := d.need(n); err != nil {
		return nil, err
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// length reads a declared length of w bytes (1, 4 or 8, little-endian; a
// 4-byte one is signed when signed) and checks it against the remaining input
// BEFORE anything is allocated.
func (d *decoder) length(w int, signed bool) (int, error) {
	b, err := d.take(w)
	if err != nil {
		return 0, err
	}
	var n uint64
	switch w {
	case 1:
		n = uint64(b[0])
	case 4:
		u := binary.LittleEndian.Uint32(b)
		if signed && int32(u) < 0 {
			return 0, d.fail(ErrLength, "negative declared length %d", int32(u))
		}
		n = uint64(u)
	default:
		n = binary.LittleEndian.Uint64(b)
	}
	if end := d.end(); end >= 0 {
		if rem := uint64(end - d.read()); n > rem {
			return 0, d.fail(ErrLength, "declared length exceeds remaining input (%d > %d bytes; input ends at offset %d)", n, rem, end)
		}
	} else if n > math.MaxInt32 {
		// A stream of unknown length: the bytes are read before they are
		// kept, so only the int conversion needs a bound.
		return 0, d.fail(ErrLength, "declared length %d, more than a stream of unknown length may declare (%d)", n, math.MaxInt32)
	}
	return int(n), nil
}

// long decodes a little-endian two's-complement integer of any width.
func (d *decoder) long(b []byte) (any, error) {
	n := len(b)
	if n == 0 {
		return int64(0), nil
	}
	if n > 8 {
		ext := byte(0)
		if b[n-1]&0x80 != 0 {
			ext = 0xff
		}
		for _, c := range b[8:] {
			if c != ext {
				return nil, d.fail(ErrUnsupported, "integer too large (%d bytes; at most 64 bits are supported)", n)
			}
		}
		u := binary.LittleEndian.Uint64(b[:8])
		if ext == 0 {
			if u > math.MaxInt64 {
				return u, nil
			}
			return int64(u), nil
		}
		if int64(u) >= 0 {
			return nil, d.fail(ErrUnsupported, "integer too large (%d bytes; at most 64 bits are supported)", n)
		}
		return int64(u), nil
	}
	var u uint64
	for i := n - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if b[n-1]&0x80 != 0 && n < 8 {
		u |= ^uint64(0) << (8 * uint(n)) // sign-extend
	}
	return int64(u), nil
}

// longStart checks b, the first bytes of an n-byte integer that runs past
// a CheckPrefix's data, as long does the whole: past 64 bits, only sign
// extension (all 0x00 or all 0xff).
func (d *decoder) longStart(n int, b []byte) error {
	if len(b) > 8 && (b[8] != 0 && b[8] != 0xff || bytes.Count(b[8:], b[8:9]) != len(b)-8) {
		return d.fail(ErrUnsupported, "integer too large (%d bytes; at most 64 bits are supported)", n)
	}
	return errPrefixEnd
}

func (d *decoder) str(n int) error {
	if d.prefix && len(d.data)-d.pos < n {
		if !validStrStart(d.data[d.pos:]) {
			return d.fail(ErrMalformed, "string is not valid UTF-8")
		}
		return errPrefixEnd
	}
	b, err := d.take(n)
	if err != nil {
		return err
	}
	s, ok := decodeStr(b)
	if !ok {
		return d.fail(ErrMalformed, "string is not valid UTF-8")
	}
	return d.pushCharged(s, costValue+int64(len(s)))
}

func (d *decoder) bytes(n int) error {
	if m := d.opts.MaxBytesObject; m > 0 && int64(n) > m {
		return d.fail(ErrLimit, "a bytes object of %d bytes, more than %d (Options.MaxBytesObject)", n, m)
	}
	b, err := d.take(n)
	if err != nil {
		return err
	}
	return d.pushCharged(append([]byte{}, b...), costValue+24+int64(n))
}

func (d *decoder) run() (v any, err error) {
	defer func() {
		// Last resort: every path above returns errors; FuzzDecode checks
		// that this never fires.
		if r := recover(); r != nil {
			v, err = nil, &Error{Offset: d.op, Op: d.opb, OpName: OpName(d.opb), Err: ErrMalformed,
				Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	for {
		if d.pos >= len(d.data) {
			if _, err := d.fill(1); err != nil {
				return nil, err
			}
		}
		if d.pos >= len(d.data) && d.prefix {
			return nil, nil
		}
		if d.pos >= len(d.data) {
			d.op = d.read()
			return nil, &Error{Offset: d.op, Err: ErrTruncated, Msg: "input ends before STOP"}
		}
		d.op, d.opb = d.read(), d.data[d.pos]
		d.pos++
		done, err := d.step()
		if err == nil {
			err = d.grew()
		}
		if err == errPrefixEnd {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if done {
			it, err := d.pop(1)
			if err != nil {
				return nil, err
			}
			if d.prefix && d.sized && d.limit > d.read() {
				return nil, d.fail(ErrMalformed, "%d bytes of data after STOP", d.limit-d.read())
			}
			if d.prefix && !d.sized {
				return nil, d.fail(ErrMalformed, "data after STOP (at least %d bytes)", max(1, len(d.data)-d.pos))
			}
			if _, err := d.fill(1); err != nil {
				return nil, err
			}
			if end := d.read(); d.pos == len(d.data) && d.frameEnd > end {
				// A stream of unknown length: the frame's declared length
				// is checked at its end.
				d.op, d.opb = d.frameOp, opFrame
				return nil, d.fail(ErrLength, "declared length exceeds remaining input (%d > %d bytes; input ends at offset %d)",
					d.frameEnd-d.frameOp-9, end-d.frameOp-9, end)
			}
			if d.pos != len(d.data) {
				if end := d.end(); end >= 0 {
					return nil, d.fail(ErrMalformed, "%d bytes of data after STOP", end-d.read())
				}
				return nil, d.fail(ErrMalformed, "data after STOP (at least %d bytes)", len(d.data)-d.pos)
			}
			return use(it[0].v), nil
		}
	}
}

// step runs one opcode; done is true at STOP.
func (d *decoder) step() (done bool, err error) {
	switch op := d.opb; op {
	case opProto:
		b, err := d.take(1)
		if err != nil {
			return false, err
		}
		if b[0] < minProtocol || b[0] > maxProtocol {
			return false, protocolErr(d.op, b[0])
		}
	case opFrame:
		n, err := d.length(8, false)
		if err != nil {
			return false, err
		}
		d.frameOp, d.frameEnd = d.op, d.read()+int64(n)
	case opStop:
		return true, nil
	case opMark:
		if len(d.marks) >= d.opts.MaxDepth {
			return false, d.fail(ErrLimit, "more than %d open MARKs (Options.MaxDepth)", d.opts.MaxDepth)
		}
		d.marks = append(d.marks, len(d.stack))
		d.base = len(d.stack)
	case opNone:
		d.push(nil, 0)
	case opNewTrue:
		d.push(true, 0)
	case opNewFalse:
		d.push(false, 0)
	case opBinInt:
		b, err := d.take(4)
		if err != nil {
			return false, err
		}
		return false, d.pushCharged(int64(int32(binary.LittleEndian.Uint32(b))), costScalar)
	case opBinInt1:
		b, err := d.take(1)
		if err != nil {
			return false, err
		}
		return false, d.pushCharged(int64(b[0]), 0) // Go does not allocate for 0..255
	case opBinInt2:
		b, err := d.take(2)
		if err != nil {
			return false, err
		}
		return false, d.pushCharged(int64(binary.LittleEndian.Uint16(b)), costScalar)
	case opLong1, opLong4:
		w := 1
		if op == opLong4 {
			w = 4
		}
		n, err := d.length(w, true)
		if err != nil {
			return false, err
		}
		if d.prefix && n > len(d.data)-d.pos {
			return false, d.longStart(n, d.data[d.pos:])
		}
		b, err := d.take(n)
		if err != nil {
			return false, err
		}
		v, err := d.long(b)
		if err != nil {
			return false, err
		}
		return false, d.pushCharged(v, costScalar)
	case opBinFloat:
		b, err := d.take(8)
		if err != nil {
			return false, err
		}
		return false, d.pushCharged(math.Float64frombits(binary.BigEndian.Uint64(b)), costScalar)
	case opShortBinUni, opBinUnicode, opBinUnicode8:
		w := width(op, opShortBinUni, opBinUnicode)
		n, err := d.length(w, false)
		if err != nil {
			return false, err
		}
		return false, d.str(n)
	case opShortBinString, opBinString:
		w := 1
		if op == opBinString {
			w = 4
		}
		n, err := d.length(w, true)
		if err != nil {
			return false, err
		}
		return false, d.str(n)
	case opShortBinBytes, opBinBytes, opBinBytes8:
		w := width(op, opShortBinBytes, opBinBytes)
		n, err := d.length(w, false)
		if err != nil {
			return false, err
		}
		return false, d.bytes(n)
	case opEmptyDict:
		if err := d.charge(costDict); err != nil {
			return false, err
		}
		d.push(d.newDict(), 0)
	case opEmptyList:
		if err := d.charge(costList); err != nil {
			return false, err
		}
		d.push(d.newList(), 0)
	case opEmptyTuple:
		return false, d.tuple(nil)
	case opTuple1, opTuple2, opTuple3:
		items, err := d.pop(int(op-opTuple1) + 1)
		if err != nil {
			return false, err
		}
		return false, d.tuple(items)
	case opTuple:
		items, err := d.popMark()
		if err != nil {
			return false, err
		}
		return false, d.tuple(items)
	case opList:
		items, err := d.popMark()
		if err != nil {
			return false, err
		}
		if err := d.charge(costList); err != nil {
			return false, err
		}
		l := &list{depth: 1}
		if err := d.appendItems(item{v: l}, items); err != nil {
			return false, err
		}
		d.push(l, 0)
	case opDict:
		items, err := d.popMark()
		if err != nil {
			return false, err
		}
		if err := d.charge(costDict); err != nil {
			return false, err
		}
		m := &Dict{off: d.op, depth: 1}
		if err := d.setItems(m, items); err != nil {
			return false, err
		}
		d.push(m, 0)
	case opAppend:
		items, err := d.pop(1)
		if err != nil {
			return false, err
		}
		if len(d.stack) == d.base {
			return false, d.fail(ErrMalformed, "stack underflow (no list to append to)")
		}
		return false, d.appendItems(d.stack[len(d.stack)-1], items)
	case opAppends:
		items, err := d.popMark()
		if err != nil {
			return false, err
		}
		if len(d.stack) == d.base {
			return false, d.fail(ErrMalformed, "stack underflow (no list to append to)")
		}
		return false, d.appendItems(d.stack[len(d.stack)-1], items)
	case opSetItem, opSetItems:
		var items []item
		if op == opSetItem {
			items, err = d.pop(2)
		} else {
			items, err = d.popMark()
		}
		if err != nil {
			return false, err
		}
		if len(d.stack) == d.base {
			return false, d.fail(ErrMalformed, "stack underflow (no dict to set items in)")
		}
		m, ok := d.stack[len(d.stack)-1].v.(*Dict)
		if !ok {
			return false, d.fail(ErrMalformed, "setting items in a %s, not a dict", typeName(d.stack[len(d.stack)-1].v))
		}
		return false, d.setItems(m, items)
	case opMemoize:
		return false, d.memoPut(uint64(d.nmemo))
	case opBinPut:
		b, err := d.take(1)
		if err != nil {
			return false, err
		}
		return false, d.memoPut(uint64(b[0]))
	case opLongBinPut:
		b, err := d.take(4)
		if err != nil {
			return false, err
		}
		return false, d.memoPut(uint64(binary.LittleEndian.Uint32(b)))
	case opBinGet:
		b, err := d.take(1)
		if err != nil {
			return false, err
		}
		return false, d.memoGet(uint64(b[0]))
	case opLongBinGet:
		b, err := d.take(4)
		if err != nil {
			return false, err
		}
		return false, d.memoGet(uint64(binary.LittleEndian.Uint32(b)))
	default:
		if forbidden[op] {
			return false, d.fail(ErrForbidden, "refused: it would look up or call a Python object; snapshots hold only plain data")
		}
		return false, d.fail(ErrOpcode, "opcode not supported")
	}
	return false, nil
}

// typeName names a decoded value's type the way Python would.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64, uint64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case *list, []any:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case *Streamed:
		return "list (streamed)"
	case Forgotten:
		return "value already streamed and forgotten"
	}
	return fmt.Sprintf("%T", v)
}

// TypeName names a decoded value's type as Python would ("dict", "int").
func TypeName(v any) string { return typeName(v) }

// width is the size of an opcode's length field: 1 for the short form, 4 for
// the long one, 8 for the 8-byte form.
func width(op, short, long byte) int {
	switch op {
	case short:
		return 1
	case long:
		return 4
	}
	return 8
}
