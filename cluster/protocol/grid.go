package protocol

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpufrag/gpufrag/cluster"
)

// GridConfig is a comparison of placement policies over seeds on one
// cluster: every policy run with every seed, by the FGD protocol
// (Experiment) or, with Timed, by pod times (Timed).
type GridConfig struct {
	Nodes []cluster.Node
	Pods  []cluster.Pod
	// Policies are policy specs (NewPolicy); results carry them as given
	// ("recommended", "volcano-binpack:gpu=8").
	Policies []string
	Seeds    []uint64
	Options  Options
	// Timed replays pods by their creation and deletion times (Timed)
	// instead of the FGD protocol (Experiment).
	Timed bool
}

// Grid is the cells of a GridConfig, one (policy, seed) run each, and
// their results. Cells are policy-major: cell i is policy i/len(Seeds)
// with seed Seeds[i%len(Seeds)]. Every cell is independent and
// deterministic, so a driver may run them in any order and at any
// parallelism (Grid.Run with a Runner, or RunCell from its own pool) and
// the summaries are the same.
//
// The grid behind `gpufrag cluster simulate`, `cluster volcano-config`
// and the experiment suite's cluster experiments.
type Grid struct {
	cfg   GridConfig
	runs  []*Run      // by cell, without Timed
	timed []*TimedRun // by cell, with Timed
	// prep is, by seed, what the FGD runs of every policy share (the
	// target workload, the shuffled and inflated pods, the node order):
	// prepared by the first cell of the seed to run, dropped after the
	// last.
	prep []gridPrep
}

// gridPrep is one seed's prepared workload.
type gridPrep struct {
	once sync.Once
	pr   *prepared
	err  error
	left atomic.Int32 // cells of the seed not run yet
}

// NewGrid returns the grid of c, no cell run yet. The grid keeps c's
// slices; they must not change while it runs.
func NewGrid(c GridConfig) *Grid {
	g := &Grid{cfg: c}
	if c.Timed {
		g.timed = make([]*TimedRun, g.Len())
	} else {
		g.runs = make([]*Run, g.Len())
		g.prep = make([]gridPrep, len(c.Seeds))
		for k := range g.prep {
			g.prep[k].left.Store(int32(len(c.Policies)))
		}
	}
	return g
}

// Len is the number of cells, len(Policies)*len(Seeds).
func (g *Grid) Len() int { return len(g.cfg.Policies) * len(g.cfg.Seeds) }

// Cell returns the policy index and the seed of cell i.
func (g *Grid) Cell(i int) (policy int, seed uint64) {
	n := len(g.cfg.Seeds)
	return i / n, g.cfg.Seeds[i%n]
}

// RunCell runs cell i and keeps its result. Calls for different cells
// may run at once; each cell must be run once.
func (g *Grid) RunCell(i int) error {
	p, seed := g.Cell(i)
	c := &g.cfg
	var err error
	if c.Timed {
		g.timed[i], err = Timed(c.Nodes, c.Pods, c.Policies[p], seed, c.Options)
		return err
	}
	// Experiment, with the seed's preparation shared by its policies.
	gp := &g.prep[i%len(c.Seeds)]
	gp.once.Do(func() { gp.pr, gp.err = prepare(c.Nodes, c.Pods, seed, c.Options) })
	if gp.err != nil {
		return gp.err
	}
	g.runs[i], err = gp.pr.run(c.Policies[p])
	if gp.left.Add(-1) == 0 {
		gp.pr = nil // the seed's last cell: let the workload go
	}
	return err
}

// Runner runs job(ctx, i) for every i in [0, n), as many at once as it
// likes, and returns when all that started have finished, with their
// errors joined in index order and ctx's error if it stopped early:
// internal/par's Do with its options bound. The package starts no
// goroutines itself (it is deterministic core), so the parallelism is the
// caller's.
type Runner func(ctx context.Context, n int, job func(ctx context.Context, i int) error) error

