package scenario

import (
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestRecommend walks the ranking one criterion at a time: each case
// differs from the one recommended only in the criterion it tests.
func TestRecommend(t *testing.T) {
	base := sim.Result{KV: "paged:16", Allocator: "caching", RequestsTotal: 100, RequestsCompleted: 95,
		RequestsFailedOOM: 3, RequestsRejected: 2, OutputTokensPerS: 70, PeakReservedBytes: 50 << 30,
		TTFT: sim.Latency{P99: 5.4}}
	with := func(f func(*sim.Result)) sim.Result { r := base; f(&r); return r }
	for _, tc := range []struct {
		name string
		rs   []sim.Result
		want int
	}{
		{"fewer failed and rejected wins over more completed", []sim.Result{
			with(func(r *sim.Result) { r.RequestsFailedOOM, r.RequestsCompleted = 10, 99 }), base}, 1},
		{"more completed", []sim.Result{base, with(func(r *sim.Result) { r.RequestsCompleted = 96 })}, 1},
		{"lower TTFT p99", []sim.Result{with(func(r *sim.Result) { r.TTFT.P99 = 9 }), base}, 1},
		{"higher throughput", []sim.Result{base, with(func(r *sim.Result) { r.OutputTokensPerS = 71 })}, 1},
		{"lower peak reserved", []sim.Result{with(func(r *sim.Result) { r.PeakReservedBytes = 60 << 30 }), base}, 1},
		{"a tie keeps the earlier run", []sim.Result{base, base}, 0},
		{"an oracle is never recommended", []sim.Result{with(func(r *sim.Result) { r.KV, r.RequestsFailedOOM = "contiguous-max:oracle", 0 }), base}, 1},
		{"nothing deployable", []sim.Result{with(func(r *sim.Result) { r.KV = "contiguous-max:oracle" })}, -1},
		{"no runs", nil, -1},
	} {
		got, why := Recommend(tc.rs)
		if got != tc.want || (got >= 0) != (why != "") {
			t.Errorf("%s: Recommend = %d, %q; want %d", tc.name, got, why, tc.want)
		}
	}
	_, why := Recommend([]sim.Result{base})
	if want := "paged:16 on caching: 95 of 100 requests completed, 5 failed or rejected, 70 output tokens/s, peak reserved 50.00GiB, TTFT p99 5.4s"; why != want {
		t.Errorf("reason %q, want %q", why, want)
	}
}
