package snapshot

import (
	"sort"
	"strconv"
)

// AllocatorSettings is the allocator_settings dict as written, with values
// as decoded (int64, float64, bool, string, map[string]any, []any). Read
// checks the types of the keys that have an accessor, so the accessors
// never fail on a type; ok is false only when the key is absent.
type AllocatorSettings map[string]any

// Conf returns PYTORCH_CUDA_ALLOC_CONF, the raw configuration string.
func (s AllocatorSettings) Conf() (string, bool) {
	v, ok := s["PYTORCH_CUDA_ALLOC_CONF"].(string)
	return v, ok
}

// MaxSplitSize returns max_split_size in bytes; -1 means unlimited.
func (s AllocatorSettings) MaxSplitSize() (int64, bool) {
	v, ok := s["max_split_size"].(int64)
	return v, ok
}

// ExpandableSegments returns expandable_segments.
func (s AllocatorSettings) ExpandableSegments() (bool, bool) {
	v, ok := s["expandable_segments"].(bool)
	return v, ok
}

// GarbageCollectionThreshold returns garbage_collection_threshold (0 is off).
func (s AllocatorSettings) GarbageCollectionThreshold() (float64, bool) {
	v, ok := s["garbage_collection_threshold"].(float64)
	return v, ok
}

// Division is one roundup_power2_divisions entry: sizes from Start MiB up
// to the next entry's start are rounded to Divisions steps per power of two
// (0 or 1: no extra rounding).
type Division struct {
	StartMiB  int64
	Divisions int64
}

// RoundupPower2Divisions returns roundup_power2_divisions sorted by start.
func (s AllocatorSettings) RoundupPower2Divisions() ([]Division, bool) {
	m, ok := s["roundup_power2_divisions"].(map[string]any)
	if !ok {
		return nil, false
	}
	out := make([]Division, 0, len(m))
	for k, v := range m {
		start, _ := strconv.ParseInt(k, 10, 64) // checked by Read
		out = append(out, Division{StartMiB: start, Divisions: v.(int64)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartMiB < out[j].StartMiB })
	return out, true
}
