package analysis

import (
	"sort"

	"github.com/gpufrag/gpufrag/snapshot"
)

// annotateOOMs adds to each oom entry of device d what the program said it
// was doing (its user_metadata is set by explainOOM): the innermost
// record_function range (external_annotations) open on d at the entry's
// time_us. One sweep
// over the annotations in file order (PyTorch appends them as they
// happen), the oom entries taken in time order: O(annotations + ooms log
// ooms).
func annotateOOMs(ooms []OOM, anns []snapshot.Annotation, d int) []OOM {
	if len(anns) == 0 {
		return ooms
	}
	order := make([]int, 0, len(ooms))
	for i, o := range ooms {
		if o.TimeUS > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return ooms[order[x]].TimeUS < ooms[order[y]].TimeUS })
	var open []string // names of the ranges open now, innermost last
	k := 0
	for _, i := range order {
		for ; k < len(anns) && anns[k].TimeUS <= ooms[i].TimeUS; k++ {
			a := anns[k]
			if a.Device != d {
				continue
			}
			switch a.Stage {
			case "START":
				open = append(open, a.Name)
			case "END":
				for j := len(open) - 1; j >= 0; j-- {
					if open[j] == a.Name {
						open = append(open[:j], open[j+1:]...)
						break
					}
				}
			}
		}
		if len(open) > 0 {
			ooms[i].During = open[len(open)-1]
		}
	}
	return ooms
}
