package analysis

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// ReadOptions are the snapshot.Options an analysis reads with: the stacks
// of blocks and oom entries only, and each trace in order, kept packed (40
// bytes an entry; Options.ReleaseTraces then consumes it). With noReplay,
// the trace's entries are checked as they stream and only its oom entries
// kept (Options.NoReplay needs no more): memory then follows the segments,
// not the history.
func ReadOptions(noReplay bool) *snapshot.Options {
	return &snapshot.Options{SkipTraceFrames: true, PackTraces: true, TraceOOMsOnly: noReplay}
}

// SoftMemoryLimit sets a soft memory limit (debug.SetMemoryLimit) of 2
// bytes per byte of the snapshot file at path, at least 1 GiB, unless the
// user set GOGC or GOMEMLIMIT or path is "-" (stdin), and returns the
// function that restores the previous one. The collector then runs more
// often as the heap nears the limit instead of letting it grow to twice
// the live data (GOGC=100): an analysis holds about 1.5 bytes per input
// byte at its high-water mark (before the trace was kept packed: the trace
// as TraceEntry, then the what-if ops beside it). A generated 1 GB snapshot: 3.43 GB peak without a limit,
// 2.24 GB with GOMEMLIMIT=1800MiB, for 12% more CPU.
func SoftMemoryLimit(path string) (restore func()) {
	st, err := os.Stat(path)
	if err != nil || path == "-" || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(max(1<<30, 2*st.Size()))
	return func() { debug.SetMemoryLimit(prev) }
}

// Advice is the message for a capacity the user gave (name: the
// snapshot's): what the device's live blocks hold and the least capacity
// to give instead, rounded up to a whole GiB from 1 GiB on, else to a
// whole MiB, so that the suggestion as printed is enough (68.97GiB,
// printed to two decimals, may be below the figure it stands for; 69GiB
// is not).
func (e *CapacityError) Advice(name string) string {
	u := int64(mem.MiB)
	if e.Active >= mem.GiB {
		u = mem.GiB
	}
	return fmt.Sprintf("below the %s that live blocks hold on device %d of %s (%s reserved): "+
		"no allocator could hold them; give at least %s, or leave --capacity out",
		mem.Bytes(e.Active), e.Device, name, mem.Bytes(e.Reserved), mem.Bytes((e.Active+u-1)/u*u))
}

// CapacityWarnings says, for each device analysed at a capacity the user
// gave (CapacitySource "flag") below what it reserved (at the end of the
// snapshot or at the timeline's peak), that the final state's figures at
// that capacity describe a state the smaller device could not have held,
// and, where the device has what-ifs, what they replay on it. A warning, not an error (CapacityError refuses a capacity below the live
// blocks): the what-ifs answer a fair question there, whether the same
// requests fit on the smaller device when the allocator reserves less (on
// examples/snapshot.pickle, which reserved 73.02GiB, every caching variant
// fits in 72GiB, since the caching allocator frees its cache and retries
// before it fails).
func (r *Report) CapacityWarnings() []string {
	var out []string
	for _, d := range r.Devices {
		if d.CapacitySource != "flag" {
			continue
		}
		peak, at := d.Classes.Reserved, "at the end of the snapshot"
		for _, p := range d.Timeline {
			if p.Reserved > peak {
				peak, at = p.Reserved, fmt.Sprintf("at trace event %d", p.Event)
			}
		}
		if peak <= d.Capacity {
			continue
		}
		w := fmt.Sprintf("--capacity %s is below the %s device %d reserved %s: "+
			"the final state's device-free memory and max allocatable are figured on a device that could not "+
			"have held it", mem.Bytes(d.Capacity), mem.Bytes(peak), d.Device, at)
		if d.WhatIf != nil { // none under --no-replay, in diff, or without a trace
			w += fmt.Sprintf("; the what-ifs replay the same requests on %s, where an allocator fits only by reserving less",
				mem.Bytes(d.Capacity))
		}
		out = append(out, w)
	}
	return out
}
