// A trace's requests at a given rate: the arrival and bucketing steps of
// Build, for callers that run one trace at many rates (advise's search).

package scenario

import (
	"math/rand/v2"
	"slices"

	"github.com/gpufrag/gpufrag/workload"
)

// TraceAt returns the requests of a run of trace t at rate requests per
// second with prompts rounded up to a multiple of bucket tokens (0: as they
// are), made as Build makes a workload.trace section's with that rate and
// bucket and the scenario seed seed: a timed trace's arrivals rescaled to
// rate (workload.Rescale; rate 0 keeps the file's), an untimed one given
// Poisson arrivals at rate drawn from seed's arrival stream, then the
// prompts bucketed (workload.Bucket). t is not modified; the requests are
// a copy (their prefix ids shared with t's).
//
// Rescaling and bucketing commute (one moves arrivals, the other prompt
// lengths), so a caller may draw an untimed trace's arrivals once (rate
// 1, bucket 0) and rescale that to each rate, as advise's search does.
func TraceAt(t *workload.Trace, rate float64, bucket int, seed uint64) ([]workload.Request, error) {
	c := *t
	c.Requests = slices.Clone(t.Requests)
	switch {
	case c.Timed && rate != 0:
		if err := workload.Rescale(&c, rate); err != nil {
			return nil, err
		}
	case !c.Timed:
		ap, err := workload.Poisson(rate, rand.New(rand.NewPCG(seed, streamArrivals)))
		if err != nil {
			return nil, err
		}
		if err := workload.AssignArrivals(&c, ap); err != nil {
			return nil, err
		}
	}
	if bucket != 0 {
		if err := workload.Bucket(&c, bucket); err != nil {
			return nil, err
		}
	}
	return c.Requests, nil
}
