package analysis_test

import (
	"bytes"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// A compact way to write crafted snapshots: a segment is its address, pool
// and blocks, each block an offset-free (size, requested, state, site)
// tuple laid end to end from the segment's address.

const (
	mib  = mem.MiB
	segA = uint64(0x7f0000000000)
	segB = uint64(0x7f0040000000)
	segC = uint64(0x7f0080000000)
)

type blk struct {
	size, req int64
	state     string // "live", "pending" or "free"
	site      string // the caller's function, "" for no stack
}

func live(size, req int64, site string) blk { return blk{size, req, "live", site} }
func free(size int64) blk                   { return blk{size: size, state: "free"} }

func seg(addr uint64, pool string, blocks ...blk) snapshot.Segment {
	s := snapshot.Segment{Address: addr, SegmentType: pool}
	at := addr
	for _, b := range blocks {
		sb := snapshot.Block{Address: at, Size: b.size, RequestedSize: b.req, State: snapshot.StateInactive}
		switch b.state {
		case "live":
			sb.State = snapshot.StateAllocated
			s.AllocatedSize += b.size
		case "pending":
			sb.State = snapshot.StatePendingFree
		}
		if b.state != "free" {
			s.ActiveSize += b.size
			s.RequestedSize += b.req
		}
		if b.site != "" {
			sb.Frames = []snapshot.Frame{{Filename: "??", Name: "c10::alloc"},
				{Filename: "/usr/lib/python3/site-packages/torch/nn/functional.py", Line: 9, Name: "linear"},
				{Filename: "model.py", Line: 10, Name: b.site}}
		}
		s.Blocks = append(s.Blocks, sb)
		s.TotalSize += b.size
		at += uint64(b.size)
	}
	return s
}

// Trace events.
func segAlloc(addr uint64, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: "segment_alloc", Addr: addr, Size: size}
}
func segFree(addr uint64, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: "segment_free", Addr: addr, Size: size}
}
func alloc(addr uint64, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: "alloc", Addr: addr, Size: size}
}

// freeOf is free_requested followed by free_completed, as PyTorch records
// a free with no stream uses.
func freeOf(addr uint64, size int64) []snapshot.TraceEntry {
	return []snapshot.TraceEntry{{Action: "free_requested", Addr: addr, Size: size},
		{Action: "free_completed", Addr: addr, Size: size}}
}
func oom(size, deviceFree int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: "oom", Size: size, DeviceFree: deviceFree}
}

func events(parts ...any) []snapshot.TraceEntry {
	var out []snapshot.TraceEntry
	for _, p := range parts {
		switch x := p.(type) {
		case snapshot.TraceEntry:
			out = append(out, x)
		case []snapshot.TraceEntry:
			out = append(out, x...)
		}
	}
	return out
}

func snap(trace []snapshot.TraceEntry, segs ...snapshot.Segment) *snapshot.Snapshot {
	return &snapshot.Snapshot{Format: snapshot.FormatModern, Segments: segs, DeviceTraces: [][]snapshot.TraceEntry{trace},
		AllocatorSettings: snapshot.AllocatorSettings{"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": int64(-1),
			"expandable_segments": false, "garbage_collection_threshold": 0.0}}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