// Run runs every cell with run (nil: one after another, stopping when ctx
// is done). Its error is that of the first failing cell in cell order: a
// cell's error depends only on its policy and the inputs, not on its
// seed, so the other seeds of that policy would repeat it. When no cell
// failed it is run's error (ctx's, when it stopped early).
func (g *Grid) Run(ctx context.Context, run Runner) error {
	if run == nil {
		run = sequential
	}
	errs := make([]error, g.Len())
	err := run(ctx, g.Len(), func(_ context.Context, i int) error {
		errs[i] = g.RunCell(i)
		return nil // kept in errs, so that only the first is reported
	})
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return err
}

// sequential is the Runner of Run(ctx, nil).
func sequential(ctx context.Context, n int, job func(ctx context.Context, i int) error) error {
	var first error
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := job(ctx, i); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Runs returns the FGD runs of policy p, one per seed in seed order (nil
// for a cell not run yet).
func (g *Grid) Runs(p int) []*Run {
	n := len(g.cfg.Seeds)
	return g.runs[p*n : (p+1)*n]
}

// Summaries aggregates the FGD runs of each policy over its seeds
// (Aggregate), in policy order, each named by its spec as given. Every
// cell must have run without error.
func (g *Grid) Summaries() []Summary {
	if g.cfg.Timed {
		panic(fmt.Sprintf("cluster: Summaries of a timed grid of %d policies; use TimedSummaries", len(g.cfg.Policies)))
	}
	n := len(g.cfg.Seeds)
	out := make([]Summary, len(g.cfg.Policies))
	for p, spec := range g.cfg.Policies {
		runs := g.runs[p*n : (p+1)*n]
		for k, r := range runs {
			if r == nil {
				panic(fmt.Sprintf("cluster: Summaries before cell %d (policy %s, seed %d) ran", p*n+k, spec, g.cfg.Seeds[k]))
			}
		}
		out[p] = Aggregate(runs)
		out[p].Policy = spec
	}
	return out
}

// TimedSummaries aggregates the timed runs of each policy over its seeds
// (AggregateTimed), in policy order, each named by its spec as given.
// Every cell must have run without error.
func (g *Grid) TimedSummaries() []TimedSummary {
	if !g.cfg.Timed {
		panic(fmt.Sprintf("cluster: TimedSummaries of an FGD-protocol grid of %d policies; use Summaries", len(g.cfg.Policies)))
	}
	n := len(g.cfg.Seeds)
	out := make([]TimedSummary, len(g.cfg.Policies))
	for p, spec := range g.cfg.Policies {
		runs := g.timed[p*n : (p+1)*n]
		for k, r := range runs {
			if r == nil {
				panic(fmt.Sprintf("cluster: TimedSummaries before cell %d (policy %s, seed %d) ran", p*n+k, spec, g.cfg.Seeds[k]))
			}
		}
		out[p] = AggregateTimed(runs)
		out[p].Policy = spec
	}
	return out
}

// TimedSummary is one policy's timed runs over several seeds: means and
// standard deviations of TimedRun's figures.
type TimedSummary struct {
	Policy         string  `json:"policy"`
	Seeds          int     `json:"seeds"`
	MeanAllocRatio MeanStd `json:"mean_alloc_ratio"`
	PeakAllocRatio MeanStd `json:"peak_alloc_ratio"`
	MeanFragTotal  MeanStd `json:"mean_frag_total"`
	FailedPods     MeanStd `json:"failed_pods"`
}

// AggregateTimed summarises timed runs of one policy (different seeds).
func AggregateTimed(runs []*TimedRun) TimedSummary {
	if len(runs) == 0 {
		return TimedSummary{}
	}
	var mean, peak, frag, failed []float64
	for _, r := range runs {
		mean, peak = append(mean, r.MeanAllocRatio), append(peak, r.PeakAllocRatio)
		frag, failed = append(frag, r.MeanFragTotal), append(failed, float64(r.Failed))
	}
	return TimedSummary{Policy: runs[0].Policy, Seeds: len(runs),
		MeanAllocRatio: NewMeanStd(mean), PeakAllocRatio: NewMeanStd(peak),
		MeanFragTotal: NewMeanStd(frag), FailedPods: NewMeanStd(failed)}
}
