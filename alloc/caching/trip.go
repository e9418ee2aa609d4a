// Round trips: a caller that makes the same closed batch of allocations and
// frees again and again (a serving engine's per-step activation buffers) can
// have the allocator skip a repeat that is known to end where it started.

package caching

// Trip records one round trip: a batch of n allocations and n frees, made
// one after the other with no other call to the allocator in between, that
// frees again every block it allocated. Such a batch leaves the allocator as
// it found it (the same segments, the same allocated blocks, so the same
// canonically merged free blocks), unless it had to take memory from the
// device, ran out of memory or had garbage collection age cached blocks.
// EndTrip checks all that; RepeatTrip then replays the batch's counters
// without running it.
//
// The zero Trip is not repeatable.
type Trip struct {
	start              uint64 // mutation stamp at BeginTrip
	allocs, frees      int64
	ooms, retries      int64
	devAllocs, devFree int64
	reserved           int64
	allocated          int64
	requested          int64
	live               int
	n                  int64 // allocations (and frees) of a closed trip
	closed             bool
}

// BeginTrip starts recording a round trip at the allocator's current state.
func (a *Allocator) BeginTrip() Trip {
	return Trip{start: a.mut, allocs: a.allocs, frees: a.frees, ooms: a.ooms, retries: a.retries,
		devAllocs: a.deviceAllocs, devFree: a.deviceFrees, reserved: a.reserved, allocated: a.allocated,
		requested: a.requested, live: a.handles.Len()}
}

// EndTrip reports whether the calls since BeginTrip were exactly n
// successful allocations and n successful frees that left the allocator in
// the state BeginTrip saw: no device allocation or free, no out-of-memory
// error, no retry, no other mutating call, the same reserved, allocated and
// requested bytes and live blocks, and garbage collection off (its block
// ages move with every lookup). Then it marks t repeatable.
//
// Only the record ids of free blocks and the generations of handle slots
// differ from the start; neither is observable through sizes, addresses,
// Stats or Layout.
func (a *Allocator) EndTrip(t *Trip, n int64) bool {
	t.closed = false
	if n <= 0 || a.gcEnabled() ||
		a.mut-t.start != uint64(2*n) || a.allocs-t.allocs != n || a.frees-t.frees != n ||
		a.ooms != t.ooms || a.retries != t.retries || a.deviceAllocs != t.devAllocs || a.deviceFrees != t.devFree ||
		a.reserved != t.reserved || a.allocated != t.allocated || a.requested != t.requested || a.handles.Len() != t.live {
		return false
	}
	// The state is the one at BeginTrip again: so is its stamp. Any trip
	// recorded at this stamp stays repeatable.
	a.mut = t.start
	t.n, t.closed = n, true
	return true
}

// RepeatTrip repeats a closed trip times times without running it when the
// allocator is in the state the trip started (and ended) in: nothing has
// mutated it since except other closed trips. It counts the trips'
// allocations and frees and returns true; the peaks need no update, as the
// trip reached them from this same state. Otherwise it changes nothing and
// returns false, and the caller makes the calls itself. times 0 only asks.
//
// The caller must make sure the batch it skips is the one t recorded (the
// same sizes, streams and order): RepeatTrip cannot see it.
func (a *Allocator) RepeatTrip(t *Trip, times int64) bool {
	if !t.closed || a.mut != t.start || times < 0 {
		return false
	}
	a.allocs += times * t.n
	a.frees += times * t.n
	return true
}

// Stamp returns the allocator's mutation stamp: it moves with every call
// that can change the state (Alloc, Free, EmptyCache, Relocate, Seed,
// ReleaseSegment) and winds back over a closed trip (EndTrip). Two equal
// stamps of one allocator therefore mean the same segments and blocks
// (sizes, addresses, requests, states), so the same Layout, MaxAllocatable
// and Stats apart from the Allocs and Frees counters: a caller may keep
// what it derived from them.
func (a *Allocator) Stamp() uint64 { return a.mut }
