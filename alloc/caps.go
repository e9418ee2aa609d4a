// Capabilities: what an allocator can do beyond Allocator, known from a
// built allocator (CapsOf) or from a parsed spec (Described) without
// linking any allocator package.

package alloc

// Caps says which of this package's optional interfaces an allocator
// implements: what callers may ask of it without naming it. The registry
// (alloc/registry) declares them per kind; kv/strategy and defrag decide from
// them, so they depend on this package, not on every allocator.
type Caps struct {
	// Relocates: Relocator, so defrag can move its live blocks, under the
	// rules Relocation describes (Relocator.Relocation).
	Relocates  bool
	Relocation Relocation
	// GrowsInPlace: Grower, so a live block grows without moving (a vmm:P
	// KV strategy maps its pages this way), by GrowUnit bytes at a time.
	GrowsInPlace bool
	GrowUnit     int64
	// Stamps: Stamper, a cheap "nothing changed" test.
	Stamps bool
	// RecordsTrips: TripRecorder, so repeated alloc/free round trips can be
	// confirmed and replayed cheaply.
	RecordsTrips bool
	// Syncs: Syncer, behaviour that depends on stream sync points.
	Syncs bool
}

// Relocation is how a Relocator's blocks may move and how its layout
// behaves: what a compaction planner (defrag) must know to plan moves that
// Relocate accepts and to say what they gain. The zero value is one
// contiguous pool whose segments are never returned, where a block moves
// to memory free before the move.
type Relocation struct {
	// Releasable: wholly free segments go back to the device (EmptyCache),
	// so emptying a segment gains its whole size.
	Releasable bool
	// Slots: free space is a set of fixed slots that never merge (size
	// classes); a block moves only to a free slot of its own pool.
	Slots bool
	// Streams: free memory serves only requests of the stream it was
	// allocated on (and blocks move within their stream).
	Streams bool
	// SizePools: requests of at most 1 MiB come from the "small" pool and
	// larger ones from "large"; small-pool blocks serve no larger request,
	// and expandable segments map 2 MiB pages in the small pool and 20 MiB
	// in the large one (PyTorch's caching allocator).
	SizePools bool
	// Memmove: the block's own range counts as free, so a destination may
	// overlap its source (a memmove). Otherwise the destination must lie in
	// memory that is free before the move.
	Memmove bool
}

// CapsOf returns the capabilities allocator a really implements (its type's
// optional interfaces, GrowUnit from a itself). Kinds declare theirs as
// data in alloc/registry; a test there holds each declaration to CapsOf of a
// built allocator, and kv/strategy checks an allocator it is handed with it.
func CapsOf(a Allocator) Caps {
	var c Caps
	if r, ok := a.(Relocator); ok {
		c.Relocates, c.Relocation = true, r.Relocation()
	}
	if g, ok := a.(Grower); ok {
		c.GrowsInPlace, c.GrowUnit = true, g.GrowUnit()
	}
	_, c.Stamps = a.(Stamper)
	_, c.RecordsTrips = a.(TripRecorder)
	_, c.Syncs = a.(Syncer)
	return c
}

// Described is an allocator known by a parsed spec, before (or without) one
// is built: alloc/registry.Spec implements it. Packages that decide by
// capabilities (kv/strategy's pair check, defrag's rules) take a Described,
// so that they link no allocator implementation.
type Described interface {
	// String is the spec as written ("caching:expandable_segments:True").
	String() string
	// Name is the allocator kind's name ("caching").
	Name() string
	// Caps is what an allocator built from the spec implements, GrowUnit
	// included.
	Caps() Caps
}
