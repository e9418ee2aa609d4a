package snapshot

import (
	"strconv"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// poolID reads a MempoolId_t pair (segment_pool_id, a trace entry's
// pool_id): a tuple or list of two ints, each an opaque 64-bit value. The
// bool reports whether the key is present.
func (c *conv) poolID(o obj, key string) ([2]int64, bool, error) {
	var id [2]int64
	v, off, ok := o.get(key)
	if !ok {
		return id, false, nil
	}
	t, isSeq := v.(pickle.Tuple)
	if l, isList := v.([]any); isList {
		t, isSeq = l, true
	}
	if !isSeq || len(t) != 2 {
		return id, false, c.fieldErr(off, join(o.where(), key), "want a pair of ints, got %s of length %d", pickle.TypeName(v), len(t))
	}
	for k := range t {
		n, isInt := t[k].(int64)
		if !isInt {
			if u, isU := t[k].(uint64); isU {
				n, isInt = int64(u), true // pool ids are opaque 64-bit values
			}
		}
		if !isInt {
			return id, false, c.fieldErr(off, join(o.where(), key)+"["+strconv.Itoa(k)+"]", "want int, got %s", pickle.TypeName(t[k]))
		}
		id[k] = n
	}
	return id, true, nil
}
