package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
)

// FormatMemoryStats is a torch.cuda.memory_stats() dict dumped as JSON
// (json.dump(torch.cuda.memory_stats(), f)): counters only, no segments.
const FormatMemoryStats Format = "memory-stats"

// MemoryStats is torch.cuda.memory_stats() for one device: its flattened keys
// ("reserved_bytes.all.current", "num_ooms", ...; research notes §7) with
// their values. A nested dict (the unflattened _cuda_memoryStats form) is
// flattened with ".", as memory_stats does.
type MemoryStats map[string]int64

// Get returns the value of key and whether the file had it.
func (m MemoryStats) Get(key string) (int64, bool) {
	v, ok := m[key]
	return v, ok
}

// Keys returns the keys in sorted order.
func (m MemoryStats) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// memStatsMaxDepth bounds the nesting of a memory_stats JSON document. The
// real dict nests three levels (stat.pool.metric); 32 leaves room for
// private-pool keys and keeps a hostile file from building a deep path.
const memStatsMaxDepth = 32

// isJSONObject reports whether data starts, after white space and a UTF-8
// byte-order mark, with '{'. No pickle starts that way: protocol 2+ pickles
// begin with PROTO (0x80), and '{' is not a pickle opcode.
func isJSONObject(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// notStatsHint follows errors about a JSON object whose values are not
// memory_stats counters.
const notStatsHint = "a memory_stats dump (json.dump(torch.cuda.memory_stats(), f)) holds integer counters only; this JSON is something else"

// notStats gives e the hint that data, a JSON object whose values are
// not memory_stats counters, is something else, naming what where the
// object's first key says: gpufrag's own inputs are not snapshots.
func notStats(e *Error, data []byte) *Error {
	e.Hint = notStatsHint
	var first struct {
		Op     *json.RawMessage `json:"op"`
		Layout *json.RawMessage `json:"gpufrag_layout"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if dec.Decode(&first) != nil {
		return e
	}
	switch {
	case first.Op != nil:
		e.Hint += ": an allocation op trace, which gpufrag replay reads"
	case first.Layout != nil:
		e.Hint += ": a saved layout, which gpufrag defrag reads"
	}
	return e
}

// readMemoryStats reads a memory_stats() JSON object. Values must be
// integers (a float with an integral value, as json.dumps writes for
// numpy-converted counters, is accepted) or nested objects; null values are
// skipped. Errors name the key path and the byte offset.
func (c *conv) readMemoryStats(data []byte) (*Snapshot, error) {
	base := int64(0)
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		data, base = data[3:], 3
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	stats := MemoryStats{}
	offs := map[string]int64{} // the offset of each value, for checkMemoryStats
	// syntax reports a decoder error where untrusted.CheckJSON, the walk
	// every JSON reader shares, finds it: the bad byte's offset (the
	// decoder counts one inside a value from the value's start) and the
	// path of the value it is in. CheckJSON may find a problem of its own
	// (a repeated key, invalid UTF-8) before it: that is reported instead.
	syntax := func(err error) error {
		var je *untrusted.JSONError
		if errors.As(untrusted.CheckJSON(data), &je) {
			return jsonErr(c.name, je, base)
		}
		return &Error{Name: c.name, Offset: base + dec.InputOffset(), Msg: "memory_stats JSON: " + err.Error(), Err: ErrDecode}
	}
	// valueAt skips white space and the ':' after a key to the value's offset.
	valueAt := func(off int64) int64 {
		for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n:"), data[off]) >= 0 {
			off++
		}
		return base + off
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		e := c.fieldErr(0, "", "memory_stats JSON: top level: want object")
		e.Hint = notStatsHint
		return nil, e
	}
	var path, shown []string // the objects the walk is in: their fields, and as errors show them
	for {
		off := base + dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			if len(path) == 0 {
				break
			}
			path, shown = path[:len(path)-1], shown[:len(shown)-1]
			continue
		}
		key, _ := tok.(string) // the decoder only yields strings in key position
		field, show := key, untrusted.Clip(key)
		if len(path) > 0 {
			field, show = path[len(path)-1]+"."+key, shown[len(shown)-1]+"."+show
		}
		voff := valueAt(dec.InputOffset())
		val, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		switch v := val.(type) {
		case json.Delim:
			if v != '{' {
				return nil, notStats(c.fieldErr(voff, show, "want number or object, got array"), data)
			}
			if len(path) >= memStatsMaxDepth {
				return nil, c.fieldErr(voff, show, "nested deeper than %d levels", memStatsMaxDepth)
			}
			path, shown = append(path, field), append(shown, show)
		case json.Number:
			n, err := memStatsInt(v)
			if err != nil {
				return nil, notStats(c.fieldErr(voff, show, "%s", err), data)
			}
			if err := c.spend(1, sizeMapEntry+int64(len(field)), off, show); err != nil {
				return nil, err
			}
			stats[field] = n
			offs[field] = voff
		case nil:
		default:
			return nil, notStats(c.fieldErr(voff, show, "want integer, got %T", v), data)
		}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := data[end:]
		end += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		return nil, &Error{Name: c.name, Offset: base + end, Msg: "memory_stats JSON: data after the object", Err: ErrDecode}
	}
	// What the decoder let through: a key written twice (it kept the last
	// value), keys that differ only in case, invalid UTF-8.
	var je *untrusted.JSONError
	if errors.As(untrusted.CheckJSON(data), &je) {
		return nil, jsonErr(c.name, je, base)
	}
	if err := c.checkMemoryStats(stats, offs, base); err != nil {
		return nil, err
	}
	if !hasMemStatsKey(stats) {
		return nil, &Error{Name: c.name, Offset: 0, Err: ErrNotSnapshot,
			Msg: "a JSON object with none of torch.cuda.memory_stats()'s keys (allocated_bytes.all.current, reserved_bytes.all.current, num_ooms, ...), " +
				"not a memory snapshot; " + howToSnapshot}
	}
	return &Snapshot{Format: FormatMemoryStats, Stats: stats}, nil
}

// jsonErr is an error of untrusted.CheckJSON about a memory_stats document
// whose first byte is at offset base of the input: a syntax error, or what
// the decoder lets through. Its path ("$.allocated_bytes.all", keys cut to
// untrusted.QuoteBytes) is the field, less "$.". A syntax error, or one
// about the whole document (invalid UTF-8, a second value), is a decode
// error; one about a key (repeated, or in two cases) is a bad field.
func jsonErr(name string, je *untrusted.JSONError, base int64) *Error {
	kind := ErrField
	if je.Syntax || je.Path == "" {
		kind = ErrDecode
	}
	field := strings.TrimPrefix(strings.TrimPrefix(je.Path, "$"), ".")
	return &Error{Name: name, Offset: base + je.Offset, Field: field, Msg: "memory_stats JSON: " + je.Msg, Err: kind}
}

// memStatsInt reads a counter: an integer, or a float with an integral
// value (as json.dumps writes numpy-converted counters), within int64. Its
// error echoes the number cut to untrusted.QuoteBytes.
func memStatsInt(v json.Number) (int64, error) {
	n, err := strconv.ParseInt(v.String(), 10, 64)
	if err == nil {
		return n, nil
	}
	f, ferr := v.Float64() // ±Inf with ErrRange past float64
	if ferr == nil && f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	if errors.Is(err, strconv.ErrRange) || errors.Is(ferr, strconv.ErrRange) || f == math.Trunc(f) {
		return 0, fmt.Errorf("want a 64-bit integer, got %s, out of its range", untrusted.Clip(v.String()))
	}
	return 0, fmt.Errorf("want integer, got %s", untrusted.Clip(v.String()))
}

// memStatsNames are the names that torch.cuda.memory_stats()'s keys begin
// with: the per-pool counters (NAME.POOL.METRIC, as allocated_bytes.all.current),
// the oversize ones (NAME.METRIC) and the scalars.
var memStatsNames = map[string]bool{
	"allocation": true, "segment": true, "active": true, "inactive_split": true,
	"allocated_bytes": true, "reserved_bytes": true, "active_bytes": true, "inactive_split_bytes": true, "requested_bytes": true,
	"oversize_allocations": true, "oversize_segments": true,
	"num_alloc_retries": true, "num_ooms": true, "num_sync_all_streams": true, "num_device_alloc": true, "num_device_free": true,
	"max_split_size": true,
}

// hasMemStatsKey reports whether one of the keys is memory_stats()'s: an
// object without one (any other JSON document of integers, {} itself) is
// not a dump of it, and was read as one with no figure at all.
func hasMemStatsKey(stats MemoryStats) bool {
	for k := range stats {
		name, _, _ := strings.Cut(k, ".")
		if memStatsNames[name] {
			return true
		}
	}
	return false
}

// The byte counters of a pool that memory_stats keeps in the order
// requested <= allocated <= active <= reserved: what callers asked for,
// rounded up to blocks, blocks not yet released to the pool (a block freed
// while a stream still uses it stays active), and the segments the
// allocator holds from the device. inactive_split_bytes, free blocks of
// split segments, lie within reserved - active.
var memStatsOrder = []string{"requested_bytes", "allocated_bytes", "active_bytes", "reserved_bytes"}

// checkMemoryStats checks the counters against each other, where the file
// has both: per pool (all, large_pool, small_pool) and for current and
// peak values, the order of memStatsOrder, inactive_split_bytes within
// reserved - active, each current at most its peak, and no byte count
// below zero. A file that breaks them is not a real memory_stats dump, and
// the summary would print it as nonsense ("cached free -4.00GiB").
func (c *conv) checkMemoryStats(stats MemoryStats, offs map[string]int64, base int64) error {
	bad := func(key, format string, args ...any) error {
		e := c.fieldErr(base+offs[key], key, format, args...)
		e.Hint = "a memory_stats dump's counters hold these relations; this one was edited or is not one"
		return e
	}
	size := func(n int64) string { return fmt.Sprintf("%s (%d)", mem.FormatBytes(n), n) }
	for _, pool := range []string{"all", "large_pool", "small_pool"} {
		for _, when := range []string{"current", "peak"} {
			key := func(stat string) string { return stat + "." + pool + "." + when }
			var prev string // the last counter of memStatsOrder the file has
			for _, stat := range append(memStatsOrder, "inactive_split_bytes") {
				k := key(stat)
				v, ok := stats[k]
				if !ok {
					continue
				}
				if v < 0 {
					return bad(k, "negative byte count %d", v)
				}
				if cur, ok := stats[stat+"."+pool+".current"]; when == "peak" && ok && cur > v {
					return bad(k, "peak %s is below the current value %s", size(v), size(cur))
				}
				if stat == "inactive_split_bytes" {
					continue
				}
				if prev != "" && stats[prev] > v {
					return bad(prev, "%s is more than %s %s", size(stats[prev]), k, size(v))
				}
				prev = k
			}
			split, okS := stats[key("inactive_split_bytes")]
			reserved, okR := stats[key("reserved_bytes")]
			active, okA := stats[key("active_bytes")]
			if when == "current" && okS && okR && okA && split > reserved-active {
				return bad(key("inactive_split_bytes"), "%s is more than reserved - active, %s: split free blocks are part of the reserved memory that is not active",
					size(split), size(reserved-active))
			}
		}
	}
	return nil
}

// String formats the stats as "key=value" lines in key order, for debugging.
func (m MemoryStats) String() string {
	var b bytes.Buffer
	for _, k := range m.Keys() {
		fmt.Fprintf(&b, "%s=%d\n", k, m[k])
	}
	return b.String()
}
