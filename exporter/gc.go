package exporter

import "github.com/gpufrag/gpufrag/internal/gcgoal"

// DaemonGCPercent is the collector's goal (GOGC) of the exporter daemon
// (exporter/daemon.Run). Between two scrapes 15 s apart the daemon's
// polls and rescans make megabytes of garbage (4.3 MB a round of 128
// polls, BenchmarkPollRound); at Go's default of 100 over a heap of a few
// MB that is a collection or two before every scrape, which empties the
// sync.Pools the scrape's HTTP and encoding paths draw from, so the scrape
// after them allocates and touches memory afresh. 200 halves the
// collections: BenchmarkScrapeInterval/replicas=1 72 -> 64 KB and about
// -25% CPU a scrape, BenchmarkHTTPScrapeDaemon 17.5 -> 7.5 collections per
// 1,000 scrapes, for a peak RSS of the soak test (TestSoak) of 37-38 MiB
// instead of 32-33 (400: 48 MiB, for little more). docs/benchmarks.md,
// "Issue 27, fifth round".
const DaemonGCPercent = 200

// DaemonGC sets the collector's goal to DaemonGCPercent unless the user
// set GOGC (theirs wins), and returns the function that restores the
// previous goal. A GOMEMLIMIT bounds the heap under either goal (the
// Kubernetes manifest sets 448MiB), so it does not turn this off, unlike
// simulate's and advise's goal (cmd/gpufrag/internal/cli's engineGC). The
// daemon and the benchmarks of its scrape and polls call it.
func DaemonGC() (restore func()) {
	return gcgoal.Set(DaemonGCPercent, "GOGC")
}
