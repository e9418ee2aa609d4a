// Capabilities: what an allocator can do beyond alloc.Allocator, and how
// PyTorch selects it.

package spec

import "github.com/gpufrag/gpufrag/alloc"

// Caps says which of package alloc's optional interfaces an allocator
// implements: what callers may ask of it without naming it.
type Caps struct {
	// Relocates: alloc.Relocator, so defrag can move its live blocks.
	Relocates bool
	// GrowsInPlace: alloc.Grower, so a live block grows without moving (a
	// vmm:P KV strategy maps its pages this way), by GrowUnit bytes at a
	// time.
	GrowsInPlace bool
	GrowUnit     int64
	// Stamps: alloc.Stamper, a cheap "nothing changed" test.
	Stamps bool
	// RecordsTrips: alloc.TripRecorder, so repeated alloc/free round trips
	// can be confirmed and replayed cheaply.
	RecordsTrips bool
	// Syncs: alloc.Syncer, behaviour that depends on stream sync points.
	Syncs bool
}

// CapsOf returns the capabilities allocator a really implements (its type's
// optional interfaces, GrowUnit from a itself). Kinds declare theirs as
// data; a test holds each declaration to CapsOf of a built allocator, and
// kv/strategy checks an allocator it is handed with it.
func CapsOf(a alloc.Allocator) Caps {
	var c Caps
	_, c.Relocates = a.(alloc.Relocator)
	if g, ok := a.(alloc.Grower); ok {
		c.GrowsInPlace, c.GrowUnit = true, g.GrowUnit()
	}
	_, c.Stamps = a.(alloc.Stamper)
	_, c.RecordsTrips = a.(alloc.TripRecorder)
	_, c.Syncs = a.(alloc.Syncer)
	return c
}

// PyTorch says how PyTorch selects an allocator of a Kind; the zero value
// means it cannot (gpufrag's own models).
type PyTorch struct {
	// Native: the kind is PyTorch's own CUDA caching allocator, and a spec's
	// arguments are the PYTORCH_CUDA_ALLOC_CONF value.
	Native bool
	// Backend is the PYTORCH_CUDA_ALLOC_CONF value that switches PyTorch to
	// this kind as another backend ("backend:cudaMallocAsync"); a spec's
	// arguments are then set on the backend, not through the variable.
	Backend string
}
