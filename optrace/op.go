package optrace

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Kind is what an op does. The zero Kind is invalid, so a forgotten field is
// caught rather than read as an alloc.
type Kind uint8

const (
	// Alloc requests Size bytes on Stream under the name ID.
	Alloc Kind = iota + 1
	// Free releases the live allocation named ID.
	Free
	// EmptyCache returns cached, wholly free memory to the device
	// (torch.cuda.empty_cache()).
	EmptyCache
	// Sync is a device-wide stream synchronisation (an extension to the
	// format; see the package doc).
	Sync
)

var kindNames = [...]string{Alloc: "alloc", Free: "free", EmptyCache: "empty_cache", Sync: "sync"}

// String returns the name the trace format uses ("alloc", "empty_cache").
func (k Kind) String() string {
	if k >= Alloc && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// parseKind is the inverse of String for valid kinds.
func parseKind(s string) (Kind, bool) {
	for k := Alloc; int(k) < len(kindNames); k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Limits on what an op may hold. They keep a hostile or corrupt trace from
// overflowing an allocator's rounding arithmetic.
const (
	// MaxSize is the largest alloc size accepted: 1 PiB, far beyond any
	// device, and small enough that rounding it up cannot overflow int64.
	MaxSize int64 = 1 << 50
	// MaxStream is the largest stream number accepted.
	MaxStream = math.MaxInt32
	// MaxIDBytes is the longest id accepted (in UTF-8 bytes). It keeps every
	// valid op, however its id is escaped, well inside MaxLineBytes.
	MaxIDBytes = 4096
)

// Op is one operation of a trace.
type Op struct {
	Kind   Kind
	ID     string // alloc and free: the allocation's name; empty otherwise
	Size   int64  // alloc: bytes requested, 1..MaxSize; 0 otherwise
	Stream int    // alloc: the stream, 0..MaxStream; 0 otherwise
	// Pool is the private pool an alloc is routed to (alloc.PoolID: a
	// CUDA-graph pool or MemPool, as PyTorch's MempoolId_t); zero for the
	// default pools and for every other op. Allocators with private pools
	// (alloc.PoolAllocator) serve the alloc from that pool; the others
	// ignore it.
	Pool alloc.PoolID
	// Line is the 1-based line the op was read from, for error messages;
	// 0 for ops built in code (errors then count ops from 1 instead).
	Line int
}

// check reports the first field that Write could not write or Read would
// refuse, without regard to the other ops of the trace.
func (op Op) check() (field, msg string) {
	switch op.Kind {
	case Alloc:
		switch {
		case op.ID == "":
			return "id", "missing"
		case len(op.ID) > MaxIDBytes:
			return "id", fmt.Sprintf("longer than %d bytes", MaxIDBytes)
		case op.Size <= 0:
			return "size", fmt.Sprintf("must be a positive integer (got %d)", op.Size)
		case op.Size > MaxSize:
			return "size", fmt.Sprintf("must be at most %d (%s) (got %d)", MaxSize, mem.FormatBytes(MaxSize), op.Size)
		case op.Stream < 0 || op.Stream > MaxStream:
			return "stream", fmt.Sprintf("must be an integer from 0 to %d (got %d)", MaxStream, op.Stream)
		case op.Pool[0] < 0 || op.Pool[1] < 0:
			return "pool", fmt.Sprintf("must be two non-negative integers (got [%d,%d])", op.Pool[0], op.Pool[1])
		}
	case Free:
		switch {
		case op.ID == "":
			return "id", "missing"
		case len(op.ID) > MaxIDBytes:
			return "id", fmt.Sprintf("longer than %d bytes", MaxIDBytes)
		case op.Size != 0:
			return "size", `not allowed for op "free"`
		case op.Stream != 0:
			return "stream", `not allowed for op "free"`
		case op.Pool != (alloc.PoolID{}):
			return "pool", `not allowed for op "free"`
		}
	case EmptyCache, Sync:
		switch {
		case op.ID != "":
			return "id", fmt.Sprintf("not allowed for op %q", op.Kind)
		case op.Size != 0:
			return "size", fmt.Sprintf("not allowed for op %q", op.Kind)
		case op.Stream != 0:
			return "stream", fmt.Sprintf("not allowed for op %q", op.Kind)
		case op.Pool != (alloc.PoolID{}):
			return "pool", fmt.Sprintf("not allowed for op %q", op.Kind)
		}
	default:
		return "op", fmt.Sprintf("unknown op %s", op.Kind)
	}
	return "", ""
}

// AppendJSON appends the op as one line of the trace format, without the
// newline. Alloc always carries its stream, so lines read the same whatever
// the stream. The op must be valid (see Write).
func (op Op) AppendJSON(b []byte) []byte {
	b = append(b, `{"op":"`...)
	b = append(b, op.Kind.String()...)
	b = append(b, '"')
	if op.Kind == Alloc || op.Kind == Free {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, op.ID)
	}
	if op.Kind == Alloc {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, op.Size, 10)
		b = append(b, `,"stream":`...)
		b = strconv.AppendInt(b, int64(op.Stream), 10)
		if op.Pool != (alloc.PoolID{}) {
			b = append(b, `,"pool":[`...)
			b = strconv.AppendInt(b, op.Pool[0], 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, op.Pool[1], 10)
			b = append(b, ']')
		}
	}
	return append(b, '}')
}

// String is the op's trace line, for messages and debugging.
func (op Op) String() string { return string(op.AppendJSON(nil)) }

// appendJSONString quotes s as a JSON string. encoding/json does the
// escaping so that every id Read accepts comes back unchanged.
func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil { // a string always marshals
		panic(err)
	}
	return append(b, q...)
}
