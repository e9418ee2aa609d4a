// Size rounding and segment sizing.
// See package alloc for the overview.

package caching

import (
	"math/bits"

	"github.com/gpufrag/gpufrag/mem"
)

// Constants of c10/cuda/CUDACachingAllocator.cpp (research note §1). They are
// PyTorch's, not tunables: changing them would stop modelling PyTorch.
const (
	// kMinBlockSize: every size is rounded to a multiple of 512 bytes.
	kMinBlockSize int64 = 512
	// kSmallSize: requests up to 1 MiB (inclusive, after rounding) use the
	// small pool.
	kSmallSize = mem.MiB
	// kSmallBuffer: small-pool segments are 2 MiB; also the expandable page
	// size of the small pool.
	kSmallBuffer = 2 * mem.MiB
	// kLargeBuffer: requests in (1 MiB, 10 MiB) get a 20 MiB segment; also the
	// expandable page size of the large pool and the default R.
	kLargeBuffer = 20 * mem.MiB
	// kMinLargeAlloc: requests of at least 10 MiB get their own segment,
	// rounded up to kRoundLarge.
	kMinLargeAlloc = 10 * mem.MiB
	// kRoundLarge: rounding unit of large segments.
	kRoundLarge = 2 * mem.MiB
)

// roundupDivisions returns the divisions for size's interval: index
// floor(log2 size) − 20, clamped to [0, 15].
func (c *Config) roundupDivisions(size int64) int64 {
	idx := bits.Len64(uint64(size)) - 1 - 20
	idx = max(0, min(idx, roundupIntervals-1))
	return c.RoundupDivisions[idx]
}

// roundupPower2NextDivision rounds size up to the next of divisions equal
// steps between the powers of two around it (1200 with 4 divisions → 1280).
func roundupPower2NextDivision(size, divisions int64) int64 {
	if isPow2(size) {
		return size
	}
	floor := int64(1) << (bits.Len64(uint64(size)) - 1)
	step := floor >> (bits.Len64(uint64(divisions)) - 1)
	if step == 0 {
		return 2 * floor
	}
	return mem.RoundUp(size, step)
}

// roundSize is round_size: 512 for tiny requests, the next division when
// roundup_power2_divisions applies, else the next multiple of 512.
func (c *Config) roundSize(size int64) int64 {
	if size < kMinBlockSize {
		return kMinBlockSize
	}
	if d := c.roundupDivisions(size); d > 1 && size > kMinBlockSize*d {
		return roundupPower2NextDivision(size, d)
	}
	return mem.RoundUp(size, kMinBlockSize)
}

// allocationSize is get_allocation_size: the cudaMalloc size for a rounded
// request: 2 MiB up to 1 MiB, 20 MiB below 10 MiB, else rounded to 2 MiB.
func allocationSize(size int64) int64 {
	switch {
	case size <= kSmallSize:
		return kSmallBuffer
	case size < kMinLargeAlloc:
		return kLargeBuffer
	default:
		return mem.RoundUp(size, kRoundLarge)
	}
}

// RoundSize exposes round_size for a configuration (for reports and tests).
func RoundSize(c Config, size int64) int64 { return c.roundSize(size) }

// AllocationSize exposes get_allocation_size of a rounded request.
func AllocationSize(rounded int64) int64 { return allocationSize(rounded) }
