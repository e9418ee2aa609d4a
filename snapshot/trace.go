package snapshot

import (
	"iter"
	"sort"
)

// Trace is one device's trace, oldest entry first, as a consumer that
// reads it in order takes it (Snapshot.Trace): either the entries of
// Snapshot.DeviceTraces, or, for a file read with Options.PackTraces, the
// entries as they streamed, packed at 40 bytes an entry (a TraceEntry is
// 136): the action interned, the fields few entries carry (device_free,
// frames, pool_id, user_metadata, compile_context) kept aside. A replay of
// a multi-gigabyte history then holds the history once at that size and
// never expanded.
//
// A Trace is read by All (in order) or At (any entry); Consume reads it in
// order and forgets each chunk once read, for the last consumer.
type Trace struct {
	flat    []TraceEntry // the entries, when kept expanded
	chunks  [][]packedEntry
	starts  []int // starts[k] is the index of chunks[k][0]; set by pack
	extras  []packedExtra
	actions []string // the interned actions (conv.actions)
	n       int
}

// packedEntry is a TraceEntry as a Trace keeps it: the action interned
// (Trace.actions); device_free, frames, pool_id, user_metadata and
// compile_context, which few entries carry once trace stacks are skipped,
// in extras.
type packedEntry struct {
	addr         uint64
	size, stream int64
	time         int64
	action       uint32
	extra        int32 // index into extras; -1: none
}

type packedExtra struct {
	deviceFree            int64
	frames                []Frame
	poolID                [2]int64
	hasPoolID             bool
	userMeta, compileCtxt string
}

// traceChunk (65,536 entries, 2.5 MiB) is the unit a streamed trace grows by.
const traceChunk = 1 << 16

// TraceOf is the Trace of entries (not copied).
func TraceOf(entries []TraceEntry) *Trace { return &Trace{flat: entries, n: len(entries)} }

// Len is the number of entries; 0 for a nil Trace.
func (t *Trace) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// add packs e, whose action is actions[action].
func (t *Trace) add(e *TraceEntry, action uint32) {
	if k := len(t.chunks); k == 0 || len(t.chunks[k-1]) == cap(t.chunks[k-1]) {
		t.chunks = append(t.chunks, make([]packedEntry, 0, min(traceChunk, max(64, t.n))))
	}
	p := packedEntry{addr: e.Addr, size: e.Size, stream: e.Stream, time: e.TimeUS, action: action, extra: -1}
	if e.DeviceFree != 0 || e.Frames != nil || e.HasPoolID || e.UserMetadata != "" || e.CompileContext != "" {
		p.extra = int32(len(t.extras))
		t.extras = append(t.extras, packedExtra{e.DeviceFree, e.Frames, e.PoolID, e.HasPoolID, e.UserMetadata, e.CompileContext})
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, p)
	t.n++
}

// pack ends the streaming of a packed trace: actions names its actions.
func (t *Trace) pack(actions []string) {
	t.actions = actions
	t.starts = make([]int, len(t.chunks))
	at := 0
	for k, c := range t.chunks {
		t.starts[k] = at
		at += len(c)
	}
}

// unpack is the TraceEntry of p.
func (t *Trace) unpack(p *packedEntry) TraceEntry {
	e := TraceEntry{Action: t.actions[p.action], Addr: p.addr, Size: p.size, Stream: p.stream, TimeUS: p.time}
	if p.extra >= 0 {
		x := &t.extras[p.extra]
		e.DeviceFree, e.Frames = x.deviceFree, x.frames
		e.PoolID, e.HasPoolID, e.UserMetadata, e.CompileContext = x.poolID, x.hasPoolID, x.userMeta, x.compileCtxt
	}
	return e
}

// expand returns the entries of a packed trace, dropping each chunk once
// expanded, so that the trace is never held twice at its full size.
func (t *Trace) expand(actions []string) []TraceEntry {
	t.actions = actions
	out := make([]TraceEntry, 0, t.n)
	for k, c := range t.chunks {
		for i := range c {
			out = append(out, t.unpack(&c[i]))
		}
		t.chunks[k] = nil
	}
	t.extras = nil
	return out
}

// At is entry i (0 ≤ i < Len).
func (t *Trace) At(i int) TraceEntry {
	if t.flat != nil || t.chunks == nil {
		return t.flat[i]
	}
	k := sort.Search(len(t.starts), func(k int) bool { return t.starts[k] > i }) - 1
	return t.unpack(&t.chunks[k][i-t.starts[k]])
}

// All yields the entries in order with their index.
func (t *Trace) All() iter.Seq2[int, TraceEntry] { return t.each(false) }

// Consume yields the entries in order as All does, forgetting each chunk
// of a packed trace once yielded, so that what the consumer builds from
// the history can take the memory the history held: for the last
// consumer. Afterwards the trace is empty (Len 0), read to the end or not.
func (t *Trace) Consume() iter.Seq2[int, TraceEntry] { return t.each(true) }

func (t *Trace) each(consume bool) iter.Seq2[int, TraceEntry] {
	return func(yield func(int, TraceEntry) bool) {
		if t == nil {
			return
		}
		if consume {
			defer t.clear()
		}
		if t.flat != nil {
			for i := range t.flat {
				if !yield(i, t.flat[i]) {
					return
				}
			}
			return
		}
		i := 0
		for k, c := range t.chunks {
			for j := range c {
				if !yield(i, t.unpack(&c[j])) {
					return
				}
				i++
			}
			if consume {
				t.chunks[k] = nil
			}
		}
	}
}

func (t *Trace) clear() { *t = Trace{} }
