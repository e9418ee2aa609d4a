package analysis

// Sizes are the byte figures of one device as gpufrag reports them:
// `gpufrag analyze` (its JSON) and the exporter's gpufrag_*_bytes series
// both take them from Device.Sizes, so that the two agree on the same file
// (exporter's TestSizesAgreeWithAnalyze compares them on every test
// snapshot).
type Sizes struct {
	// Reserved is Σ segment sizes.
	Reserved int64
	// Allocated is Σ allocated blocks, as PyTorch counts allocated_bytes:
	// blocks freed but awaiting other streams' work (pending free) are not
	// in it.
	Allocated int64
	// Requested is Σ bytes callers asked for, over allocated and
	// pending-free blocks.
	Requested int64
	// CachedFree is Σ free blocks inside segments: reserved − allocated −
	// pending free.
	CachedFree int64
	// LargestFreeBlock is the largest free block inside any segment.
	LargestFreeBlock int64
	// DeviceFree (capacity − other use − reserved) and MaxAllocatable (the
	// largest request that would succeed now, which counts device memory
	// the allocator could still map) hold at the device's Capacity: they
	// are facts only when CapacityKnown. analyze prints them with its
	// capacity_source; the exporter exports them only when CapacityKnown.
	DeviceFree     int64
	MaxAllocatable int64
	// CapacityKnown: the capacity was given (Options.Capacity) or recorded
	// by an oom entry of the trace, and holds the reserved bytes; not when
	// it is assumed (DefaultCapacity), stands for the reserved bytes
	// (NoReplay without a capacity) or was raised to them
	// (Device.CapacityRaisedFrom).
	CapacityKnown bool
}

// CapacityKnown reports whether d.Capacity is the device's, given or
// recorded, and at least what the snapshot reserves (Sizes.CapacityKnown).
func (d *Device) CapacityKnown() bool {
	return (d.CapacitySource == "flag" || d.CapacitySource == "oom entry") && d.Capacity >= d.Classes.Reserved && d.CapacityRaisedFrom == 0
}

// Sizes returns d's byte figures (the one definition both analyze and the
// exporter report).
func (d *Device) Sizes() Sizes {
	c, m := d.Classes, d.Metrics
	return Sizes{
		Reserved:         c.Reserved,
		Allocated:        c.Allocated,
		Requested:        c.Requested,
		CachedFree:       c.CachedFree,
		LargestFreeBlock: m.LargestFreeBlock,
		DeviceFree:       m.DeviceFree,
		MaxAllocatable:   m.MaxAllocatable,
		CapacityKnown:    d.CapacityKnown(),
	}
}
