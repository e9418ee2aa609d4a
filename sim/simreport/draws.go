package simreport

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// DrawFigures are the figures of one run under one draw of a benchmark
// run's arrivals that ArrivalDraws spreads: all a draw keeps (a whole
// sim.Result holds its memory series and events).
type DrawFigures struct{ TTFTP50, TPOTP50, ITLP50, OutputTokensPerS float64 }

// FiguresOf is r's DrawFigures.
func FiguresOf(r *sim.Result) DrawFigures {
	return DrawFigures{TTFTP50: r.TTFT.P50, TPOTP50: r.TPOT.P50, ITLP50: r.ITL.P50, OutputTokensPerS: r.OutputTokensPerS}
}

// AddArrivalDraws sets each result's ArrivalDraws from o.Results (the first
// draw) and others: others[k][i] is run i (o.Results' order) under draw
// k+2 of the benchmark run's arrivals, the draws' seeds being
// o.Bench.ArrivalSeed, +1, .... It fails when the runs' arrivals are not
// drawn (o.Bench.ArrivalSeed absent) or a draw misses a run.
func AddArrivalDraws(o *scenario.Report, others [][]DrawFigures) error {
	if o.Bench == nil || o.Bench.ArrivalSeed == nil {
		return fmt.Errorf("simreport: the workload's arrivals are not drawn from a seed")
	}
	draws := [][]DrawFigures{make([]DrawFigures, len(o.Results))}
	for i := range o.Results {
		draws[0][i] = FiguresOf(&o.Results[i])
	}
	for k, d := range others {
		if len(d) != len(o.Results) {
			return fmt.Errorf("simreport: draw %d has %d runs, want %d", k+2, len(d), len(o.Results))
		}
		draws = append(draws, d)
	}
	for i := range o.Results {
		fig := func(f func(DrawFigures) float64) sim.Spread {
			xs := make([]float64, len(draws))
			for k := range draws {
				xs[k] = f(draws[k][i])
			}
			return sim.SpreadOf(xs)
		}
		o.Results[i].ArrivalDraws = &sim.ArrivalDraws{Draws: len(draws), FirstSeed: *o.Bench.ArrivalSeed,
			TTFTP50:          fig(func(d DrawFigures) float64 { return d.TTFTP50 }),
			TPOTP50:          fig(func(d DrawFigures) float64 { return d.TPOTP50 }),
			ITLP50:           fig(func(d DrawFigures) float64 { return d.ITLP50 }),
			OutputTokensPerS: fig(func(d DrawFigures) float64 { return d.OutputTokensPerS })}
	}
	return nil
}

// drawsWide is the ratio of a latency's largest to smallest value over the
// draws from which the text report says that the load sits where the
// queue starts (one run cannot pin the figure), and of throughput's from
// which it says that the arrivals' span sets the throughput. Set by hand between what
// 8 draws do on crusoe's L40S runs (docs/calibrate.md, "Issue 24,
// twenty-third session"): away from the knee (1, 5 and 9 req/s) every
// figure moves 1.00-1.22 times over, the most being a 1 req/s run's
// throughput, which the span of its 120 arrivals sets; at the knee (the
// 70B runs at 3 req/s) median TTFT and ITL move 3.5-6.9 times over. The
// README's 20-request example at 1 req/s moves its throughput 1.5 times
// over with latencies within 10%.
const drawsWide = 1.5

// writeArrivalDraws prints the draws' spread of each run's figures, or,
// for a benchmark run whose arrivals were drawn and only one draw was
// replayed, how to see it.
func writeArrivalDraws(sb *strings.Builder, o *scenario.Report, width int) {
	if o.Bench == nil || o.Bench.ArrivalSeed == nil {
		return
	}
	var d0 *sim.ArrivalDraws
	for _, r := range o.Results {
		if r.ArrivalDraws != nil {
			d0 = r.ArrivalDraws
		}
	}
	if d0 == nil {
		fmt.Fprintf(sb, "\n%s\n", human.Wrap(fmt.Sprintf("The benchmark run saved no send times: its arrivals were drawn again, from seed %d, one draw "+
			"of many as the client's were. --arrival-draws 8 replays 8 draws and shows how far the draw alone moves these figures.",
			*o.Bench.ArrivalSeed), 80))
		return
	}
	t := human.Table{Head: []string{"kv / allocator", "TTFT p50", "TPOT p50", "ITL p50", "tokens/s"}}
	span := func(s sim.Spread, f func(float64) string) string {
		return fmt.Sprintf("%s–%s (%s)", f(s.Min), f(s.Max), f(s.Median))
	}
	tokens := func(x float64) string { return fmt.Sprintf("%.0f", x) }
	// The widest latency spread says whether the load sits at a queue's
	// knee; throughput's is apart: at a light load a run's length is its
	// arrivals' span, which a few requests pin only loosely.
	widest, what, tput := 0.0, "", 0.0
	ratio := func(s sim.Spread) float64 {
		if s.Min > 0 {
			return s.Max / s.Min
		}
		return 0
	}
	for _, r := range o.Results {
		d := r.ArrivalDraws
		if d == nil {
			continue
		}
		t.Rows = append(t.Rows, []string{runName(r), span(d.TTFTP50, human.Seconds), span(d.TPOTP50, human.Seconds),
			span(d.ITLP50, human.Seconds), span(d.OutputTokensPerS, tokens)})
		for _, x := range []struct {
			s    sim.Spread
			name string
		}{{d.TTFTP50, "median TTFT"}, {d.TPOTP50, "median TPOT"}, {d.ITLP50, "median ITL"}} {
			if r := ratio(x.s); r > widest {
				widest, what = r, x.name
			}
		}
		tput = max(tput, ratio(d.OutputTokensPerS))
	}
	fmt.Fprintf(sb, "\n%s\n", human.Wrap(fmt.Sprintf("Arrival draws: the benchmark run saved no send times, so its arrivals were drawn "+
		"%d times (seeds %d to %d) through the same setup; smallest–largest (median) of each figure:", d0.Draws, d0.FirstSeed,
		d0.FirstSeed+uint64(d0.Draws)-1), 80))
	t.Width = indentedWidth(width)
	var tb strings.Builder
	t.Write(&tb)
	for _, line := range strings.SplitAfter(tb.String(), "\n") {
		if line != "" {
			sb.WriteString("  " + line)
		}
	}
	switch {
	case widest >= drawsWide:
		fmt.Fprintf(sb, "%s\n", human.Wrap(fmt.Sprintf("The draw alone moves the %s %.1f times over: the load sits where the queue starts, "+
			"so the measured run (one draw) cannot pin it, and the simulation's own figure above is one draw too.", what, widest), 80))
	case tput >= drawsWide:
		fmt.Fprintf(sb, "%s\n", human.Wrap(fmt.Sprintf("The draw alone moves the throughput %.1f times over while the latencies hold: "+
			"the run's length is its arrivals' span, which %s requests pin only loosely, so its throughput is the arrival rate's, "+
			"not the engine's.", tput, human.Thousands(o.Requests)), 80))
	}
}
