package snapshot

// Format is the generation of the snapshot format a file was written in.
type Format string

// The format generations (research notes §6.6).
const (
	FormatModern      Format = "modern"         // allocator_settings present
	FormatNoSettings  Format = "no-settings"    // a dict without allocator_settings
	FormatLegacy      Format = "legacy-history" // PyTorch ≤ 2.0: blocks carry history
	FormatSegmentList Format = "segment-list"   // a bare list of segments
)

// Snapshot is one decoded memory snapshot: every device's segments and, if
// recording was on, the trace of allocator events per device.
type Snapshot struct {
	Format   Format
	Segments []Segment // in file order (PyTorch sorts them by address)
	// DeviceTraces[d] holds device d's events, oldest first (only its oom
	// entries when read with Options.TraceOOMsOnly; nil for a trace kept
	// packed, Options.PackTraces: Trace(d) reads every device's).
	DeviceTraces [][]TraceEntry
	// TraceLen[d] is the number of entries of device d's trace in the
	// file, whether kept in DeviceTraces or not; nil for a Snapshot not
	// made by Read (then len(DeviceTraces[d]) counts them).
	TraceLen []int
	// HasTimes is true when trace entries carry time_us.
	HasTimes bool
	// AllocatorSettings is nil when the file has none.
	AllocatorSettings   AllocatorSettings
	ExternalAnnotations []Annotation
	// Extra holds top-level keys this package does not know (host_segments,
	// host_traces, ...), as decoded pickle values (see package pickle).
	Extra map[string]any
	// Stats holds torch.cuda.memory_stats() when the file was that dict
	// dumped as JSON (FormatMemoryStats); nil otherwise.
	Stats MemoryStats

	// traceChecks[d], for a trace whose entries were not all kept, holds
	// what Validate checks of them against the segments.
	traceChecks []*traceCheck
	// packed[d] is device d's trace kept packed (Options.PackTraces).
	packed []*Trace
}

// Trace is device d's trace, packed (Options.PackTraces) or from
// DeviceTraces; empty (Len 0) when there is none.
func (s *Snapshot) Trace(d int) *Trace {
	if d >= 0 && d < len(s.packed) && s.packed[d] != nil {
		return s.packed[d]
	}
	if d >= 0 && d < len(s.DeviceTraces) {
		return TraceOf(s.DeviceTraces[d])
	}
	return nil
}

// DropTrace forgets device d's trace (its entries; TraceLen still counts
// them), for a caller done with it.
func (s *Snapshot) DropTrace(d int) {
	if d >= 0 && d < len(s.packed) {
		s.packed[d] = nil
	}
	if d >= 0 && d < len(s.DeviceTraces) {
		s.DeviceTraces[d] = nil
	}
}

// traceDevices is the number of device trace lists (DeviceTraces or
// packed).
func (s *Snapshot) traceDevices() int { return max(len(s.DeviceTraces), len(s.packed)) }

// TraceComplete reports whether every entry of device d's trace is kept,
// in DeviceTraces or packed (false after Options.TraceOOMsOnly dropped
// some).
func (s *Snapshot) TraceComplete(d int) bool {
	return d >= len(s.TraceLen) || d >= s.traceDevices() || s.TraceLen[d] == s.Trace(d).Len()
}

// TraceIndex is the position in device d's trace in the file of entry k
// of Trace(d): k itself when every entry was kept, the oom entry's own
// position when Options.TraceOOMsOnly kept only those.
func (s *Snapshot) TraceIndex(d, k int) int {
	if d >= 0 && d < len(s.traceChecks) && s.traceChecks[d] != nil && k >= 0 && k < len(s.traceChecks[d].kept) {
		return s.traceChecks[d].kept[k]
	}
	return k
}

// TraceEvents is the number of entries of device d's trace in the file.
func (s *Snapshot) TraceEvents(d int) int {
	if d < len(s.TraceLen) {
		return s.TraceLen[d]
	}
	return s.Trace(d).Len()
}

// Segment is one cudaMalloc (or mapped run of an expandable segment).
type Segment struct {
	Device        int
	Address       uint64
	TotalSize     int64    // Σ block sizes
	AllocatedSize int64    // Σ sizes of active_allocated blocks
	ActiveSize    int64    // Σ sizes of blocks that are not inactive
	RequestedSize int64    // Σ requested sizes of blocks that are not inactive
	Stream        int64    // cudaStream_t as an integer; 0 is the default stream
	SegmentType   string   // "small" or "large"
	PoolID        [2]int64 // segment_pool_id; (0, 0) is the default pools
	IsExpandable  bool
	Frames        []Frame
	Blocks        []Block // in address order, tiling the segment
}

// End is the first address past the segment.
func (s Segment) End() uint64 { return s.Address + uint64(s.TotalSize) }

// The block states. PyTorch's docs also call the pending state
// active_awaiting_free; Read maps that spelling to StatePendingFree.
const (
	StateAllocated   = "active_allocated"
	StatePendingFree = "active_pending_free"
	StateInactive    = "inactive"
)

// Block is one piece of a segment.
type Block struct {
	Address uint64
	Size    int64
	// RequestedSize is the unrounded request of the last allocation; stale
	// on inactive blocks, 0 if the block was never allocated.
	RequestedSize int64
	State         string // StateAllocated, StatePendingFree or StateInactive
	Frames        []Frame
	// History is the legacy (PyTorch ≤ 2.0) block history, as the file
	// lists it: the allocation living in the block first (its address is
	// the block's), then the earlier allocations of blocks merged into this
	// one. Nil for other formats and for blocks without one.
	History []HistoryEntry
}

// HistoryEntry is one allocation recorded in a legacy block history.
type HistoryEntry struct {
	Addr     uint64
	RealSize int64 // the unrounded request
	Frames   []Frame
}

// Frame is one stack frame of an allocation's context.
type Frame struct {
	Filename string
	Line     int64
	Name     string
}

// TraceEntry is one recorded allocator event. Actions are kept as written
// (alloc, free_requested, free_completed, segment_alloc, segment_free,
// segment_map, segment_unmap, snapshot, oom, user_defined, ...).
type TraceEntry struct {
	Action     string
	Addr       uint64
	Size       int64
	Stream     int64
	TimeUS     int64 // µs since the Unix epoch; 0 when absent
	DeviceFree int64 // oom entries only: free bytes as CUDA reported them
	Frames     []Frame
	// PoolID is the entry's private pool (pool_id, MempoolId_t) when
	// HasPoolID; writers that record no pool per entry leave both zero,
	// and a replay then takes the pool of the segment the address lies in.
	PoolID    [2]int64
	HasPoolID bool
	// UserMetadata is the thread's user metadata when the event was
	// recorded (torch._C._cuda_setMemoryMetadata; newer writers); "" if none.
	// CompileContext is the torch.compile frame being run, likewise.
	UserMetadata, CompileContext string
}

// Annotation is one entry of external_annotations (record_function ranges).
type Annotation struct {
	Stage  string // "START" or "END"
	Name   string
	Device int
	TimeUS int64
}
