// How PyTorch selects an allocator (its capabilities are alloc.Caps).

package registry

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
