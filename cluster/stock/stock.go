package stock

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// StockPolicies are the policies that have a stock scheduler
// configuration: Volcano binpack, and NodeResourcesFit's packing
// strategies (spread, LeastAllocated, is Kubernetes' default and spreads).
var StockPolicies = []string{"volcano-binpack", "mostallocated", "rtcr"}

// IsStock reports whether spec names one of StockPolicies (options are not
// checked; NewPolicy does that).
func IsStock(spec string) bool {
	name, _, _ := strings.Cut(spec, ":")
	return slices.Contains(StockPolicies, name)
}

// StockGrid is the set of binpack and NodeResourcesFit settings searched
// when none is given: CPU weight 1, 2 or 5 (the Volcano source's example
// uses 5, a published DGX Cloud tuning 2), memory 1, and nvidia.com/gpu
// unlisted or weighted 2 (the source's example), 8 (the DGX Cloud tuning)
// or 16; Kubernetes' MostAllocated and RequestedToCapacityRatio with GPU
// weight 0, 1 or 3.
func StockGrid() []string {
	var out []string
	for _, cpu := range []int{1, 2, 5} {
		for _, gpu := range []int{0, 2, 8, 16} {
			out = append(out, fmt.Sprintf("volcano-binpack:cpu=%d,memory=1,gpu=%d", cpu, gpu))
		}
	}
	for _, s := range []string{"mostallocated", "rtcr"} {
		for _, gpu := range []int{0, 1, 3} {
			out = append(out, fmt.Sprintf("%s:cpu=1,memory=1,gpu=%d", s, gpu))
		}
	}
	return out
}

// StockResult is one stock setting and how it packed.
type StockResult struct {
	Spec   string         // as given (Summary.Policy)
	Policy cluster.Policy // *VolcanoBinpack or *KubeFit
	// Unallocated is the share of GPU capacity left unallocated at 100%
	// arrived demand (Summary.Nearest), mean and deviation over seeds.
	Unallocated protocol.MeanStd
	// UnallocatedGPUs is the mean number of GPUs left unallocated there.
	UnallocatedGPUs float64
}

// RankStock ranks the summaries of stock settings (Grid.Summaries, each
// named by its spec) by their mean unallocated share at 100% arrived
// demand, fewest first; equal shares keep their order. A summary that does
// not name a stock setting is an error.
func RankStock(sums []protocol.Summary) ([]StockResult, error) {
	out := make([]StockResult, 0, len(sums))
	for i := range sums {
		s := &sums[i]
		if !IsStock(s.Policy) {
			return nil, fmt.Errorf("%w %q: only %s have a stock configuration", cluster.ErrUnknownPolicy, s.Policy, strings.Join(StockPolicies, ", "))
		}
		pol, err := cluster.NewPolicy(s.Policy, nil)
		if err != nil {
			return nil, err
		}
		p := s.Nearest(100)
		out = append(out, StockResult{Spec: s.Policy, Policy: pol, Unallocated: p.UnallocatedShare(), UnallocatedGPUs: p.UnallocatedGPUs.Mean})
	}
	slices.SortStableFunc(out, func(a, b StockResult) int {
		switch {
		case a.Unallocated.Mean < b.Unallocated.Mean:
			return -1
		case a.Unallocated.Mean > b.Unallocated.Mean:
			return 1
		}
		return 0
	})
	return out, nil
}

// BestStock returns the first Volcano binpack setting and the first
// NodeResourcesFit setting of ranked (RankStock's order: the best of
// each); nil where ranked has none.
func BestStock(ranked []StockResult) (volcano, kube *StockResult) {
	for i := range ranked {
		switch ranked[i].Policy.(type) {
		case *cluster.VolcanoBinpack:
			if volcano == nil {
				volcano = &ranked[i]
			}
		case *cluster.KubeFit:
			if kube == nil {
				kube = &ranked[i]
			}
		}
	}
	return volcano, kube
}
