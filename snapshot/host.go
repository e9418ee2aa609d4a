package snapshot

import (
	"math"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// PinnedHost summarizes the pinned (page-locked) host memory a snapshot
// carries when it was taken with record_pinned_host_memory (newest PyTorch:
// the top-level host_segments and host_traces). It is host memory: never
// part of a device's segments or of any figure computed from them.
type PinnedHost struct {
	Present   bool  // the file has host_segments or host_traces
	Segments  int   // entries of host_segments
	Reserved  int64 // Σ total_size over them (entries without one add nothing)
	Allocated int64 // Σ allocated_size
	Events    int   // entries of host_traces, over every list it holds
}

// PinnedHost reads the summary from the keys Read kept in Extra. Entries
// whose fields are not the ints the device segments use are counted but add
// no bytes: the host format is young and this is a summary, not a model.
func (s *Snapshot) PinnedHost() PinnedHost {
	var h PinnedHost
	if v, ok := s.Extra["host_segments"]; ok {
		h.Present = true
		for _, e := range seq(v) {
			h.Segments++
			if d, ok := e.(*pickle.Dict); ok {
				h.Reserved = addSat(h.Reserved, dictSize(d, "total_size"))
				h.Allocated = addSat(h.Allocated, dictSize(d, "allocated_size"))
			}
		}
	}
	if v, ok := s.Extra["host_traces"]; ok {
		h.Present = true
		for _, e := range seq(v) {
			if inner := seq(e); inner != nil {
				h.Events += len(inner)
			} else {
				h.Events++
			}
		}
	}
	return h
}

// seq is v's elements if it is a list or tuple, else nil.
func seq(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case pickle.Tuple:
		return x
	}
	return nil
}

// dictSize is d[key] as a non-negative int64, 0 when absent or not one.
func dictSize(d *pickle.Dict, key string) int64 {
	i := d.Index(key)
	if i < 0 {
		return 0
	}
	if n, ok := d.Value(i).(int64); ok && n > 0 {
		return n
	}
	return 0
}

// addSat is a+b for non-negative values, stopping at MaxInt64 (a hostile
// file can list sizes whose sum overflows).
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
