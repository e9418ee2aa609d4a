package analysis_test

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestCapacityAdvice: the advice names the live blocks and reserved bytes
// and suggests a capacity rounded up (to a MiB below 1 GiB, a GiB from
// it) that holds them.
func TestCapacityAdvice(t *testing.T) {
	for _, c := range []struct {
		active int64
		want   string
	}{
		{4*mib + 512, "below the 4.00MiB that live blocks hold on device 2 of s.pickle (12MiB reserved): no allocator could hold them; give at least 5MiB, or leave --capacity out"},
		{69*1024*mib - 1, "give at least 69GiB,"},
		{69 * 1024 * mib, "give at least 69GiB,"},
	} {
		e := &analysis.CapacityError{Device: 2, Capacity: mib, Active: c.active, Reserved: 12 * mib}
		if got := e.Advice("s.pickle"); !strings.Contains(got, c.want) {
			t.Errorf("active %d: %q; want %q", c.active, got, c.want)
		}
	}
}

// TestCapacityWarnings: a capacity given below what a device reserved is
// warned about; one above it, or one not given, is not.
func TestCapacityWarnings(t *testing.T) {
	s := snap(nil, seg(segA, "large", live(4*mib, 3*mib, "attn"), free(6*mib)))
	for _, c := range []struct {
		capacity int64
		warn     bool
	}{{0, false}, {6 * mib, true}, {1 << 30, false}} {
		for _, noReplay := range []bool{false, true} {
			rep, err := analysis.Analyze(s, analysis.Options{Capacity: c.capacity, NoReplay: noReplay})
			if err != nil {
				t.Fatal(err)
			}
			ws := rep.CapacityWarnings()
			if got := len(ws) == 1 && strings.HasPrefix(ws[0], "--capacity 6MiB is below the 10MiB device 0 reserved "); got != c.warn || len(ws) > 1 {
				t.Errorf("capacity %d (no replay %v): %q", c.capacity, noReplay, ws)
			}
			// The what-ifs are named only where there are some: --no-replay
			// (and diff, and a snapshot without a trace) has none.
			for _, w := range ws {
				if hasWhatIf := rep.Devices[0].WhatIf != nil; strings.Contains(w, "what-ifs") != hasWhatIf {
					t.Errorf("capacity %d (no replay %v, what-ifs %v): %q", c.capacity, noReplay, hasWhatIf, w)
				}
			}
		}
	}
}

// TestCompare: two reports are diffed side by side; three or more are
// searched for the outlier, which is diffed against the reference; fewer
// devices than the rule needs is an error.
func TestCompare(t *testing.T) {
	small := snap(nil, seg(segA, "large", live(4*mib, 3*mib, "attn"), free(6*mib)))
	big := snap(nil, seg(segA, "large", live(4*mib, 3*mib, "attn"), free(6*mib)),
		seg(segB, "large", live(200*mib, 200*mib, "kv"), free(20*mib)))
	var reps []*analysis.Report
	var names []string
	for i, s := range []bool{false, false, false, false, true} {
		x := small
		if s {
			x = big
		}
		reps = append(reps, analyze2(t, x))
		names = append(names, "r"+string(rune('0'+i)))
	}
	c, err := analysis.Compare(reps[3:], names[3:], analysis.DiffOptions{})
	if err != nil || c.Pair == nil || c.Outliers != nil {
		t.Fatalf("two: %+v, %v", c, err)
	}
	if _, ok := c.Doc().(analysis.DiffDoc); !ok {
		t.Errorf("two: Doc is %T", c.Doc())
	}
	c, err = analysis.Compare(reps, names, analysis.DiffOptions{})
	if err != nil || c.Pair != nil || c.Outliers == nil || c.Versus == nil || len(c.Outliers.Flags) == 0 ||
		c.Outliers.Units[c.Outliers.Flags[0].Unit].File != "r4" {
		t.Fatalf("five: %+v, %v", c, err)
	}
	var b strings.Builder
	if err := c.WriteText(&b); err != nil || !strings.Contains(b.String(), "r4") {
		t.Errorf("five: %v\n%s", err, b.String())
	}
	if _, err := analysis.Compare(reps[:1], names[:1], analysis.DiffOptions{}); !errors.Is(err, analysis.ErrFewUnits) {
		t.Errorf("one: %v", err)
	}
}

func analyze2(t *testing.T, s *snapshot.Snapshot) *analysis.Report {
	t.Helper()
	rep, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestSoftMemoryLimit: the limit is 2 bytes per file byte, at least 1 GiB,
// and restored after; stdin, a missing file and a user's GOMEMLIMIT leave
// it alone.
func TestSoftMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := analysis.SoftMemoryLimit("limits_test.go")
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("limit %d, want 1GiB", got)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("restored %d, want %d", got, prev)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	for _, p := range []string{"limits_test.go", "-", "no-such-file"} {
		analysis.SoftMemoryLimit(p)()
		if got := debug.SetMemoryLimit(-1); got != prev {
			t.Errorf("%s: limit %d, want %d", p, got, prev)
		}
	}
	if o := analysis.ReadOptions(true); !o.SkipTraceFrames || !o.TraceOOMsOnly {
		t.Errorf("ReadOptions(true): %+v", o)
	}
}
