//go:build !linux

package cli

// hugeHeap does nothing where Linux's transparent huge pages do not exist.
func hugeHeap(int) {}
