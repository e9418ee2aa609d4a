package alloc

// Mutations is the bookkeeping behind Stamper and TripRecorder that an
// allocator keeps in a field: a count of the calls that may change its
// state, which never goes back and is the allocator's stamp but right after
// a closed round trip, when the state is the one the trip started in and
// the stamp is that state's. The zero value is an allocator that has made
// no call. Copying it (in a Clone) copies the stamp; stamps of two
// allocators are still not comparable.
type Mutations struct {
	n      uint64 // calls that may have changed the state
	at, as uint64 // while n == at, the stamp is as (a closed trip's start)
}

// Mutated counts one call that may change the state.
func (m *Mutations) Mutated() { m.n++ }

// Stamp is the stamp of the state now (Stamper.Stamp).
func (m *Mutations) Stamp() uint64 {
	if m.n == m.at {
		return m.as
	}
	return m.n
}

// BeginTrip records the start of a round trip at stats, the allocator's
// Stats now; aux is an allocator's own figure for its EndTrip (Trip.Aux).
func (m *Mutations) BeginTrip(stats Stats, aux int64) Trip {
	return Trip{Mark: m.Stamp(), Calls: m.n, Stats: stats, Aux: aux}
}

// EndTrip makes the checks every TripRecorder makes of a batch of n
// allocations and n frees (its own checks come first): the calls since
// BeginTrip were exactly 2n, and now, the allocator's Stats, is t.Stats but
// for n more Allocs and Frees and the peaks (no device call, no
// out-of-memory error, no retry, the same bytes, segments and live blocks).
// Then t is closed and the state gets back its stamp from BeginTrip.
func (m *Mutations) EndTrip(t *Trip, n int64, now Stats) bool {
	t.N = 0
	if n <= 0 || m.n-t.Calls != uint64(2*n) {
		return false
	}
	now.Allocs -= n
	now.Frees -= n
	now.PeakReserved, now.PeakAllocated = t.Stats.PeakReserved, t.Stats.PeakAllocated
	if now != t.Stats {
		return false
	}
	m.at, m.as = m.n, t.Mark
	t.N = n
	return true
}

// Repeat is RepeatTrip for an allocator whose Stats count allocations and
// frees in *allocs and *frees: when the closed trip t may stand in for times
// runs now (the allocator is in the state t started in), it adds the runs'
// allocations and frees and returns true; otherwise it changes nothing.
func (m *Mutations) Repeat(t *Trip, times int64, allocs, frees *int64) bool {
	if t.N <= 0 || times < 0 || m.Stamp() != t.Mark {
		return false
	}
	*allocs += times * t.N
	*frees += times * t.N
	return true
}
