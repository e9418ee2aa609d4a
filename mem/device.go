package mem

import (
	"errors"
	"fmt"
)

// PageSize is the driver's physical allocation granularity: every raw device
// allocation is rounded up to whole 2 MiB pages. 2 MiB is the large-page size
// that cudaMalloc and cuMemCreate use on every current NVIDIA GPU (it is also
// cuMemGetAllocationGranularity's answer on A100/H100), and the reason PyTorch
// sizes its small segments at 2 MiB.
const PageSize int64 = 2 * MiB

// DefaultVABase is where the first virtual range starts. The value only makes
// addresses look like real device pointers; nothing depends on it.
const DefaultVABase uint64 = 0x7f0000000000

// ErrConfig is returned (wrapped) by NewDevice for an impossible configuration.
var ErrConfig = errors.New("mem: bad device configuration")

// Device is the modelled GPU: a page-granular physical pool plus a virtual
// address space that only grows. It is not safe for concurrent use; each
// allocator owns one Device.
//
// Invariants:
//
//	0 <= used <= capacity - otherUse
//	nextVA only increases, so no two ranges ever overlap
type Device struct {
	capacity int64  // total device memory; fixed
	otherUse int64  // weights, CUDA context, other processes; fixed
	used     int64  // physical bytes held by raw allocations and mappings; +Reserve, -Release
	nextVA   uint64 // next free virtual address, PageSize aligned; only grows
	vaHook   func(size int64) uint64

	rawAllocs, rawFrees int64 // counts of Reserve and Release calls
}

// NewDevice returns a device of the given capacity with otherUse bytes taken by
// weights and the CUDA context. Both are byte counts; otherUse may be zero.
func NewDevice(capacity, otherUse int64) (*Device, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("%w: capacity %d must be positive", ErrConfig, capacity)
	}
	if otherUse < 0 || otherUse > capacity {
		return nil, fmt.Errorf("%w: other use %s must be between 0 and the capacity %s",
			ErrConfig, FormatBytes(otherUse), FormatBytes(capacity))
	}
	return &Device{capacity: capacity, otherUse: otherUse, nextVA: DefaultVABase}, nil
}

// MustDevice is NewDevice for constants in tests and examples; it panics on a
// bad configuration.
func MustDevice(capacity, otherUse int64) *Device {
	d, err := NewDevice(capacity, otherUse)
	if err != nil {
		panic(err)
	}
	return d
}

// CheckUnused returns an ErrConfig error naming owner when the device
// already holds memory. An allocator's accounting assumes it owns every byte
// the device holds, so each takes a fresh device; weights and the CUDA
// context belong in OtherUse.
func (d *Device) CheckUnused(owner string) error {
	if d.used != 0 {
		return fmt.Errorf("%w: %s: device has %s in use already; an allocator must own its device (put weights and context in the device's other use)",
			ErrConfig, owner, FormatBytes(d.used))
	}
	return nil
}

// Capacity is the device's total memory.
func (d *Device) Capacity() int64 { return d.capacity }

// OtherUse is the memory taken by weights, the CUDA context and other processes.
func (d *Device) OtherUse() int64 { return d.otherUse }

// Used is the physical memory held by the allocator on this device.
func (d *Device) Used() int64 { return d.used }

// Free is what cudaMemGetInfo would report as free.
func (d *Device) Free() int64 { return d.capacity - d.otherUse - d.used }

// RawAllocs and RawFrees count successful Reserve and Release calls
// (cudaMalloc/cuMemCreate and cudaFree/cuMemRelease).
func (d *Device) RawAllocs() int64 { return d.rawAllocs }

// RawFrees counts Release calls.
func (d *Device) RawFrees() int64 { return d.rawFrees }

// Reserve takes n bytes of physical memory if that many are free. Callers
// round n themselves: PageRound for cudaMalloc, their own page size for VMM
// mappings.
func (d *Device) Reserve(n int64) bool {
	if n <= 0 || n > d.Free() {
		return false
	}
	d.used += n
	d.rawAllocs++
	return true
}

// Release gives back n bytes taken by Reserve. Releasing more than is held is
// a broken caller and panics.
func (d *Device) Release(n int64) {
	if n <= 0 || n > d.used {
		panic(fmt.Sprintf("mem: release of %d bytes with %d held", n, d.used))
	}
	d.used -= n
	d.rawFrees++
}

// ReserveVA returns the start of a fresh virtual range of size bytes, aligned
// to PageSize. Virtual ranges are never reused, so addresses identify ranges
// for the whole life of the device (the real driver does reuse them; only
// order matters to the allocators, and fresh ranges come last, as they tend
// to on a real device until it has been running for a while).
func (d *Device) ReserveVA(size int64) uint64 {
	if d.vaHook != nil {
		return d.vaHook(size)
	}
	a := d.nextVA
	n := uint64(RoundUp(max(size, 1), PageSize))
	if d.nextVA+n < d.nextVA {
		// 2^64 − DefaultVABase bytes is ~16 EiB of ranges: millions of times a
		// real GPU's 128–512 TiB. Running out is a broken caller.
		panic(fmt.Sprintf("mem: virtual address space exhausted reserving %d bytes", size))
	}
	d.nextVA += n
	return a
}

// SetVAHook replaces the bump-pointer address space by f, which must return a
// PageSize-aligned range that overlaps no live range. Snapshot replay uses it
// to give new segments the addresses a real trace recorded. Nil restores the
// default.
func (d *Device) SetVAHook(f func(size int64) uint64) { d.vaHook = f }

// Clone returns an independent copy (the VA hook is shared).
func (d *Device) Clone() *Device { c := *d; return &c }

// PageRound rounds n up to whole driver pages: the physical cost of a
// cudaMalloc of n bytes.
func PageRound(n int64) int64 { return RoundUp(n, PageSize) }
