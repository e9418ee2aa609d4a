package mem

import (
	"errors"
	"fmt"
	"slices"
	"sort"
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

// MaxCapacity is the largest device the model accepts: 2^50 bytes, 1 PiB.
// No GPU comes near it (the largest hold 192–288 GiB, about 2^38), and the
// bound keeps every address and size the allocators compute far from 2^63:
// a 9/8 × capacity virtual range, a request rounded up to a page, power of
// two or size class, and the sum of every byte on the device all stay
// below 2^51, and even 2^13 address ranges of the largest size fit in the
// 64-bit virtual space above DefaultVABase. snapshot analysis's replay
// device and optrace's largest request are this size too.
const MaxCapacity int64 = 1 << 50

// ErrConfig is returned (wrapped) by NewDevice for an impossible configuration.
var ErrConfig = errors.New("bad device configuration")

// Device is the modelled GPU: a page-granular physical pool plus a virtual
// address space handed out fresh, in increasing order, for as long as it
// lasts (TryReserveVA). It is not safe for concurrent use; each allocator
// owns one Device.
//
// Invariants:
//
//	0 <= used <= capacity - otherUse
//	nextVA only increases, so no two fresh ranges ever overlap
//	vaFree is sorted, its extents PageSize aligned, disjoint, not adjacent,
//	  within [DefaultVABase, nextVA): released ranges, never a live one
type Device struct {
	capacity int64      // total device memory; fixed
	otherUse int64      // weights, CUDA context, other processes; fixed
	used     int64      // physical bytes held by raw allocations and mappings; +Reserve, -Release
	nextVA   uint64     // next fresh virtual address, PageSize aligned; only grows
	vaFree   []vaExtent // ranges given back by ReleaseVA, coalesced; reused only when fresh space runs out
	vaReused int64      // reservations served from vaFree
	vaHook   func(size int64) uint64

	rawAllocs, rawFrees int64 // counts of Reserve and Release calls
}

// NewDevice returns a device of the given capacity with otherUse bytes taken by
// weights and the CUDA context. Both are byte counts; otherUse may be zero.
func NewDevice(capacity, otherUse int64) (*Device, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("%w: capacity %d must be positive", ErrConfig, capacity)
	}
	if capacity > MaxCapacity {
		return nil, fmt.Errorf("%w: capacity %s (%d bytes) is above the model's limit of %s (2^50 bytes); give a capacity at most that large",
			ErrConfig, FormatBytes(capacity), capacity, FormatBytes(MaxCapacity))
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

// ReservePages takes count pages of size bytes each, as count mapping
// calls (cuMemCreate per page), if all of them are free; it takes none
// otherwise. It costs O(1) however many pages: a 1 PiB device has 2^29
// pages of 2 MiB.
func (d *Device) ReservePages(count, size int64) bool {
	if count <= 0 || size <= 0 || count > d.Free()/size {
		return false
	}
	d.used += count * size
	d.rawAllocs += count
	return true
}

// ReleasePages gives back count pages of size bytes taken by ReservePages
// (or Reserve), as count calls. Releasing more than is held panics, as
// Release does.
func (d *Device) ReleasePages(count, size int64) {
	if count <= 0 || size <= 0 || count > d.used/size {
		panic(fmt.Sprintf("mem: release of %d pages of %d bytes with %d held", count, size, d.used))
	}
	d.used -= count * size
	d.rawFrees += count
}

// Unreserve undoes a Reserve of n bytes whose allocation could not be
// completed (no virtual range for it): the bytes are free again and the
// call is not counted, as a cudaMalloc that failed is not.
func (d *Device) Unreserve(n int64) {
	if n <= 0 || n > d.used || d.rawAllocs == 0 {
		panic(fmt.Sprintf("mem: unreserve of %d bytes with %d held", n, d.used))
	}
	d.used -= n
	d.rawAllocs--
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

// ReserveVA is TryReserveVA for callers that cannot run out of address
// space (tests and examples with a handful of ranges): it panics where
// TryReserveVA reports false.
func (d *Device) ReserveVA(size int64) uint64 {
	a, ok := d.TryReserveVA(size)
	if !ok {
		panic(fmt.Sprintf("mem: virtual address space exhausted reserving %d bytes", size))
	}
	return a
}

// MaxRequest is the largest size the allocators compute with: 2^52 bytes,
// four times MaxCapacity. A request above it exceeds any device four times
// over; allocators round it as if it were MaxRequest, so that no size
// derived from it (rounded to 512 B, a page, a power-of-two division, a
// size class) wraps past 2^63, and fail it as out of memory, naming the
// real request. It is also the largest virtual range TryReserveVA hands
// out, which leaves room for the 9/8 × capacity that expandable segments
// and the async pool reserve.
const MaxRequest int64 = 4 * MaxCapacity

// vaExtent is a released virtual range [lo, hi).
type vaExtent struct{ lo, hi uint64 }

// vaBytes is the size of the virtual range TryReserveVA hands out for a
// request of size bytes (at most MaxRequest): whole pages, at least one.
func vaBytes(size int64) uint64 { return uint64(RoundUp(max(size, 1), PageSize)) }

// TryReserveVA returns the start of a virtual range of size bytes, aligned
// to PageSize: a fresh one, above every range handed out before, while the
// 64-bit space above DefaultVABase has room for it; once it has not, the
// lowest range given back with ReleaseVA that holds it. Until the fresh
// space runs out, then, addresses are never reused and identify ranges for
// the whole life of the device (the real driver does reuse them; only order
// matters to the allocators, and fresh ranges come last, as they tend to on
// a real device until it has been running for a while). 2^64 −
// DefaultVABase bytes hold about 4,000 ranges of the largest size, 8 million
// of a 2 TiB device's or 2^28 of vmm's default 64 GiB, so a long run gets
// there, and lives on with the ranges its allocator gave back. It reports
// false, and changes nothing, for a size above MaxRequest or when neither
// holds the range; allocators fail such a request as out of memory. A VA
// hook's range is checked the same way: one that would wrap past 2^64 is
// refused.
func (d *Device) TryReserveVA(size int64) (uint64, bool) {
	if size > MaxRequest {
		return 0, false
	}
	n := vaBytes(size)
	if d.vaHook != nil {
		a := d.vaHook(size)
		return a, a+n > a
	}
	a := d.nextVA
	if a+n > a {
		d.nextVA += n
		return a, true
	}
	for i := range d.vaFree {
		e := &d.vaFree[i]
		if e.hi-e.lo < n {
			continue
		}
		a = e.lo
		if e.lo += n; e.lo == e.hi {
			d.vaFree = slices.Delete(d.vaFree, i, i+1)
		}
		d.vaReused++
		return a, true
	}
	return 0, false
}

// ReleaseVA gives back the range at addr that TryReserveVA handed out for
// size bytes, when its owner is done with it (cuMemAddressFree). Its
// addresses are handed out again only once the fresh space no longer holds
// a request (TryReserveVA). It costs a binary search of the released
// ranges, coalesced, so at most one more than the live ranges between
// them, and a move of those above when it joins none or two of them; a
// range joining the top one, as the most recent ones do, moves none. With a
// VA hook installed it does nothing: the hook owns the addresses. Releasing a range that is not reserved (a
// double release) panics, as Release does.
func (d *Device) ReleaseVA(addr uint64, size int64) {
	if d.vaHook != nil {
		return
	}
	n := vaBytes(min(size, MaxRequest))
	hi := addr + n
	f := d.vaFree
	// i is the first released extent above addr.
	i := len(f)
	if i > 0 && f[i-1].hi > addr {
		i = sort.Search(len(f), func(j int) bool { return f[j].lo > addr })
	}
	if addr < DefaultVABase || hi <= addr || hi > d.nextVA || addr%uint64(PageSize) != 0 ||
		(i > 0 && f[i-1].hi > addr) || (i < len(f) && f[i].lo < hi) {
		panic(fmt.Sprintf("mem: release of the virtual range %#x+%d, which is not reserved", addr, size))
	}
	joinPrev, joinNext := i > 0 && f[i-1].hi == addr, i < len(f) && f[i].lo == hi
	switch {
	case joinPrev && joinNext:
		f[i-1].hi = f[i].hi
		d.vaFree = slices.Delete(f, i, i+1)
	case joinPrev:
		f[i-1].hi = hi
	case joinNext:
		f[i].lo = addr
	default:
		d.vaFree = slices.Insert(f, i, vaExtent{addr, hi})
	}
}

// FreshVA is the fresh virtual address space left, in bytes: 2^64 minus the
// next fresh address (at least 1). It is 0 while a VA hook is installed:
// the hook hands out every address.
func (d *Device) FreshVA() uint64 {
	if d.vaHook != nil {
		return 0
	}
	return -d.nextVA
}

// ReusedVA counts the reservations TryReserveVA served from released
// ranges.
func (d *Device) ReusedVA() int64 { return d.vaReused }

// RoundTrips stands in for what a batch of allocations that gives back all
// it took leaves on the device: calls Reserve calls undone by as many
// Release calls, and fresh virtual ranges of va bytes in all (a multiple of
// PageSize) released again. The call counts rise by calls, the fresh space
// shrinks by va and those bytes join the released ranges. It reports false,
// changing nothing, when the fresh space does not hold va bytes (a
// reservation among them would have reused a released range), va is not
// whole pages or a VA hook is installed.
func (d *Device) RoundTrips(calls int64, va uint64) bool {
	a := d.nextVA
	if d.vaHook != nil || calls < 0 || va%uint64(PageSize) != 0 || (va > 0 && a+va <= a) {
		return false
	}
	d.rawAllocs += calls
	d.rawFrees += calls
	if va == 0 {
		return true
	}
	n := va
	d.nextVA += n
	if k := len(d.vaFree); k > 0 && d.vaFree[k-1].hi == a {
		d.vaFree[k-1].hi = a + n
	} else {
		d.vaFree = append(d.vaFree, vaExtent{a, a + n})
	}
	return true
}

// CheckVA verifies the invariants of the virtual address space: the
// released ranges are sorted, page aligned, disjoint and not adjacent, and
// lie below the next fresh address.
func (d *Device) CheckVA() error {
	lo := DefaultVABase
	for i, e := range d.vaFree {
		if e.lo < lo || (i > 0 && e.lo == lo) || e.hi <= e.lo || e.hi > d.nextVA ||
			e.lo%uint64(PageSize) != 0 || e.hi%uint64(PageSize) != 0 {
			return fmt.Errorf("mem: released virtual range %d [%#x, %#x) out of order or bounds (after %#x, next fresh %#x)",
				i, e.lo, e.hi, lo, d.nextVA)
		}
		lo = e.hi
	}
	return nil
}

// SetVAHook replaces the bump-pointer address space by f, which must return a
// PageSize-aligned range that overlaps no live range. Snapshot replay uses it
// to give new segments the addresses a real trace recorded. Nil restores the
// default.
func (d *Device) SetVAHook(f func(size int64) uint64) { d.vaHook = f }

// Clone returns an independent copy (the VA hook is shared).
func (d *Device) Clone() *Device {
	c := *d
	c.vaFree = slices.Clone(d.vaFree)
	return &c
}

// PageRound rounds n up to whole driver pages: the physical cost of a
// cudaMalloc of n bytes.
func PageRound(n int64) int64 { return RoundUp(n, PageSize) }
