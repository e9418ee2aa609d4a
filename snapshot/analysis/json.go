package analysis

import "fmt"

// Doc is the JSON document of `gpufrag analyze --json`; docs/json.md
// is its schema. Field names are stable; new fields may be added.
type Doc struct {
	File        string      `json:"file"`
	Format      string      `json:"format"`
	Devices     []DeviceDoc `json:"devices"`
	MemoryStats *StatsDoc   `json:"memory_stats,omitempty"`
	PinnedHost  *HostDoc    `json:"pinned_host,omitempty"`
}

// HostDoc is the pinned host memory of Doc (snapshot.PinnedHost).
type HostDoc struct {
	Segments       int   `json:"segments"`
	ReservedBytes  int64 `json:"reserved_bytes"`
	AllocatedBytes int64 `json:"allocated_bytes"`
	Events         int   `json:"events"`
}

// DeviceDoc is one device of Doc.
type DeviceDoc struct {
	Device                   int     `json:"device"`
	Segments                 int     `json:"segments"`
	Blocks                   int     `json:"blocks"`
	ReservedBytes            int64   `json:"reserved_bytes"`
	AllocatedBytes           int64   `json:"allocated_bytes"`
	RequestedBytes           int64   `json:"requested_bytes"`
	ActiveBytes              int64   `json:"active_bytes"`
	PendingFreeBytes         int64   `json:"pending_free_bytes"`
	CachedFreeBytes          int64   `json:"cached_free_bytes"`
	ReservedUnallocatedBytes int64   `json:"reserved_unallocated_bytes"`
	InternalWasteBytes       int64   `json:"internal_waste_bytes"`
	StrandedFreeBytes        int64   `json:"stranded_free_bytes"`
	Health                   float64 `json:"health"`
	FragRate                 float64 `json:"frag_rate"`
	LargestFreeBlockBytes    int64   `json:"largest_free_block_bytes"`
	MaxAllocatableBytes      int64   `json:"max_allocatable_bytes"`
	CapacityBytes            int64   `json:"capacity_bytes"`
	CapacitySource           string  `json:"capacity_source"`
	CapacityRaisedFromBytes  int64   `json:"capacity_raised_from_bytes,omitempty"`
	SizeEntropyBits          float64 `json:"size_entropy_bits"`
	DistinctSizes            int     `json:"distinct_sizes"`
	TraceEvents              int     `json:"trace_events"`

	WorstSegments []SegmentDoc  `json:"worst_segments"`
	Streams       []GroupDoc    `json:"streams"`
	Pools         []GroupDoc    `json:"pools"`
	Sites         []SiteDoc     `json:"sites"`
	OOMs          []OOMDoc      `json:"ooms"`
	Timeline      []PointDoc    `json:"timeline"`
	Replay        ReplayDoc     `json:"replay"`
	WhatIf        []WhatIfDoc   `json:"whatif"`
	Recommend     *RecommendDoc `json:"recommendation,omitempty"`
	// Attribution is the live memory by allocation site (attrib.go).
	Attribution *AttributionDoc `json:"attribution,omitempty"`
}

// SegmentDoc is one of the segments that waste most.
type SegmentDoc struct {
	Address            string `json:"address"` // hex
	SizeBytes          int64  `json:"size_bytes"`
	Pool               string `json:"pool"`
	Stream             int64  `json:"stream"`
	LiveBlocks         int    `json:"live_blocks"`
	FreeBlocks         int    `json:"free_blocks"`
	FreeBytes          int64  `json:"free_bytes"`
	StrandedBytes      int64  `json:"stranded_bytes"`
	LargestFreeBytes   int64  `json:"largest_free_bytes"`
	InternalWasteBytes int64  `json:"internal_waste_bytes"`
}

// GroupDoc is one stream or pool.
type GroupDoc struct {
	Name             string  `json:"name"`
	Segments         int     `json:"segments"`
	ReservedBytes    int64   `json:"reserved_bytes"`
	ActiveBytes      int64   `json:"active_bytes"`
	CachedFreeBytes  int64   `json:"cached_free_bytes"`
	LargestFreeBytes int64   `json:"largest_free_block_bytes"`
	Health           float64 `json:"health"`
}

