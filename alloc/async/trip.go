// Round trips and the mutation stamp: alloc.TripRecorder and alloc.Stamper,
// as package caching has them (its trip.go states the contracts' use).

package async

import "github.com/gpufrag/gpufrag/alloc"

var (
	_ alloc.TripRecorder = (*Allocator)(nil)
	_ alloc.Stamper      = (*Allocator)(nil)
)

// BeginTrip starts recording a round trip at the allocator's current state:
// its stamp, its count of state-changing calls, its Stats and its bytes
// free for all streams.
//
// Why a trip that passes EndTrip leaves the pool as it found it: a trip is
// n allocations and n frees of exactly those blocks. A block is freed on the
// stream it was allocated on, into that stream's pending frees, and nothing
// but Sync moves pending bytes back to ready memory; an allocation takes
// from ready memory or from its own stream's pending frees. So during a
// trip ready memory can only lose bytes, and if it holds as many bytes at
// the end as at the start (and no page was mapped or unmapped), it lost
// none: ready memory is the same set of bytes, every live block is the same,
// and so every stream's pending frees are the same bytes, because bytes
// move between streams only through ready memory. The free sets are kept
// coalesced, so the same bytes are the same extents: the same Layout, the
// same best fits and the same MaxAllocatable.
func (a *Allocator) BeginTrip() alloc.Trip {
	return a.mut.BeginTrip(a.Stats(), a.ready.Total())
}

// EndTrip reports whether the calls since BeginTrip were exactly n
// allocations and n frees that left the pool where BeginTrip saw it: no
// other state-changing call, Stats equal but for n more Allocs and Frees
// and the allocated peak (no page mapped or unmapped, no out-of-memory
// error, no retry, the same allocated and requested bytes and live blocks),
// and ready memory as large as it was. Then it marks t repeatable and gives
// the state back its stamp from BeginTrip.
func (a *Allocator) EndTrip(t *alloc.Trip, n int64) bool {
	t.N = 0
	return a.ready.Total() == t.Aux && a.mut.EndTrip(t, n, a.Stats())
}

// RepeatTrip repeats a closed trip times times without running it when the
// pool is in the state the trip started (and ended) in: nothing has changed
// it since except other closed trips. It counts the trips' allocations and
// frees and returns true; the peaks need no update, as the trip reached them
// from this same state. Otherwise it changes nothing and returns false.
// times 0 only asks. The caller must make sure the batch it skips is the one
// t recorded (the same sizes, streams and order).
func (a *Allocator) RepeatTrip(t *alloc.Trip, times int64) bool {
	return a.mut.Repeat(t, times, &a.allocs, &a.frees)
}

// Stamp returns the pool's mutation stamp (alloc.Stamper): a fresh value
// after every call that can change the state (Alloc, Free, Sync,
// EmptyCache), and the stamp of the state at BeginTrip after a closed trip
// (EndTrip), until the next such call.
func (a *Allocator) Stamp() uint64 { return a.mut.Stamp() }
