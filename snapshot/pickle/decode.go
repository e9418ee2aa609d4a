package pickle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Default limits; see Options.
const (
	// DefaultMaxInputBytes (1 GiB) is far above the snapshots seen so far
	// (the shared ones are at most 1 MiB, the largest public ones a few MiB)
	// and leaves room for long traces with stacks; the input is read into
	// memory whole.
	DefaultMaxInputBytes = 1 << 30
	// DefaultMaxDepth (1000) matches CPython's default recursion limit, so
	// anything Python itself could pickle and unpickle fits. Snapshots nest
	// 6 deep (segments → segment → blocks → block → frames → frame).
	DefaultMaxDepth = 1000
	// DefaultDecodedFactor (48) bounds the estimated memory of the decoded
	// values to 48 times the input plus DefaultDecodedSlack. The four real
	// snapshots measure 7 to 17 times their size (estimate and live heap
	// agree within 25%; the legacy file, dense with shared frames, is the
	// highest), so 48 leaves a margin of almost 3. Inputs built to amplify
	// go past 100 (a file of EMPTY_DICT bytes: 144) and are stopped.
	DefaultDecodedFactor = 48
	// DefaultDecodedSlack (1 MiB) lets tiny inputs decode without fuss.
	DefaultDecodedSlack = 1 << 20
	// DefaultMaxMemo (1<<24 entries, 512 MiB of memo): the largest shared
	// snapshot stores about 11,500 memo entries per MiB, so a 1 GiB file
	// like it needs about 12M. Below that the default is one entry per
	// memoBytesPerEntry input bytes. Memo entries are charged to
	// MaxDecodedBytes as well.
	DefaultMaxMemo = 1 << 24
	// memoBytesPerEntry (2): Python's pickler memoizes an object once,
	// right after the opcodes that build it (at least one byte), with a
	// memo opcode of at least one byte, so nothing Python writes has more
	// than one memo entry per 2 input bytes (the shared snapshots: one per
	// 8 to 22). A file of bare MEMOIZE opcodes (one entry per byte) is cut
	// off at half its length instead of building a memo of 32 bytes per
	// input byte.
	memoBytesPerEntry = 2
	// memoSlack (1024 entries) lets tiny hand-written pickles memoize freely.
	memoSlack = 1024
)

// Options bounds decoding. The zero value (or a nil *Options) means the
// defaults; a field left at zero takes its default.
type Options struct {
	// MaxInputBytes caps the input (default DefaultMaxInputBytes).
	MaxInputBytes int64
	// MaxDepth caps the nesting of decoded containers and of open MARKs
	// (default DefaultMaxDepth).
	MaxDepth int
	// MaxDecodedBytes caps an estimate of the memory the decoded values use
	// (default DefaultDecodedFactor × input size + DefaultDecodedSlack).
	// The estimate counts containers, entries, strings, boxed numbers, the
	// memo and the stack's high-water mark at 64-bit Go sizes.
	MaxDecodedBytes int64
	// MaxMemo caps the number of memo entries (default one per 2 input
	// bytes plus 1024, at most DefaultMaxMemo).
	MaxMemo int
	// MaxBytesObject caps the length of one bytes object (BINBYTES and
	// its short and 8-byte forms); 0 means no cap but the input's. A
	// reader of a format without bytes objects sets it, so that a
	// declared length within the first bytes decides, instead of the
	// bytes it names, whether the input can be its format (package
	// snapshot: CheckPrefix).
	MaxBytesObject int64
}

func (o *Options) withDefaults(n int) Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxInputBytes <= 0 {
		r.MaxInputBytes = DefaultMaxInputBytes
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = DefaultMaxDepth
	}
	if r.MaxDecodedBytes <= 0 {
		r.MaxDecodedBytes = DefaultDecodedFactor*int64(n) + DefaultDecodedSlack
	}
	if r.MaxMemo <= 0 {
		r.MaxMemo = min(DefaultMaxMemo, n/memoBytesPerEntry+memoSlack)
	}
	return r
}

