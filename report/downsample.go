package report

import "slices"

// MaxPointsPerSeries is the most points of one series that a chart draws.
// Longer series are reduced with Downsample before drawing, which keeps
// SVG output small (roughly 15 bytes per point) and rendering fast.
const MaxPointsPerSeries = 2000

// Downsample returns s reduced to at most maxPoints points, or s itself
// when it is not longer than that (or maxPoints < 5 is asked, which is
// treated as 5). A series whose X and Y differ in length is returned as is;
// LineChart reports it as an error.
//
// The reduction is M4 over index buckets: the points are split by index
// into maxPoints/5 buckets of (nearly) equal count, and each bucket keeps,
// in their original order, its first and last point, the first point with
// the smallest and the first with the largest Y among finite points, and
// its first non-finite point, if any, so that a gap (NaN) still breaks the
// line. Spikes therefore survive: the global minimum and maximum of Y are
// always kept, as are the first and last points. The result depends only
// on the input, so output stays deterministic. Bucketing by index rather
// than by X assumes roughly even sampling, which holds for the time series
// this package draws; the extremes are kept either way.
func Downsample(s Series, maxPoints int) Series {
	n := len(s.Y)
	if len(s.X) != n || n <= maxPoints {
		return s
	}
	if maxPoints < 5 {
		maxPoints = 5
		if n <= maxPoints {
			return s
		}
	}
	buckets := maxPoints / 5
	out := Series{Name: s.Name, X: make([]float64, 0, buckets*5), Y: make([]float64, 0, buckets*5)}
	idx := make([]int, 0, 5)
	for b := range buckets {
		lo := b * n / buckets
		hi := (b + 1) * n / buckets
		if lo >= hi {
			continue
		}
		idx = append(idx[:0], lo, hi-1)
		minI, maxI, gapI := -1, -1, -1
		for i := lo; i < hi; i++ {
			if !finite(s.X[i]) || !finite(s.Y[i]) {
				if gapI < 0 {
					gapI = i
				}
				continue
			}
			if minI < 0 || s.Y[i] < s.Y[minI] {
				minI = i
			}
			if maxI < 0 || s.Y[i] > s.Y[maxI] {
				maxI = i
			}
		}
		for _, i := range []int{minI, maxI, gapI} {
			if i >= 0 {
				idx = append(idx, i)
			}
		}
		slices.Sort(idx)
		idx = slices.Compact(idx)
		for _, i := range idx {
			out.X = append(out.X, s.X[i])
			out.Y = append(out.Y, s.Y[i])
		}
	}
	return out
}
