package spec

import "strings"

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