// Decode reads all of r (at most opts.MaxInputBytes) and decodes one pickle.
// Errors from the pickle are *Error; an error reading r is returned wrapped.
// The first two bytes are checked (CheckStart), then the first PrefixLen
// (CheckPrefix), before the rest is read, so an endless stream that is no
// pickle (/dev/zero) fails at once, and one that only begins like a pickle
// within its first kilobytes.
func Decode(r io.Reader, opts *Options) (any, error) {
	o := opts.withDefaults(0)
	head := make([]byte, PrefixLen+1) // one more: whether the input goes on
	n, err := io.ReadFull(r, head[:2])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	if err := CheckStart(head[:n]); err != nil {
		return nil, err
	}
	if n == 2 {
		m, err := io.ReadFull(r, head[2:])
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		n += m
		if n == len(head) {
			if err := CheckPrefix(head[:PrefixLen], -1, opts); err != nil {
				return nil, err
			}
		}
	}
	data, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(head[:n]), r), o.MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	return DecodeBytes(data, opts)
}

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
	o := opts.withDefaults(0)
	sized := total >= 0 && total <= o.MaxInputBytes
	if !sized {
		total = o.MaxInputBytes
	}
	total = max(total, int64(len(prefix)))
	d := decoder{data: prefix, opts: opts.withDefaults(int(min(total, math.MaxInt))), prefix: true, sized: sized, limit: total}
	d.memo.chunks = [][]memoEntry{make([]memoEntry, 0, min(len(prefix)/16+16, memoChunk))}
	_, err := d.run()
	return err
}

// DecodeBytes decodes one pickle that fills data. Nothing may follow STOP.
// The result does not refer to data.
func DecodeBytes(data []byte, opts *Options) (any, error) {
	o := opts.withDefaults(len(data))
	if int64(len(data)) > o.MaxInputBytes {
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
	data []byte
	// prefix: data is the beginning of a longer input (CheckPrefix), of
	// limit bytes in all (sized), or of at most limit bytes: running out of
	// data ends the check, not the pickle. Otherwise limit is len(data).
	prefix bool
	sized  bool
	limit  int64
	pos    int  // next byte to read
	op     int  // offset of the opcode being run
	opb    byte // the opcode being run
	opts   Options
	stack  []item
	marks  []int // stack lengths at each open MARK
	base   int   // len of stack at the innermost MARK (0 if none)
	memo   memoTable
	// sparse holds memo entries whose index is past the end of memo.
	sparse map[uint32]item
	nmemo  int
	budget int64 // estimated decoded bytes still allowed
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
	d.dicts = append(d.dicts, Dict{off: int64(d.op), depth: 1})
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
	return &Error{Offset: int64(d.op), Op: d.opb, OpName: OpName(d.opb),
		Msg: fmt.Sprintf(format, args...), Err: kind}
}

func (d *decoder) charge(n int64) error {
	d.budget -= n
	if d.budget < 0 {
		return d.fail(ErrLimit, "decoded values exceed %d bytes (Options.MaxDecodedBytes)", d.opts.MaxDecodedBytes)
	}
	return nil
}

// errPrefixEnd: the data of a CheckPrefix ran out; nothing was wrong.
var errPrefixEnd = &Error{Offset: -1, Err: ErrTruncated, Msg: "end of the prefix"}

// need checks that n more bytes follow before anything is read.
func (d *decoder) need(n int) error {
	if len(d.data)-d.pos < n {
		if d.prefix {
			return errPrefixEnd
		}
		return &Error{Offset: int64(len(d.data)), Op: d.opb, OpName: OpName(d.opb), Err: ErrTruncated,
			Msg: fmt.Sprintf("input ends inside the opcode at offset %d (needs %d more bytes, has %d)", d.op, n, len(d.data)-d.pos)}
	}
	return nil
}

// take returns the next n bytes (n already checked to be ≥ 0).
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
	if rem := uint64(d.limit - int64(d.pos)); n > rem {
		return 0, d.fail(ErrLength, "declared length exceeds remaining input (%d > %d bytes; input ends at offset %d)", n, rem, d.limit)
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
			v, err = nil, &Error{Offset: int64(d.op), Op: d.opb, OpName: OpName(d.opb), Err: ErrMalformed,
				Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	d.budget = d.opts.MaxDecodedBytes
	for {
		if d.pos >= len(d.data) && d.prefix {
			return nil, nil
		}
		if d.pos >= len(d.data) {
			d.op = len(d.data)
			return nil, &Error{Offset: int64(len(d.data)), Err: ErrTruncated, Msg: "input ends before STOP"}
		}
		d.op, d.opb = d.pos, d.data[d.pos]
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
			if d.prefix && d.sized && d.limit > int64(d.pos) {
				return nil, d.fail(ErrMalformed, "%d bytes of data after STOP", d.limit-int64(d.pos))
			}
			if d.prefix && !d.sized {
				return nil, d.fail(ErrMalformed, "data after STOP (at least %d bytes)", max(1, len(d.data)-d.pos))
			}
			if d.pos != len(d.data) {
				return nil, d.fail(ErrMalformed, "%d bytes of data after STOP", len(d.data)-d.pos)
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
			return false, protocolErr(int64(d.op), b[0])
		}
	case opFrame:
		if _, err := d.length(8, false); err != nil {
			return false, err
		}
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
		m := &Dict{off: int64(d.op), depth: 1}
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
