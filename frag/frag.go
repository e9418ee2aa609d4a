// Package frag is the one definition of every fragmentation metric in
// gpufrag (DESIGN.md §4). Every function is pure: a mem.Layout (or plain
// numbers) in, a number out. Nothing else in the project computes these
// ratios itself.
//
// Definitions, over a layout of segments made of active and free blocks:
//
//	reserved           Σ segment sizes
//	allocated          Σ active block sizes
//	requested          Σ bytes callers asked for
//	cached_free        reserved − allocated
//	device_free        capacity − reserved − other use
//	largest_free_block largest free block inside any segment
//	health             largest_free_block ÷ cached_free (1 when cached_free = 0)
//	frag_rate          1 − health
//	internal_frag      (allocated − requested) ÷ allocated (0 when nothing is allocated)
//	unallocated_reserved_share  cached_free ÷ reserved (0 when nothing is reserved)
//	kv_waste           (KV bytes held − bytes holding real tokens) ÷ KV bytes held
//	size_entropy       Shannon entropy (bits) of active block sizes in power-of-two buckets
//	distinct_sizes     number of distinct active block sizes
//	max_allocatable    the largest single request that would succeed now (from the allocator)
//
// Field convention for alerting: health < 0.5 means act; < 0.4 with ample free
// memory means fragmentation is getting worse (Health thresholds below).
package frag

import (
	"math"
	"math/bits"
	"slices"

	"github.com/gpufrag/gpufrag/mem"
)

// Alerting thresholds from the field (see DESIGN.md §4).
const (
	// HealthAct: below this health ratio an operator should act.
	HealthAct = 0.5
	// HealthWorsening: below this, with ample free memory, fragmentation is growing.
	HealthWorsening = 0.4
)

// Metrics are all layout-derived metrics at one moment.
type Metrics struct {
	Capacity         int64   `json:"capacity_bytes"`
	OtherUse         int64   `json:"other_use_bytes"`
	Reserved         int64   `json:"reserved_bytes"`
	Allocated        int64   `json:"allocated_bytes"`
	Requested        int64   `json:"requested_bytes"`
	CachedFree       int64   `json:"cached_free_bytes"`
	DeviceFree       int64   `json:"device_free_bytes"`
	LargestFreeBlock int64   `json:"largest_free_block_bytes"`
	MaxAllocatable   int64   `json:"max_allocatable_bytes"`
	Health           float64 `json:"health"`
	FragRate         float64 `json:"frag_rate"`
	InternalFrag     float64 `json:"internal_frag"`
	UnallocReserved  float64 `json:"unallocated_reserved_share"`
	SizeEntropy      float64 `json:"size_entropy_bits"`
	DistinctSizes    int     `json:"distinct_sizes"`
	Segments         int     `json:"segments"`
	ActiveBlocks     int     `json:"active_blocks"`
	FreeBlocks       int     `json:"free_blocks"`
}

// Compute derives every metric from a layout in one pass over its blocks
// (plus a sort of the active sizes for the distinct-size count).
func Compute(l mem.Layout) Metrics {
	c := l.Classes()
	m := Metrics{
		Capacity:         l.Capacity,
		OtherUse:         l.OtherUse,
		Reserved:         c.Reserved(),
		Allocated:        c.Allocated(),
		Requested:        c.Live,
		CachedFree:       c.CachedFree,
		DeviceFree:       c.DeviceFree,
		LargestFreeBlock: LargestFreeBlock(l),
		MaxAllocatable:   l.MaxAllocatable,
		Segments:         len(l.Segments),
	}
	m.Health = Health(m.LargestFreeBlock, m.CachedFree)
	m.FragRate = 1 - m.Health
	m.InternalFrag = InternalFrag(m.Allocated, m.Requested)
	m.UnallocReserved = UnallocatedReservedShare(m.CachedFree, m.Reserved)
	m.SizeEntropy, m.DistinctSizes = SizeDispersion(ActiveSizes(l))
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.State == mem.Free {
				m.FreeBlocks++
			} else {
				m.ActiveBlocks++
			}
		}
	}
	return m
}

// LargestFreeBlock is the largest free block inside any segment (0 if none).
func LargestFreeBlock(l mem.Layout) int64 {
	var best int64
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.State == mem.Free && b.Size > best {
				best = b.Size
			}
		}
	}
	return best
}

// Health is largest_free_block ÷ cached_free: 1 when all cached free memory is
// one block (or there is none), near 0 when it is scattered in small pieces.
func Health(largestFree, cachedFree int64) float64 {
	if cachedFree <= 0 {
		return 1
	}
	return float64(largestFree) / float64(cachedFree)
}

// FragRate is 1 − Health.
func FragRate(largestFree, cachedFree int64) float64 { return 1 - Health(largestFree, cachedFree) }

// InternalFrag is (allocated − requested) ÷ allocated: the share of allocated
// bytes lost to rounding. 0 when nothing is allocated.
func InternalFrag(allocated, requested int64) float64 {
	if allocated <= 0 {
		return 0
	}
	return float64(allocated-requested) / float64(allocated)
}

// UnallocatedReservedShare is cached_free ÷ reserved (PyTorch's "reserved but
// unallocated" as a share). 0 when nothing is reserved.
func UnallocatedReservedShare(cachedFree, reserved int64) float64 {
	if reserved <= 0 {
		return 0
	}
	return float64(cachedFree) / float64(reserved)
}

// KVWaste is (KV bytes held for sequences − bytes holding real tokens) ÷ KV
// bytes held. 0 when nothing is held.
func KVWaste(held, used int64) float64 {
	if held <= 0 {
		return 0
	}
	return float64(held-used) / float64(held)
}

// ActiveSizes lists the sizes of active blocks in address order.
func ActiveSizes(l mem.Layout) []int64 {
	var out []int64
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.State != mem.Free {
				out = append(out, b.Size)
			}
		}
	}
	return out
}

// SizeDispersion returns the Shannon entropy in bits of the sizes' histogram
// over power-of-two buckets (bucket k holds sizes in [2^k, 2^(k+1))) and the
// number of distinct sizes. The more sizes in play, the more holes a cache
// accumulates. sizes is not modified.
func SizeDispersion(sizes []int64) (entropyBits float64, distinct int) {
	if len(sizes) == 0 {
		return 0, 0
	}
	var buckets [64]int
	for _, s := range sizes {
		if s > 0 {
			buckets[63-bits.LeadingZeros64(uint64(s))]++
		}
	}
	n := float64(len(sizes))
	for _, c := range buckets {
		if c > 0 {
			p := float64(c) / n
			entropyBits -= p * math.Log2(p)
		}
	}
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	distinct = len(slices.Compact(sorted))
	return entropyBits + 0, distinct // + 0 turns -0 into 0
}
