//go:build unix

package protocol

import "syscall"

// cpuSeconds is the user + system CPU time this process has used, so that
// benchmarks report cost per CPU-second even on a loaded machine (wall time
// there counts the time other processes ran).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
