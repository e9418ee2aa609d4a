package pickle

// Tuple is a decoded Python tuple. It is a distinct type so that callers can
// tell tuples (segment_pool_id) from lists.
type Tuple []any

// Dict is a decoded Python dict. It keeps insertion order, answers lookups by
// string key, and remembers the byte offset of the opcode that produced each
// value so that callers can point at the offending bytes in their errors.
// A Dict returned by Decode must not be modified.
type Dict struct {
	ents []entry

	// strIdx and anyIdx index keys once the dict outgrows a linear scan
	// (linearMax entries); nil before that.
	strIdx map[string]int
	anyIdx map[any]int

	off   int64 // offset of the opcode that made the dict
	depth int32 // 1 + the deepest value inside
	used  bool  // put into another container: frozen from then on
	// memo is 1 + the memo index it was last stored at; 0 if none.
	memo int32
}

// entry is one key and value, with the offset of the opcode that pushed the
// value. One slice of entries costs one allocation per dict, not three.
type entry struct {
	key, val any
	off      int64
}

// linearMax is the size up to which a Dict is searched linearly. Snapshot
// dicts (frames, blocks, trace entries) have 3 to 8 keys; a scan over them is
// faster than hashing and saves a map per dict.
const linearMax = 8

// Len is the number of entries.
func (d *Dict) Len() int { return len(d.ents) }

// Key returns the i-th key in insertion order.
func (d *Dict) Key(i int) any { return d.ents[i].key }

// Value returns the i-th value in insertion order.
func (d *Dict) Value(i int) any { return d.ents[i].val }

// ValueOffset returns the byte offset of the opcode that produced the i-th
// value (for a shared value, the memo fetch that referred to it).
func (d *Dict) ValueOffset(i int) int64 { return d.ents[i].off }

// Offset returns the byte offset of the opcode that created the dict.
func (d *Dict) Offset() int64 { return d.off }

// Index returns the position of the string key k, or -1.
func (d *Dict) Index(k string) int {
	if d.strIdx != nil {
		if i, ok := d.strIdx[k]; ok {
			return i
		}
		return -1
	}
	for i := range d.ents {
		if s, ok := d.ents[i].key.(string); ok && s == k {
			return i
		}
	}
	return -1
}

// Get returns the value of the string key k.
func (d *Dict) Get(k string) (any, bool) {
	if i := d.Index(k); i >= 0 {
		return d.ents[i].val, true
	}
	return nil, false
}

// Keys returns the keys in insertion order (a copy).
func (d *Dict) Keys() []any {
	out := make([]any, len(d.ents))
	for i := range d.ents {
		out[i] = d.ents[i].key
	}
	return out
}

// Values returns the values in insertion order (a copy).
func (d *Dict) Values() []any {
	out := make([]any, len(d.ents))
	for i := range d.ents {
		out[i] = d.ents[i].val
	}
	return out
}

// comparable reports whether k can be compared with == and used as a map key
// without a panic, i.e. whether duplicates of it are merged.
func comparableKey(k any) bool {
	switch k.(type) {
	case nil, bool, int64, uint64, float64, string:
		return true
	}
	return false
}

// find returns the index of key k, or -1. k must be comparable.
func (d *Dict) find(k any) int {
	if d.strIdx == nil {
		for i := range d.ents {
			if d.ents[i].key == k { // safe: k's dynamic type is comparable
				return i
			}
		}
		return -1
	}
	if s, ok := k.(string); ok {
		if i, ok := d.strIdx[s]; ok {
			return i
		}
		return -1
	}
	if i, ok := d.anyIdx[k]; ok {
		return i
	}
	return -1
}

// set stores d[k] = v as Python does: a repeated key keeps its first position
// and takes the new value.
func (d *Dict) set(k, v any, off int64) {
	cmp := comparableKey(k)
	if cmp {
		if i := d.find(k); i >= 0 {
			d.ents[i].val, d.ents[i].off = v, off
			return
		}
	}
	d.ents = append(d.ents, entry{k, v, off})
	n := len(d.ents)
	switch {
	case n == linearMax+1:
		d.strIdx = make(map[string]int, 2*n)
		d.anyIdx = make(map[any]int)
		for i := range d.ents {
			d.index(d.ents[i].key, i)
		}
	case n > linearMax+1 && cmp:
		d.index(k, n-1)
	}
}

func (d *Dict) index(k any, i int) {
	if !comparableKey(k) {
		return
	}
	if s, ok := k.(string); ok {
		d.strIdx[s] = i
	} else {
		d.anyIdx[k] = i
	}
}

// list is a Python list while it is being decoded. Lists are mutable and
// shared through the memo, so they live behind a pointer until they are put
// into another container, which freezes them into a plain []any.
type list struct {
	items []any
	depth int32
	used  bool
	// route: 0 until first appended to, then 1 when its items go to
	// Options.Stream (stream says where), -1 when they do not.
	route  int8
	stream *Streamed
}