// SiteDoc is one call site holding fragmented segments open.
type SiteDoc struct {
	Frame     string `json:"frame"`
	Blocks    int    `json:"blocks"`
	LiveBytes int64  `json:"live_bytes"`
	Segments  int    `json:"segments"`
	HeldBytes int64  `json:"held_free_bytes"`
}

// OOMDoc explains one oom trace entry.
type OOMDoc struct {
	Event                  int     `json:"event"`
	TimeUS                 int64   `json:"time_us,omitempty"`
	RequestedBytes         int64   `json:"requested_bytes"`
	AllocSizeBytes         int64   `json:"alloc_size_bytes"`
	DeviceFreeBytes        int64   `json:"device_free_bytes"`
	ReservedBytes          int64   `json:"reserved_bytes"`
	AllocatedBytes         int64   `json:"allocated_bytes"`
	CachedFreeBytes        int64   `json:"cached_free_bytes"`
	LargestFreeBytes       int64   `json:"largest_free_block_bytes"`
	Health                 float64 `json:"health"`
	Cause                  string  `json:"cause"`
	Why                    string  `json:"why"`
	Site                   string  `json:"site"`
	PrivateCachedFreeBytes int64   `json:"private_cached_free_bytes,omitempty"`
	During                 string  `json:"during,omitempty"`
	UserMetadata           string  `json:"user_metadata,omitempty"`
}

// PointDoc is one timeline point.
type PointDoc struct {
	Event          int     `json:"event"`
	TimeUS         int64   `json:"time_us,omitempty"`
	ReservedBytes  int64   `json:"reserved_bytes"`
	AllocatedBytes int64   `json:"allocated_bytes"`
	FragRate       float64 `json:"frag_rate"`
}

// ReplayDoc is replay fidelity.
type ReplayDoc struct {
	Settings string `json:"settings"`
	Skipped  string `json:"skipped,omitempty"`
	// Source is "trace" (recorded events) or "history" (an order rebuilt
	// from legacy block histories); "" with --no-replay.
	Source                string   `json:"source"`
	HistorySegments       int      `json:"history_segments"`
	Placeholders          int      `json:"placeholders"`
	SkippedHistoryEntries int      `json:"skipped_history_entries"`
	SeededSegments        int      `json:"seeded_segments"`
	SeededBlocks          int      `json:"seeded_blocks"`
	PrivateSegments       int      `json:"private_pool_segments"`
	PrivateAllocs         int      `json:"private_pool_allocs,omitempty"`
	ClippedBlocks         int      `json:"clipped_blocks"`
	Allocs                int      `json:"allocs"`
	AddressMatches        int      `json:"address_matches"`
	SegmentAllocs         int      `json:"segment_allocs"`
	SegmentSizeMatches    int      `json:"segment_size_matches"`
	ExtraSegments         int      `json:"extra_segments"`
	SegmentFrees          int      `json:"segment_frees"`
	SegmentFreeMatches    int      `json:"segment_free_matches"`
	Frees                 int      `json:"frees"`
	UnknownFrees          int      `json:"unknown_frees"`
	FinalBlocks           int      `json:"final_blocks"`
	FinalBlockMatches     int      `json:"final_block_matches"`
	Mismatches            []string `json:"mismatches"`
}

// WhatIfDoc is one alternative.
type WhatIfDoc struct {
	Settings          string  `json:"settings"`
	Recorded          bool    `json:"recorded"`
	PeakReservedBytes int64   `json:"peak_reserved_bytes"`
	PeakAllocated     int64   `json:"peak_allocated_bytes"`
	EndReservedBytes  int64   `json:"end_reserved_bytes"`
	OOMs              int     `json:"ooms"`
	PeakFragRate      float64 `json:"peak_frag_rate"`
	EndFragRate       float64 `json:"end_frag_rate"`
	FirstOOM          string  `json:"first_oom,omitempty"`
	// UnroutedPrivateRequests: private-pool requests this allocator,
	// having no private pools, served from its default pools
	// (Alternative.UnroutedPrivate); absent when 0.
	UnroutedPrivateRequests int `json:"unrouted_private_requests,omitempty"`
}

