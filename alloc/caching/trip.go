// Round trips and the mutation stamp: alloc.TripRecorder and alloc.Stamper.
// A caller that makes the same closed batch of allocations and frees again
// and again (a serving engine's per-step activation buffers) can have the
// allocator skip a repeat that is known to end where it started. See
// "Optional capabilities" in package alloc for the contracts.

package caching

import "github.com/gpufrag/gpufrag/alloc"

var (
	_ alloc.TripRecorder = (*Allocator)(nil)
	_ alloc.Stamper      = (*Allocator)(nil)
)

// BeginTrip starts recording a round trip at the allocator's current state:
// its stamp, its count of state-changing calls and its Stats.
//
// A trip is a batch of n allocations and n frees, made one after the other
// with no other call to the allocator in between, that frees again every
// block it allocated. Such a batch leaves the allocator as it found it (the
// same segments, the same allocated blocks, so the same canonically merged
// free blocks), unless it had to take memory from the device, ran out of
// memory or had garbage collection age cached blocks. EndTrip checks all
// that; RepeatTrip then replays the batch's counters without running it.
func (a *Allocator) BeginTrip() alloc.Trip {
	return a.mut.BeginTrip(a.Stats(), 0)
}

// EndTrip reports whether the calls since BeginTrip were exactly n
// successful allocations and n successful frees that left the allocator in
// the state BeginTrip saw: no other state-changing call, Stats equal but for
// n more Allocs and Frees and the peaks (no device allocation or free, no
// out-of-memory error, no retry, the same reserved, allocated and requested
// bytes, segments and live blocks), and garbage collection off (its block
// ages move with every lookup). Then it marks t repeatable and gives the
// state back its stamp from BeginTrip.
//
// Only the record ids of free blocks and the generations of handle slots
// differ from the start; neither is observable through sizes, addresses or
// Layout, which is all the stamp promises (alloc.Stamper).
func (a *Allocator) EndTrip(t *alloc.Trip, n int64) bool {
	t.N = 0
	// The Layout is the one at BeginTrip again, so is its stamp: any trip
	// recorded at this stamp stays repeatable. mut itself does not go back,
	// so the stamps the trip's calls had are never given to another state.
	return !a.gcEnabled() && a.mut.EndTrip(t, n, a.Stats())
}

// RepeatTrip repeats a closed trip times times without running it when the
// allocator is in the state the trip started (and ended) in: nothing has
// changed it since except other closed trips. It counts the trips'
// allocations and frees and returns true; the peaks need no update, as the
// trip reached them from this same state. Otherwise it changes nothing and
// returns false, and the caller makes the calls itself. times 0 only asks.
//
// The caller must make sure the batch it skips is the one t recorded (the
// same sizes, streams and order): RepeatTrip cannot see it.
func (a *Allocator) RepeatTrip(t *alloc.Trip, times int64) bool {
	return a.mut.Repeat(t, times, &a.allocs, &a.frees)
}

// Stamp returns the allocator's mutation stamp (alloc.Stamper): a fresh
// value after every call that can change the state (Alloc, Free,
// EmptyCache, Relocate, Seed, ReleaseSegment), and the stamp of the state
// at BeginTrip after a closed trip (EndTrip), until the next such call. Two
// equal stamps of one allocator therefore mean the same segments and blocks
// (sizes, addresses, requests, states), so the same Layout and
// MaxAllocatable: a caller may keep what it derived from them.
func (a *Allocator) Stamp() uint64 { return a.mut.Stamp() }
