package cli

import "github.com/gpufrag/gpufrag/internal/gcgoal"

// engineGCPercent is the collector's goal (GOGC) for the commands whose
// time is the simulation engine's steps: simulate and advise. Measured by
// instruction counts, which the machine's load does not move (callgrind,
// GOMAXPROCS=1; docs/benchmarks.md, "The collector's goal, by
// instructions"): simulate on the Azure conversation trace runs 1,082M
// instructions at GOGC=100, 939M at 200 (-13%), 933M at 400 and 906M
// with the collector off; peak RSS 37.7, 40.1 and 46.9 MB at 100, 400 and
// off. Between cycles the engine runs without write barriers: the cost
// is the collector marking while the steps write pointers, not the
// allocation, which is small (25 MB in all). 200 takes nearly all of
// the gain for at most half again the heap's headroom. Tuned on the Azure
// conversation trace; validated on ShareGPT (-20%) and Mooncake (-1%)
// (same section).
const engineGCPercent = 200

// engineGC sets the collector's goal to engineGCPercent unless the user
// set GOGC or GOMEMLIMIT (theirs win), and returns the function that
// restores the previous goal.
func engineGC() (restore func()) {
	return gcgoal.Set(engineGCPercent, "GOGC", "GOMEMLIMIT")
}
