package protocol

import "math"

// MeanStd is a mean and a sample standard deviation (n-1; 0 for one value).
type MeanStd struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// NewMeanStd summarises xs.
func NewMeanStd(xs []float64) MeanStd {
	if len(xs) == 0 {
		return MeanStd{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	if len(xs) == 1 {
		return MeanStd{Mean: m}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return MeanStd{Mean: m, Std: math.Sqrt(ss / float64(len(xs)-1))}
}

// StatPoint is Point summarised over seeds.
type StatPoint struct {
	Arrived         int     `json:"arrived_pct"`
	Seeds           int     `json:"seeds"` // runs with samples at this percent
	AllocRatio      MeanStd `json:"alloc_ratio"`
	UnallocatedGPUs MeanStd `json:"unallocated_gpus"`
	FragTotal       MeanStd `json:"frag_total"`
	FragRate        MeanStd `json:"frag_rate"`
	WholeFreeNodes  MeanStd `json:"whole_free_nodes"`
	StrandedNodes   MeanStd `json:"stranded_nodes"`
	PartlyUsedNodes MeanStd `json:"partly_used_nodes"`
}

// Summary is one policy over several seeds.
type Summary struct {
	Policy        string  `json:"policy"`
	Seeds         int     `json:"seeds"`
	Pods          MeanStd `json:"pods"`
	Failed        MeanStd `json:"failed"`
	CapacityMilli int64   `json:"capacity_milli"`
	// FirstFailureArrived and FirstFailureUnallocated summarise
	// Run.FirstFailure over the runs that had one (FirstFailures of them).
	FirstFailures           int         `json:"first_failures"`
	FirstFailureArrived     MeanStd     `json:"first_failure_arrived_share"`
	FirstFailureUnallocated MeanStd     `json:"first_failure_unallocated_share"`
	Curve                   []StatPoint `json:"curve"`
}

// Aggregate summarises runs of one policy (different seeds) point by point.
// The runs must share a capacity and curve length.
func Aggregate(runs []*Run) Summary {
	if len(runs) == 0 {
		return Summary{}
	}
	s := Summary{Policy: runs[0].Policy, Seeds: len(runs), CapacityMilli: runs[0].CapacityMilli}
	var pods, failed, ffArr, ffUn []float64
	for _, r := range runs {
		pods = append(pods, float64(r.Pods))
		failed = append(failed, float64(r.Failed))
		if r.FirstFailure != nil {
			ffArr = append(ffArr, r.FirstFailure.ArrivedShare)
			ffUn = append(ffUn, r.FirstFailure.UnallocatedShare)
		}
	}
	s.FirstFailures = len(ffArr)
	s.FirstFailureArrived, s.FirstFailureUnallocated = NewMeanStd(ffArr), NewMeanStd(ffUn)
	s.Pods, s.Failed = NewMeanStd(pods), NewMeanStd(failed)
	n := len(runs[0].Curve)
	s.Curve = make([]StatPoint, n)
	for x := range n {
		var a, u, ft, fr, wf, st, pu []float64
		for _, r := range runs {
			p, ok := r.At(x)
			if !ok {
				continue
			}
			a, u, ft, fr = append(a, p.AllocRatio), append(u, p.UnallocatedGPUs), append(ft, p.FragTotal), append(fr, p.FragRate)
			wf, st, pu = append(wf, p.WholeFreeNodes), append(st, p.StrandedNodes), append(pu, p.PartlyUsedNodes)
		}
		s.Curve[x] = StatPoint{Arrived: x, Seeds: len(a), AllocRatio: NewMeanStd(a), UnallocatedGPUs: NewMeanStd(u),
			FragTotal: NewMeanStd(ft), FragRate: NewMeanStd(fr), WholeFreeNodes: NewMeanStd(wf),
			StrandedNodes: NewMeanStd(st), PartlyUsedNodes: NewMeanStd(pu)}
	}
	return s
}