// RecommendDoc is the recommended setting.
type RecommendDoc struct {
	Line          string `json:"line"` // PYTORCH_ALLOC_CONF=... (registry.EnvVar)
	Reason        string `json:"reason"`
	CapacityBytes int64  `json:"capacity_bytes"`
	Ops           int    `json:"ops"`
	// OOMRequests: the trace's oom entries replayed as requests (WhatIf).
	OOMRequests int `json:"oom_requests"`
	// PrivateRequests: the allocs replayed in a private pool
	// (WhatIf.PrivateRequests); absent when 0.
	PrivateRequests int `json:"private_requests,omitempty"`
}

// StatsDoc is a memory_stats() dump's summary.
type StatsDoc struct {
	ReservedBytes            int64   `json:"reserved_bytes"`
	PeakReservedBytes        int64   `json:"peak_reserved_bytes"`
	AllocatedBytes           int64   `json:"allocated_bytes"`
	PeakAllocatedBytes       int64   `json:"peak_allocated_bytes"`
	ActiveBytes              int64   `json:"active_bytes"`
	RequestedBytes           int64   `json:"requested_bytes"`
	CachedFreeBytes          int64   `json:"cached_free_bytes"`
	ReservedUnallocatedBytes int64   `json:"reserved_unallocated_bytes"`
	InactiveSplitBytes       int64   `json:"inactive_split_bytes"`
	StrandedShare            float64 `json:"stranded_share"`
	Segments                 int64   `json:"segments"`
	Allocations              int64   `json:"allocations"`
	OOMs                     int64   `json:"ooms"`
	Retries                  int64   `json:"alloc_retries"`
	MaxSplitSize             int64   `json:"max_split_size"`
}

// Doc returns the report as the JSON document; file names the input.
func (r *Report) Doc(file string) Doc {
	doc := Doc{File: file, Format: string(r.Format), Devices: []DeviceDoc{}}
	for _, d := range r.Devices {
		doc.Devices = append(doc.Devices, d.doc())
	}
	if h := r.PinnedHost; h != nil {
		doc.PinnedHost = &HostDoc{Segments: h.Segments, ReservedBytes: h.Reserved, AllocatedBytes: h.Allocated, Events: h.Events}
	}
	if s := r.Stats; s != nil {
		doc.MemoryStats = &StatsDoc{ReservedBytes: s.Reserved, PeakReservedBytes: s.PeakReserved,
			AllocatedBytes: s.Allocated, PeakAllocatedBytes: s.PeakAllocated, ActiveBytes: s.Active,
			RequestedBytes: s.Requested, CachedFreeBytes: s.CachedFree, ReservedUnallocatedBytes: s.ReservedUnused,
			InactiveSplitBytes: s.InactiveSplit, StrandedShare: s.StrandedShare, Segments: s.Segments,
			Allocations: s.Allocations, OOMs: s.OOMs, Retries: s.Retries, MaxSplitSize: s.MaxSplitSize}
	}
	return doc
}

