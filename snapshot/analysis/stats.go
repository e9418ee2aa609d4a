package analysis

import "github.com/gpufrag/gpufrag/snapshot"

// StatsSummary reads the figures of a torch.cuda.memory_stats() dump that
// the diagnosis needs. Absent keys read as 0.
type StatsSummary struct {
	Reserved, PeakReserved   int64
	Allocated, PeakAllocated int64
	Active, Requested        int64
	// InactiveSplit is memory_summary's "non-releasable memory": free
	// pieces of segments that also hold live blocks.
	InactiveSplit  int64
	Segments       int64
	Allocations    int64
	OOMs, Retries  int64
	MaxSplitSize   int64 // −1: unlimited
	CachedFree     int64 // reserved − active
	ReservedUnused int64 // reserved − allocated
	// StrandedShare is InactiveSplit ÷ CachedFree: the share of cached free
	// memory stranded in split segments, which empty_cache cannot return.
	// The counters have no block sizes, so health (which needs the largest
	// free block) cannot be computed from them.
	StrandedShare float64
}

func summarizeStats(m snapshot.MemoryStats) *StatsSummary {
	g := func(k string) int64 { v, _ := m.Get(k); return v }
	s := &StatsSummary{
		Reserved: g("reserved_bytes.all.current"), PeakReserved: g("reserved_bytes.all.peak"),
		Allocated: g("allocated_bytes.all.current"), PeakAllocated: g("allocated_bytes.all.peak"),
		Active: g("active_bytes.all.current"), Requested: g("requested_bytes.all.current"),
		InactiveSplit: g("inactive_split_bytes.all.current"), Segments: g("segment.all.current"),
		Allocations: g("allocation.all.current"), OOMs: g("num_ooms"), Retries: g("num_alloc_retries"),
		MaxSplitSize: g("max_split_size"),
	}
	s.CachedFree = s.Reserved - s.Active
	s.ReservedUnused = s.Reserved - s.Allocated
	if s.CachedFree > 0 {
		s.StrandedShare = float64(s.InactiveSplit) / float64(s.CachedFree)
	}
	return s
}
