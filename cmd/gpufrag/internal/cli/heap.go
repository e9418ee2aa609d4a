package cli

import (
	"os"
	"strings"
)

// The engine's heap on transparent huge pages.
//
// A page fault costs about 14 µs of CPU on the development VM (a Go program
// that touches 16 MiB: 4,200 faults, 60 ms of task-clock more than one that
// touches nothing), and simulate on the Azure conversation trace took 4,200
// to 5,200 of them, about a third of the process's CPU: every page the Go
// heap first touches faults, 4 KiB at a time. Where the kernel offers
// transparent huge pages only on request (/sys/kernel/mm/
// transparent_hugepage/enabled is "madvise", the default of most
// distributions), the Go runtime does not ask for them for the heap, so
// engineHeap does: it has the runtime map a region of heapBallast bytes,
// marks the region MADV_HUGEPAGE, and lets a collection free it, so that the
// heap the engine then grows into is that region, faulted 2 MiB at a time.
// Measured (docs/benchmarks.md, "The engine's heap on huge pages"): page
// faults 4,200-5,200 → 1,350-1,900 and task-clock about −25% on that
// command, peak RSS 45 → 46-50 MB; outputs byte-identical. It changes no
// result, only where the heap's pages come from.
//
// Off when the kernel's mode is "always" (the heap gets huge pages already)
// or "never", when GODEBUG=disablethp=1 (Go's own switch for huge pages on
// the heap), when GOMEMLIMIT is set (a region larger than a small limit
// would make the collector run at once), and when the kernel accounts
// mapped memory strictly (vm.overcommit_memory 2), where mapping the
// region could fail for want of commit and the runtime would stop.

// heapBallast is the size of the region engineHeap prepares. Tuned on the
// Azure conversation simulate (16, 32, 64 and 128 MiB gave the same faults,
// 1,500-1,900; the heap peaks near 18 MB there); 64 MiB covers the heaps of
// the shared traces' simulate runs, validated on ShareGPT and Mooncake.
// A heap that outgrows it gets 4 KiB pages beyond, as without it.
const heapBallast = 64 << 20

// thpPath is the kernel's transparent huge page mode; overcommitPath its
// accounting of mapped memory.
const (
	thpPath        = "/sys/kernel/mm/transparent_hugepage/enabled"
	overcommitPath = "/proc/sys/vm/overcommit_memory"
)

// wantHugeHeap reports whether engineHeap should act, given the content of
// thpPath and overcommitPath and the process's GODEBUG and GOMEMLIMIT.
func wantHugeHeap(mode, overcommit, godebug, memlimit string) bool {
	if memlimit != "" || godebugSetting(godebug, "disablethp") == "1" || strings.TrimSpace(overcommit) == "2" {
		return false
	}
	return strings.Contains(mode, "[madvise]")
}

// godebugSetting returns the value of key in a GODEBUG string (the last
// one wins, as in the runtime), or "" when it is not set.
func godebugSetting(godebug, key string) string {
	v := ""
	for _, kv := range strings.Split(godebug, ",") {
		if k, val, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == key {
			v = val
		}
	}
	return v
}

// engineHeap prepares the engine's heap on huge pages where wantHugeHeap
// says so (heap_linux.go), in the gpufrag process only (MainProcess);
// elsewhere it does nothing.
func engineHeap() {
	if !wholeProcess {
		return
	}
	mode, err := os.ReadFile(thpPath)
	if err != nil {
		return
	}
	overcommit, _ := os.ReadFile(overcommitPath)
	if !wantHugeHeap(string(mode), string(overcommit), os.Getenv("GODEBUG"), os.Getenv("GOMEMLIMIT")) {
		return
	}
	hugeHeap(heapBallast)
}
