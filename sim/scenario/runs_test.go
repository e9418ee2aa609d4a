package scenario

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// TestPairRuns: strategies cross the allocators they run on, in order; a
// strategy none of the defaults runs on takes its own allocator, one none
// of the allocators asked for runs on is a PairError naming it, one no
// allocator runs is a PairError with AllocsFor's reason, and more than
// MaxRuns runs is a TooManyRunsError.
func TestPairRuns(t *testing.T) {
	kvs := func(ss ...string) []strategy.Spec {
		out := make([]strategy.Spec, len(ss))
		for i, s := range ss {
			out[i] = strategy.MustParseSpec(s)
		}
		return out
	}
	caching := []registry.Spec{registry.MustParse("caching")}
	names := func(runs []Run) string {
		var s []string
		for _, r := range runs {
			s = append(s, r.KV.Spec.String()+"/"+r.Alloc.Spec.String())
		}
		return strings.Join(s, " ")
	}
	runs, err := PairRuns(kvs("paged:16", "vmm:2MiB"), []registry.Spec{registry.MustParse("caching"), registry.MustParse("vmm:2MiB")}, true)
	if got, want := names(runs), "paged:16/caching paged:16/vmm:2MiB vmm:2MiB/vmm:2MiB"; err != nil || got != want {
		t.Errorf("crossing: %q, %v; want %q", got, err, want)
	}
	runs, err = PairRuns(kvs("paged:16", "vmm:2MiB"), caching, false)
	if got, want := names(runs), "paged:16/caching vmm:2MiB/vmm:2MiB"; err != nil || got != want {
		t.Errorf("defaults: %q, %v; want %q", got, err, want)
	}
	var pe *PairError
	if _, err := PairRuns(kvs("paged:16", "vmm:2MiB"), caching, true); !errors.As(err, &pe) || !pe.Explicit || pe.Index != 1 || pe.Err == nil {
		t.Errorf("vmm:2MiB on caching asked for: %v, want an explicit PairError at index 1", err)
	}
	if _, err := PairRuns(kvs("vmm:1000"), caching, false); !errors.As(err, &pe) || pe.Explicit || !strings.Contains(err.Error(), "no allocator can run kv vmm:1000B") {
		t.Errorf("vmm:1000: %v, want a PairError saying no allocator can run it", err)
	}
	var many *TooManyRunsError
	var lots []string
	for b := 1; b <= MaxRuns+1; b++ {
		lots = append(lots, "paged:"+strconv.Itoa(b))
	}
	if _, err := PairRuns(kvs(lots...), caching, true); !errors.As(err, &many) || many.Runs != MaxRuns+1 {
		t.Errorf("%d strategies: %v, want a TooManyRunsError of %d", len(lots), err, MaxRuns+1)
	}
}

// TestWorkloadOverrides: SetRate reaches whichever workload is set,
// UseTrace replaces the workload, running the trace to its end unless the
// duration is kept, and SetOnOOM overrides every run's policy.
func TestWorkloadOverrides(t *testing.T) {
	for _, w := range []Workload{{Trace: &Trace{}}, {Requests: &Requests{}}, {Sessions: &Sessions{}}} {
		w.SetRate(7)
		var got float64
		switch {
		case w.Trace != nil:
			got = w.Trace.Rate
		case w.Requests != nil:
			got = w.Requests.Rate
		default:
			got = w.Sessions.Rate
		}
		if got != 7 {
			t.Errorf("%+v: rate %v after SetRate(7)", w, got)
		}
	}
	s := Default()
	if s.Duration == 0 {
		t.Fatal("the default scenario has no duration")
	}
	d := s.Duration
	s.UseTrace(&Trace{File: "a.csv"}, true)
	if s.Duration != d || s.Workload.Trace == nil || s.Workload.Requests != nil || s.Workload.Sessions != nil {
		t.Errorf("UseTrace keeping the duration: %+v, duration %v", s.Workload, s.Duration)
	}
	s.UseTrace(&Trace{File: "a.csv"}, false)
	if s.Duration != 0 {
		t.Errorf("UseTrace: duration %v, want 0 (to the trace's end)", s.Duration)
	}
	s.Runs = []Run{{OnOOM: "fail"}, {OnOOM: "reserve"}}
	s.SetOnOOM("preempt")
	if s.Engine.OnOOM != "preempt" || s.Runs[0].OnOOM != "" || s.Runs[1].OnOOM != "" {
		t.Errorf("SetOnOOM(preempt): engine %q, runs %+v", s.Engine.OnOOM, s.Runs)
	}
}