func (d Device) doc() DeviceDoc {
	c, m, sz := d.Classes, d.Metrics, d.Sizes()
	out := DeviceDoc{Device: d.Device, Segments: d.Segments, Blocks: d.Blocks,
		ReservedBytes: sz.Reserved, AllocatedBytes: sz.Allocated, RequestedBytes: sz.Requested, ActiveBytes: c.Active,
		PendingFreeBytes: c.PendingFree, CachedFreeBytes: sz.CachedFree, ReservedUnallocatedBytes: c.ReservedUnallocated,
		InternalWasteBytes: c.InternalWaste, StrandedFreeBytes: c.Stranded,
		Health: m.Health, FragRate: m.FragRate, LargestFreeBlockBytes: sz.LargestFreeBlock,
		MaxAllocatableBytes: sz.MaxAllocatable, CapacityBytes: d.Capacity, CapacitySource: d.CapacitySource,
		CapacityRaisedFromBytes: d.CapacityRaisedFrom,
		SizeEntropyBits:         m.SizeEntropy, DistinctSizes: m.DistinctSizes, TraceEvents: d.TraceEvents,
		WorstSegments: []SegmentDoc{}, Streams: []GroupDoc{}, Pools: []GroupDoc{}, Sites: []SiteDoc{},
		OOMs: []OOMDoc{}, Timeline: []PointDoc{}, WhatIf: []WhatIfDoc{}, Replay: ReplayDoc{Mismatches: []string{}}}
	for _, w := range d.WorstSegments {
		out.WorstSegments = append(out.WorstSegments, SegmentDoc{Address: fmt.Sprintf("%#x", w.Address), SizeBytes: w.Size,
			Pool: w.Pool, Stream: w.Stream, LiveBlocks: w.LiveBlocks, FreeBlocks: w.FreeBlocks, FreeBytes: w.Free,
			StrandedBytes: w.Stranded, LargestFreeBytes: w.LargestFree, InternalWasteBytes: w.InternalWaste})
	}
	for _, g := range d.Streams {
		out.Streams = append(out.Streams, groupDoc(g))
	}
	for _, g := range d.Pools {
		out.Pools = append(out.Pools, groupDoc(g))
	}
	for _, s := range d.Sites {
		out.Sites = append(out.Sites, SiteDoc{Frame: s.Frame, Blocks: s.Blocks, LiveBytes: s.Live, Segments: s.Segments, HeldBytes: s.Held})
	}
	out.Attribution = d.Attribution.Doc()
	for _, o := range d.OOMs {
		out.OOMs = append(out.OOMs, oomDoc(o))
	}
	for _, p := range d.Timeline {
		out.Timeline = append(out.Timeline, PointDoc{Event: p.Event, TimeUS: p.TimeUS, ReservedBytes: p.Reserved,
			AllocatedBytes: p.Allocated, FragRate: p.FragRate})
	}
	if f := d.Replay; f != nil {
		out.Replay = ReplayDoc{Settings: f.Settings, Skipped: f.Skipped, Source: f.Source,
			HistorySegments: f.HistorySegments, Placeholders: f.Placeholders, SkippedHistoryEntries: f.SkippedHistoryEntries,
			SeededSegments: f.SeededSegments,
			SeededBlocks:   f.SeededBlocks, PrivateSegments: f.PrivateSegments, PrivateAllocs: f.PrivateAllocs, ClippedBlocks: f.ClippedBlocks, Allocs: f.Allocs, AddressMatches: f.AddressMatches,
			SegmentAllocs: f.SegmentAllocs, SegmentSizeMatches: f.SegmentSizeMatches, ExtraSegments: f.ExtraSegments,
			SegmentFrees: f.SegmentFrees, SegmentFreeMatches: f.SegmentFreeMatches,
			Frees: f.Frees, UnknownFrees: f.UnknownFrees, FinalBlocks: f.FinalBlocks,
			FinalBlockMatches: f.FinalBlockMatches, Mismatches: []string{}}
		for _, mm := range f.Mismatches {
			out.Replay.Mismatches = append(out.Replay.Mismatches, mm.String())
		}
	}
	if w := d.WhatIf; w != nil {
		for _, a := range w.Results {
			out.WhatIf = append(out.WhatIf, WhatIfDoc{Settings: a.Settings, Recorded: a.Recorded,
				PeakReservedBytes: a.PeakReserved, PeakAllocated: a.PeakAllocated, EndReservedBytes: a.EndReserved,
				OOMs: a.OOMs, PeakFragRate: a.PeakFragRate, EndFragRate: a.EndFragRate, FirstOOM: a.FirstOOM,
				UnroutedPrivateRequests: a.UnroutedPrivate})
		}
		out.Recommend = &RecommendDoc{Line: w.Recommendation, Reason: w.Reason, CapacityBytes: w.Capacity, Ops: w.Ops, OOMRequests: w.OOMRequests,
			PrivateRequests: w.PrivateRequests}
	}
	return out
}

func oomDoc(o OOM) OOMDoc {
	return OOMDoc{Event: o.Event, TimeUS: o.TimeUS, RequestedBytes: o.Requested,
		AllocSizeBytes: o.AllocSize, DeviceFreeBytes: o.DeviceFree, ReservedBytes: o.Reserved,
		AllocatedBytes: o.Allocated, CachedFreeBytes: o.CachedFree, LargestFreeBytes: o.LargestFree,
		Health: o.Health, Cause: o.Cause, Why: o.Why, Site: siteOf(o.Frames), PrivateCachedFreeBytes: o.PrivateCachedFree, During: o.During, UserMetadata: o.UserMetadata}
}

func groupDoc(g Group) GroupDoc {
	return GroupDoc{Name: g.Name, Segments: g.Segments, ReservedBytes: g.Reserved, ActiveBytes: g.Active,
		CachedFreeBytes: g.CachedFree, LargestFreeBytes: g.LargestFree, Health: g.Health}
}
