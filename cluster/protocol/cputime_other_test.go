//go:build !unix

package protocol

import "time"

var start = time.Now()

// cpuSeconds falls back to wall time where getrusage is missing.
func cpuSeconds() float64 { return time.Since(start).Seconds() }
