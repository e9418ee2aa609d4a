package defrag_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/alloc"
	allocspec "github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// TestScenarios runs the commented plans under testdata/scenarios. Rerun with
// -rewrite to regenerate the expected output, and commit the diff only if you
// understand why it changed.
//
// Commands:
//
//	init spec=caching capacity=1GiB          new byte-backed allocator
//	alloc id=a size=3MiB [stream=0]          allocate and fill with a pattern
//	allocs id=a n=5 size=4MiB [stream=0]     allocate a1..a5 the same way
//	free id=a  or  free id=(a1,a3)
//	layout                                   Layout.String()
//	plan goal=compact|fit:SIZE [max-bytes=N] [max-moves=N] [layout]
//	                                         PlanLayout: moves by id, bytes, bound, metrics
//	apply                                    Apply the last plan, then check that nothing is
//	                                         lost and that the real layout is the planned one
//	empty-cache                              EmptyCache(), prints reserved before and after
//	pool used=.XX.X.. [reserved=1] [pages=N] [max-moves=N] [threshold=N]
//	                                         PlanPool, or PlanPoolPages with pages=N
//
// Every plan also records its bytes moved and lower bound, and
// TestScenarioSuiteRatio checks bytes moved ≤ 1.1 × lower bound over the suite.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		runScenario(t, path, nil)
	})
}

// suiteTotals accumulate a suite's plans.
type suiteTotals struct {
	plans            int
	moved, bound     int64
	worst            float64
	worstAt          string
	poolMoves, poolB int
	files            map[string]*fileTotals // per scenario file
}

// fileTotals are one scenario file's plans that reach their goal.
type fileTotals struct {
	plans        int
	moved, bound int64
	worst        float64
}

