package cli

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Go
// runs Linux on with 4 KiB base pages (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// hugeHeap has the runtime map n bytes of heap, marks the huge pages within
// them MADV_HUGEPAGE, and frees them with a collection, so that the heap
// grows into them next (the runtime's page allocator takes the lowest free
// addresses first). A fresh allocation of this size comes straight from
// the OS and is not written, so nothing is faulted here. A failed madvise
// (a kernel without THP) leaves the heap as it was.
func hugeHeap(n int) {
	// No collection for the region's own allocation (it would find the
	// heap over its goal at once); the one below frees it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(n)) &^ (hugePage - 1)
	if beg < end {
		_ = syscall.Madvise(b[beg-p:end-p], syscall.MADV_HUGEPAGE)
	}
	runtime.KeepAlive(b)
	b = nil
	runtime.GC() // free the region now: the engine's first spans come from it
}
