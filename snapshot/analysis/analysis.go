package analysis

import (
	"errors"
	"fmt"
	"runtime"
	"sort"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// ErrCapacity: Options.Capacity is negative.
var ErrCapacity = errors.New("analysis: capacity must not be negative")

// CapacityError: Options.Capacity is below what a device's live blocks
// hold at the end of the snapshot (Classes.Active: allocated and awaiting
// another stream), so no allocator could hold them on that device and
// every figure at that capacity would describe a state that cannot exist.
// A capacity between Active and Reserved is accepted: the what-ifs then
// say which allocator would fit the requests on the smaller device (the
// recorded one does not, since it reserved more).
type CapacityError struct {
	Device           int
	Capacity         int64
	Active, Reserved int64 // the device's, at the end of the snapshot
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("capacity %s is below the %s that device %d's live blocks hold (%s reserved): no allocator could hold them",
		mem.Bytes(e.Capacity), mem.Bytes(e.Active), e.Device, mem.Bytes(e.Reserved))
}

// DefaultCapacity is the device memory assumed for what-if replays when
// neither Options.Capacity nor an oom entry of the trace says: 80 GiB, the
// same default as `gpufrag replay` (an A100/H100 80GB).
const DefaultCapacity = 80 * mem.GiB

// Options tune Analyze. The zero value is the default.
type Options struct {
	// Capacity is the device memory for layouts and what-if replays. 0
	// means the capacity an oom entry records (reserved + device_free at
	// that moment), else DefaultCapacity. One below a device's live blocks
	// is a *CapacityError.
	Capacity int64
	// WhatIf lists the allocator specs (alloc/registry syntax) to replay; nil
	// means DefaultWhatIf. An empty non-nil slice skips what-if.
	WhatIf []string
	// NoReplay skips replay fidelity, the timeline and what-if (diagnosis
	// only); the oom entries are listed, cause "unknown".
	NoReplay bool
	// TopSegments and TopSites cap those lists (default 10).
	TopSegments, TopSites int
	// TimelinePoints caps the timeline (default 200).
	TimelinePoints int
	// MaxMismatches caps the mismatches listed (default 20; all are counted).
	MaxMismatches int
	// FullStacks charges the attribution (Device.Attribution) to whole
	// stacks rather than stacks collapsed at their call site.
	FullStacks bool
	// Parallel is how many what-if replays run at once (default
	// runtime.GOMAXPROCS). The result does not depend on it.
	Parallel int
	// ReleaseTraces lets Analyze consume each device's trace as it builds
	// the what-if replays' op trace (snapshot.Trace.Consume: a packed
	// trace's chunks are forgotten as they are read) and then drop it from
	// the snapshot (Snapshot.DropTrace), so that the ops take the memory
	// the history held: for a caller that reads the traces no more (the
	// analyze command). A 12.7M-event trace is 510 MB packed, 1.7 GB of
	// TraceEntry.
	ReleaseTraces bool
}

func (o *Options) defaults() {
	if o.TopSegments <= 0 {
		o.TopSegments = 10
	}
	if o.TopSites <= 0 {
		o.TopSites = 10
	}
	if o.TimelinePoints <= 0 {
		o.TimelinePoints = 200
	}
	if o.MaxMismatches <= 0 {
		o.MaxMismatches = 20
	}
	if o.WhatIf == nil {
		o.WhatIf = DefaultWhatIf
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
}

// Report is the analysis of one snapshot file.
type Report struct {
	Format  snapshot.Format
	Devices []Device
	// Stats is the memory_stats() summary when the file was one.
	Stats *StatsSummary
	// PinnedHost is the pinned host memory the file records
	// (record_pinned_host_memory), nil when it has none: host memory, kept
	// out of every device figure.
	PinnedHost *snapshot.PinnedHost
}

// Classes are a device's memory classes in PyTorch's terms. Active counts
// blocks freed by the caller but still awaited by another stream.
//
//	Reserved == Active + CachedFree;  Active == Allocated + PendingFree
//	ReservedUnallocated == Reserved − Allocated
type Classes struct {
	Reserved            int64 `json:"reserved_bytes"`
	Allocated           int64 `json:"allocated_bytes"`
	Requested           int64 `json:"requested_bytes"`
	Active              int64 `json:"active_bytes"`
	PendingFree         int64 `json:"pending_free_bytes"`
	CachedFree          int64 `json:"cached_free_bytes"`
	ReservedUnallocated int64 `json:"reserved_unallocated_bytes"`
	// InternalWaste is Σ (size − requested) over live blocks: rounding.
	InternalWaste int64 `json:"internal_waste_bytes"`
	// Stranded is the cached free memory inside segments that hold a live
	// block, so empty_cache cannot return it: the cost of fragmentation.
	Stranded int64 `json:"stranded_free_bytes"`
}

// Device is the analysis of one device.
type Device struct {
	Device   int
	Segments int
	Blocks   int
	Classes  Classes
	// Metrics are package frag's, over snapshot.Layout at Capacity.
	Metrics  frag.Metrics
	Capacity int64
	// CapacitySource says where Capacity came from: "flag", "oom entry"
	// or "default".
	CapacitySource string
	WorstSegments  []SegmentWaste
	Streams        []Group
	Pools          []Group
	Sites          []Site
	TraceEvents    int
	OOMs           []OOM
	Timeline       []Point
	Replay         *Fidelity
	WhatIf         *WhatIf
	// CapacityRaisedFrom is the capacity the oom entries recorded when it
	// was below the bytes the snapshot reserves at its end (the device held
	// at least those): Capacity was raised to them. 0 otherwise.
	CapacityRaisedFrom int64
	// Layout is the final state, for renderers (SegmentMapSVG).
	Layout mem.Layout
	// Attribution is the device's live memory by allocation site
	// (attrib.go); its rows are capped at Options.TopSites.
	Attribution *Attribution
}

// Analyze diagnoses every device of s. It refuses a snapshot that fails
// s.Validate (one from snapshot.Read has passed it already), so nothing
// below meets a negative device, overlapping segments or an address range
// that wraps.
func Analyze(s *snapshot.Snapshot, opts Options) (*Report, error) {
	if opts.Capacity < 0 {
		return nil, ErrCapacity
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	opts.defaults()
	r := &Report{Format: s.Format}
	if h := s.PinnedHost(); h.Present {
		r.PinnedHost = &h
	}
	if s.Stats != nil {
		r.Stats = summarizeStats(s.Stats)
	}
	// Each device is analysed on a view of the snapshot that holds only its
	// segments: every step filters by device, and with all segments in
	// view a file of 1,024 devices was scanned whole a dozen times per
	// device. Addresses for segments the trace did not record stay above
	// every segment of the file (top).
	byDevice := map[int][]snapshot.Segment{}
	var top uint64
	for _, seg := range s.Segments {
		byDevice[seg.Device] = append(byDevice[seg.Device], seg)
		top = max(top, seg.End())
	}
	for _, d := range devices(s) {
		view := *s
		view.Segments = byDevice[d]
		dev, err := analyzeDevice(&view, d, top, opts)
		if err != nil {
			return nil, err
		}
		r.Devices = append(r.Devices, dev)
	}
	return r, nil
}

// devices lists the devices that have segments or trace events, in order.
func devices(s *snapshot.Snapshot) []int {
	seen := map[int]bool{}
	for _, seg := range s.Segments {
		seen[seg.Device] = true
	}
	for d := range s.DeviceTraces {
		if s.TraceEvents(d) > 0 {
			seen[d] = true
		}
	}
	out := make([]int, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Ints(out)
	return out
}

// analyzeDevice analyses device d of s, whose segments are d's only; top is
// the end of the file's highest segment.
func analyzeDevice(s *snapshot.Snapshot, d int, top uint64, opts Options) (Device, error) {
	dev := Device{Device: d}
	trace := s.Trace(d)
	dev.TraceEvents = s.TraceEvents(d)
	dev.Capacity, dev.CapacitySource = opts.Capacity, "flag"
	diagnose(s, d, &dev, opts)
	dev.Attribution = attribute(s.Segments, opts.FullStacks, opts.TopSites)
	if opts.Capacity > 0 && dev.Classes.Active > opts.Capacity {
		return dev, &CapacityError{Device: d, Capacity: opts.Capacity, Active: dev.Classes.Active, Reserved: dev.Classes.Reserved}
	}
	if opts.NoReplay {
		// Listed, not explained: the trace read may hold only its oom
		// entries (ReadOptions), so each takes its position in the file's.
		ooms := explainOOMs(trace)
		for k := range ooms {
			ooms[k].Event = s.TraceIndex(d, ooms[k].Event)
		}
		dev.OOMs = annotateOOMs(ooms, s.ExternalAnnotations, d)
		return dev, nil
	}
	if !s.TraceComplete(d) {
		return dev, fmt.Errorf("device %d: the snapshot was read with only its oom entries (snapshot.Options.TraceOOMsOnly): %d of %d trace entries, too few to replay",
			d, trace.Len(), s.TraceEvents(d))
	}
	cfg, settings := recordedConfig(s.AllocatorSettings)
	pre, preErr := reconstruct(s, d, trace, cfg)
	streamsErr := checkStreams(s, d, trace)
	if preErr == nil {
		preErr = streamsErr
	}
	var run run
	if useHistory(s, d, trace) {
		run = replayHistory(s, d, cfg, settings, trace.Len()-1, top, streamsErr, opts)
		run.ooms = explainOOMs(trace)
	} else {
		run = replayTrace(s, d, trace, cfg, settings, top, pre, preErr, opts)
	}
	dev.Replay = run.fidelity
	dev.Timeline = run.timeline
	dev.OOMs = annotateOOMs(run.ooms, s.ExternalAnnotations, d)
	if opts.Capacity == 0 {
		dev.Capacity, dev.CapacitySource = DefaultCapacity, "default"
		if run.recordedCapacity == 0 {
			// Not replayed: the oom entries still record the device.
			run.recordedCapacity = traceCapacity(s, d, trace)
		}
		if run.recordedCapacity > 0 && run.recordedCapacity < dev.Classes.Reserved {
			// The replay's own reserved bytes at the oom fell short of the
			// snapshot's (a replay that diverged): the trace's oom entries
			// may still record the device.
			run.recordedCapacity = max(run.recordedCapacity, traceCapacity(s, d, trace))
		}
		if run.recordedCapacity > 0 {
			dev.Capacity, dev.CapacitySource = run.recordedCapacity, "oom entry"
			if dev.Capacity < dev.Classes.Reserved {
				dev.CapacityRaisedFrom, dev.Capacity = dev.Capacity, dev.Classes.Reserved
			}
		}
		// The diagnosis used the reserved bytes as capacity; redo the
		// device-free and max-allocatable figures at the real one.
		dev.Layout = s.Layout(d, dev.Capacity)
		dev.Metrics = frag.Compute(dev.Layout)
	}
	if len(opts.WhatIf) > 0 && preErr == nil && trace.Len() > 0 {
		var release func()
		if opts.ReleaseTraces {
			release = func() { s.DropTrace(d) }
		}
		w, err := whatIf(trace, pre, newPoolRouter(s, d, trace, pre), settings, opts.WhatIf, dev.Capacity, opts.Parallel, release)
		if err != nil {
			return dev, err
		}
		dev.WhatIf = w
	}
	return dev, nil
}