func runScenario(t *testing.T, path string, tot *suiteTotals) {
	var (
		w    *world
		ids  map[string]alloc.Handle
		last defrag.Plan
		have bool
		spec string
	)
	name := func(addr uint64) string {
		h, ok := w.ix.HandleAt(addr)
		if !ok {
			return mem.FormatAddr(addr)
		}
		for id, h2 := range ids {
			if h2 == h {
				return id
			}
		}
		return mem.FormatAddr(addr)
	}
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		arg := func(key string) (string, bool) {
			for _, a := range td.CmdArgs {
				if a.Key == key {
					if len(a.Vals) == 0 {
						return "", true
					}
					return a.Vals[0], true
				}
			}
			return "", false
		}
		size := func(key string) int64 {
			s, ok := arg(key)
			if !ok {
				td.Fatalf(t, "%s: missing %s=", td.Cmd, key)
			}
			n, err := mem.ParseBytes(s)
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return n
		}
		num := func(key string) int {
			s, ok := arg(key)
			if !ok {
				return 0
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return n
		}
		switch td.Cmd {
		case "init":
			spec, _ = arg("spec")
			var err error
			if w, err = newWorld(spec, size("capacity")); err != nil {
				return err.Error()
			}
			ids, have = map[string]alloc.Handle{}, false
			return "ok"
		case "alloc":
			id, _ := arg("id")
			b, err := w.alloc(size("size"), num("stream"))
			if err != nil {
				return err.Error()
			}
			ids[id] = b.Handle
			return fmt.Sprintf("%s: %s size=%s", id, mem.FormatAddr(b.Addr), mem.FormatBytesExact(b.Size))
		case "allocs":
			// allocs id=a n=5 size=4MiB: a1..a5, one line each.
			id, _ := arg("id")
			var sb strings.Builder
			for i := 1; i <= num("n"); i++ {
				name := fmt.Sprintf("%s%d", id, i)
				b, err := w.alloc(size("size"), num("stream"))
				if err != nil {
					fmt.Fprintf(&sb, "%s: %v\n", name, err)
					continue
				}
				ids[name] = b.Handle
				fmt.Fprintf(&sb, "%s: %s size=%s\n", name, mem.FormatAddr(b.Addr), mem.FormatBytesExact(b.Size))
			}
			return sb.String()
		case "free":
			// free id=a or free id=(a1,a3,a4)
			for _, a := range td.CmdArgs {
				if a.Key != "id" {
					continue
				}
				for _, id := range a.Vals {
					h, ok := ids[id]
					if !ok {
						return "no live block named " + id
					}
					if err := w.free(h); err != nil {
						return err.Error()
					}
					delete(ids, id)
				}
			}
			return "ok"
		case "layout":
			return w.a.Layout().String()
		case "plan":
			gs, _ := arg("goal")
			g, err := defrag.ParseGoal(gs)
			if err != nil {
				return err.Error()
			}
			o := defrag.Options{Allocator: allocspec.MustParse(spec), MaxMoves: num("max-moves")}
			if _, ok := arg("max-bytes"); ok {
				o.MaxBytes = size("max-bytes")
			}
			p, err := defrag.PlanLayout(w.a.Layout(), g, o)
			if err != nil {
				return err.Error()
			}
			last, have = p, true
			if tot != nil && p.Reached {
				tot.plans++
				tot.moved += p.BytesMoved
				tot.bound += p.LowerBound
				r := ratio(p.BytesMoved, p.LowerBound)
				if r > tot.worst {
					tot.worst, tot.worstAt = r, td.Pos
				}
				if tot.files == nil {
					tot.files = map[string]*fileTotals{}
				}
				f := tot.files[path]
				if f == nil {
					f = &fileTotals{}
					tot.files[path] = f
				}
				f.plans++
				f.moved += p.BytesMoved
				f.bound += p.LowerBound
				f.worst = max(f.worst, r)
			}
			var sb strings.Builder
			for _, m := range p.Moves {
				fmt.Fprintf(&sb, "move %s %s -> %s (%s)\n", name(m.From), mem.FormatAddr(m.From), mem.FormatAddr(m.To), mem.FormatBytesExact(m.Size))
			}
			sb.WriteString(summary(p))
			if _, ok := arg("layout"); ok {
				sb.WriteString("after:\n" + p.Layout.String())
			}
			return sb.String()
		case "apply":
			if !have {
				td.Fatalf(t, "apply without a plan")
			}
			if err := w.apply(last); err != nil {
				return err.Error()
			}
			if err := w.check(); err != nil {
				td.Fatalf(t, "after apply: %v", err)
			}
			if err := sameLayout(last.Layout, w.a.Layout()); err != nil {
				td.Fatalf(t, "planned layout != real: %v", err)
			}
			return fmt.Sprintf("ok: %d moves applied, %d live blocks intact", len(last.Moves), len(w.live))
		case "empty-cache":
			before := w.a.Layout().Classes().Reserved()
			w.a.EmptyCache()
			after := w.a.Layout().Classes().Reserved()
			return fmt.Sprintf("reserved %s -> %s", mem.FormatBytesExact(before), mem.FormatBytesExact(after))
		case "pool":
			us, _ := arg("used")
			used := make([]bool, len(us))
			for i, c := range us {
				used[i] = c == 'X'
			}
			o := defrag.PoolOptions{Reserved: num("reserved"), MaxMoves: num("max-moves"), Threshold: num("threshold")}
			var p defrag.PoolPlan
			if n := num("pages"); n > 0 {
				p = defrag.PlanPoolPages(used, n, o)
			} else {
				p = defrag.PlanPool(used, o)
			}
			if tot != nil {
				tot.poolMoves += len(p.Moves)
				tot.poolB += p.LowerBound
			}
			after := slices.Clone(used)
			var sb strings.Builder
			for _, m := range p.Moves {
				fmt.Fprintf(&sb, "move %d -> %d\n", m.From, m.To)
				after[m.From], after[m.To] = false, true
			}
			fmt.Fprintf(&sb, "moves=%d lower_bound=%d used=%d high=%d->%d freed_pages=%d\n",
				len(p.Moves), p.LowerBound, p.Used, p.HighBefore, p.HighAfter, p.FreedPages)
			fmt.Fprintf(&sb, "after: %s\n", render(after))
			for _, n := range p.Notes {
				sb.WriteString("note: " + n + "\n")
			}
			return sb.String()
		}
		td.Fatalf(t, "unknown command %s", td.Cmd)
		return ""
	})
}

