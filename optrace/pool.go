package optrace

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/gpufrag/gpufrag/alloc"
)

// parsePool reads an alloc's "pool": a JSON array of exactly two
// non-negative integers (PyTorch's MempoolId_t), written as integers (1.0
// and "1" are refused, as for size).
func parsePool(raw json.RawMessage) (alloc.PoolID, bool) {
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil || len(parts) != 2 {
		return alloc.PoolID{}, false
	}
	var id alloc.PoolID
	for k, p := range parts {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(p)), 10, 64)
		if err != nil || n < 0 {
			return alloc.PoolID{}, false
		}
		id[k] = n
	}
	return id, true
}

// allocOp is op's alloc on a: routed to op.Pool when a has private pools.
// unrouted is true when op names a private pool that a, having none,
// served from its default pools (Result.UnroutedPoolAllocs).
func allocOp(a alloc.Allocator, op Op) (b alloc.Block, unrouted bool, err error) {
	if op.Pool != (alloc.PoolID{}) {
		if pa, ok := a.(alloc.PoolAllocator); ok {
			b, err = pa.AllocIn(op.Pool, op.Size, op.Stream)
			return b, false, err
		}
		unrouted = true
	}
	b, err = a.Alloc(op.Size, op.Stream)
	return b, unrouted, err
}
