package registry

import (
	"strings"

	"github.com/gpufrag/gpufrag/mem"
)

// RelocationSummary lists the kinds by whether defrag can move their blocks
// (alloc.Caps.Relocates), in Kinds' order, for help texts: "caching,
// sizeclass, arena (async, direct and vmm move nothing)".
func RelocationSummary() string {
	var moves, fixed []string
	for _, k := range Kinds {
		if k.Caps.Relocates {
			moves = append(moves, k.Name)
		} else {
			fixed = append(fixed, k.Name)
		}
	}
	if len(fixed) == 0 {
		return strings.Join(moves, ", ")
	}
	last := fixed[len(fixed)-1]
	if len(fixed) > 1 {
		last = strings.Join(fixed[:len(fixed)-1], ", ") + " and " + last
	}
	return strings.Join(moves, ", ") + " (" + last + " move nothing)"
}

// ForPools names the allocator whose layout l is from its segments' pool
// names, for a layout that does not say (a saved layout without
// "allocator"): "small" and "large" are the caching allocator's pools,
// "arena", "vmm", "async" and "direct" those kinds'; the first segment
// with one of these decides, and a layout with none (size-class pools such
// as "8MiB") is sizeclass's. A layout without segments, which says
// nothing, gets the default allocator (Default).
func ForPools(l mem.Layout) Spec {
	if len(l.Segments) == 0 {
		return Default()
	}
	for _, s := range l.Segments {
		switch s.Pool {
		case "small", "large":
			return MustParse("caching")
		case "arena", "vmm", "async", "direct":
			return MustParse(s.Pool)
		}
	}
	return MustParse("sizeclass")
}
