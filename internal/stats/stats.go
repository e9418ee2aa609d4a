// Package stats holds the few order statistics several packages report,
// so that each is computed one way everywhere.
package stats

import "slices"

// Median is the middle value of xs, the mean of the two middle ones for an
// even count (numpy.median's convention); 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