func render(used []bool) string {
	b := make([]byte, len(used))
	for i, u := range used {
		b[i] = '.'
		if u {
			b[i] = 'X'
		}
	}
	return string(b)
}

func ratio(moved, bound int64) float64 {
	if bound == 0 {
		if moved == 0 {
			return 1
		}
		return float64(moved) // any move over a zero bound counts as a bad ratio
	}
	return float64(moved) / float64(bound)
}

// summary prints the figures of a plan, with the pause it would take on an
// H100 under the default cost model.
func summary(p defrag.Plan) string {
	var sb strings.Builder
	h100, _ := model.LookupGPU("h100-80g")
	fmt.Fprintf(&sb, "goal=%s reached=%t moves=%d bytes_moved=%s lower_bound=%s freed=%s pause_h100=%dns\n",
		p.Goal, p.Reached, len(p.Moves), mem.FormatBytesExact(p.BytesMoved), mem.FormatBytesExact(p.LowerBound),
		mem.FormatBytesExact(p.FreedBytes), defrag.Cost(p, h100, defrag.CostModel{}))
	fmt.Fprintf(&sb, "before: segments=%d health=%.3f largest_free=%s cached_free=%s\n",
		p.Before.Segments, p.Before.Health, mem.FormatBytesExact(p.Before.LargestFreeBlock), mem.FormatBytesExact(p.Before.CachedFree))
	fmt.Fprintf(&sb, "after:  segments=%d health=%.3f largest_free=%s cached_free=%s\n",
		p.After.Segments, p.After.Health, mem.FormatBytesExact(p.After.LargestFreeBlock), mem.FormatBytesExact(p.After.CachedFree))
	if p.UnmapPages > 0 {
		fmt.Fprintf(&sb, "unmap: %d pages (%s)\n", p.UnmapPages, mem.FormatBytesExact(p.UnmapBytes))
	}
	for _, n := range p.Notes {
		sb.WriteString("note: " + n + "\n")
	}
	return sb.String()
}

// TestScenarioSuiteRatio checks issue 5's target over every plan of the
// scenario suite that reaches its goal: bytes moved at most 1.1 × the lower
// bound in total and for each plan.
func TestScenarioSuiteRatio(t *testing.T) {
	var tot suiteTotals
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		runScenario(t, path, &tot)
	})
	for _, path := range slices.Sorted(maps.Keys(tot.files)) {
		f := tot.files[path]
		t.Logf("%s: %d plans, moved %d bytes, lower bound %d bytes, ratio %.4f, worst %.4f",
			path, f.plans, f.moved, f.bound, ratio(f.moved, f.bound), f.worst)
	}
	t.Logf("suite: %d plans, moved %d bytes, lower bound %d bytes, ratio %.4f, worst %.4f at %s; pool moves %d, bound %d",
		tot.plans, tot.moved, tot.bound, ratio(tot.moved, tot.bound), tot.worst, tot.worstAt, tot.poolMoves, tot.poolB)
	if tot.plans == 0 {
		t.Fatal("no plans in the suite")
	}
	if float64(tot.moved) > 1.1*float64(tot.bound) {
		t.Errorf("suite moved %d bytes, more than 1.1 × the lower bound %d", tot.moved, tot.bound)
	}
	if tot.worst > 1.1 {
		t.Errorf("worst plan moves %.3f × its lower bound (%s)", tot.worst, tot.worstAt)
	}
	if tot.poolMoves != tot.poolB {
		t.Errorf("pool plans made %d moves, the bound says %d", tot.poolMoves, tot.poolB)
	}
}
