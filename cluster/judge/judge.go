package judge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// TuneLists are the generated lists to tune constants on: two shares of
// each family, generator seeds 101-108.
var TuneLists = []gen.GenConfig{
	{Family: gen.FamilyCPU, Share: 0.05, Seed: 101}, {Family: gen.FamilyCPU, Share: 0.25, Seed: 102},
	{Family: gen.FamilyGPUShare, Share: 0.30, Seed: 103}, {Family: gen.FamilyGPUShare, Share: 0.70, Seed: 104},
	{Family: gen.FamilyGPUSpec, Share: 0.10, Seed: 105}, {Family: gen.FamilyGPUSpec, Share: 0.25, Seed: 106},
	{Family: gen.FamilyMultiGPU, Share: 0.20, Seed: 107}, {Family: gen.FamilyMultiGPU, Share: 0.40, Seed: 108},
}

// JudgeLists are the generated lists the recommendation is judged on:
// three other shares of each family (spanning the published range),
// generator seeds 201-212.
var JudgeLists = []gen.GenConfig{
	{Family: gen.FamilyCPU, Share: 0.00, Seed: 201}, {Family: gen.FamilyCPU, Share: 0.15, Seed: 202}, {Family: gen.FamilyCPU, Share: 0.30, Seed: 203},
	{Family: gen.FamilyGPUShare, Share: 0.20, Seed: 204}, {Family: gen.FamilyGPUShare, Share: 0.50, Seed: 205}, {Family: gen.FamilyGPUShare, Share: 0.90, Seed: 206},
	{Family: gen.FamilyGPUSpec, Share: 0.05, Seed: 207}, {Family: gen.FamilyGPUSpec, Share: 0.20, Seed: 208}, {Family: gen.FamilyGPUSpec, Share: 0.33, Seed: 209},
	{Family: gen.FamilyMultiGPU, Share: 0.10, Seed: 210}, {Family: gen.FamilyMultiGPU, Share: 0.30, Seed: 211}, {Family: gen.FamilyMultiGPU, Share: 0.50, Seed: 212},
}

// TuneSeeds and JudgeSeeds are the simulation seeds of the two sets (10
// each; JudgeSeeds are the paper's 42-51).
var (
	TuneSeeds  = []uint64{1042, 1043, 1044, 1045, 1046, 1047, 1048, 1049, 1050, 1051}
	JudgeSeeds = []uint64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}
)

// SetNames are the sets of generated lists Set knows.
var SetNames = []string{"tune", "judge", "none"}

// Set returns the generated lists of a set and its seeds: "tune"
// (TuneLists, TuneSeeds), "judge" (JudgeLists, JudgeSeeds) or "none" (no
// list, JudgeSeeds), with offset added to every generator seed (fresh
// lists of the same shares, for a new round of judging); ok is false for
// another name.
func Set(name string, offset uint64) (lists []gen.GenConfig, seeds []uint64, ok bool) {
	switch name {
	case "tune":
		lists, seeds = TuneLists, TuneSeeds
	case "judge":
		lists, seeds = JudgeLists, JudgeSeeds
	case "none":
		seeds = JudgeSeeds
	default:
		return nil, nil, false
	}
	if offset > 0 {
		lists = slices.Clone(lists)
		for i := range lists {
			lists[i].Seed += offset
		}
	}
	return lists, seeds, true
}

// JudgeConfig is a judgement: every candidate against Ref on every list,
// with every seed.
type JudgeConfig struct {
	Nodes      []cluster.Node
	Lists      []gen.List
	Ref        string   // the reference policy spec ("fgd")
	Candidates []string // policy specs
	Seeds      []uint64
	Options    protocol.Options
}

// Paired is the paired difference candidate − reference of the share of
// GPUs unallocated at 100% arrived demand (fractions of 1) over N pairs
// (seeds, or seeds × lists): mean, standard error and the two-sided 95%
// confidence interval from Student's t with N-1 degrees of freedom.
type Paired struct {
	N         int     `json:"n"`
	Mean      float64 `json:"mean"`
	SE        float64 `json:"se"`
	Low, High float64 `json:"-"`
}

// Verdict of a Paired difference: worse or better beyond noise (the 95%
// interval lies above or below zero), else equal.
func (d Paired) Verdict() string {
	switch {
	case d.Low > 0:
		return "worse"
	case d.High < 0:
		return "better"
	}
	return "equal"
}

// NewPaired summarises paired differences.
func NewPaired(ds []float64) Paired {
	ms := protocol.NewMeanStd(ds)
	d := Paired{N: len(ds), Mean: ms.Mean}
	if len(ds) > 1 {
		d.SE = ms.Std / math.Sqrt(float64(len(ds)))
	}
	h := tQuantile975(len(ds)-1) * d.SE
	d.Low, d.High = d.Mean-h, d.Mean+h
	return d
}

// tQuantile975 is Student's t 97.5% quantile for df degrees of freedom
// (a table to 30, then the normal's 1.96; 0 for df < 1, where the
// interval collapses to the mean).
func tQuantile975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return 0
	case df <= len(table):
		return table[df-1]
	}
	return 1.96
}

// ListResult is one list of a judgement.
type ListResult struct {
	List   string             `json:"list"`
	Family gen.Family         `json:"family"`
	Ref    protocol.MeanStd   `json:"ref_unallocated_share"`
	Cands  []protocol.MeanStd `json:"unallocated_share"` // per candidate
	Diffs  []Paired           `json:"diff"`              // per candidate, candidate − Ref
}

// FamilyResult pools a family's lists: the paired differences of every
// (list, seed) pair, and how many of its lists were worse, equal and
// better beyond noise.
type FamilyResult struct {
	Family gen.Family `json:"family"`
	Diffs  []Paired   `json:"diff"` // per candidate
	Worse  []int      `json:"worse_lists"`
	Equal  []int      `json:"equal_lists"`
	Better []int      `json:"better_lists"`
}

// Judgement is the result of Judge.
type Judgement struct {
	Ref        string         `json:"ref"`
	Candidates []string       `json:"candidates"`
	Seeds      []uint64       `json:"seeds"`
	Lists      []ListResult   `json:"lists"`
	Families   []FamilyResult `json:"families"`
	// Mean is per candidate the mean over families of the family mean
	// difference (every family weighs the same).
	Mean []float64 `json:"mean_diff"`
	// Passes is per candidate whether it meets the rule for
	// recommending it: no family worse beyond noise, and Mean below 0.
	Passes []bool `json:"passes"`
}

// Best returns the passing candidate with the lowest Mean, or "" when
// none passes.
func (j *Judgement) Best() string {
	best := -1
	for c := range j.Candidates {
		if j.Passes[c] && (best < 0 || j.Mean[c] < j.Mean[best]) {
			best = c
		}
	}
	if best < 0 {
		return ""
	}
	return j.Candidates[best]
}

// Judge runs the reference and the candidates on every list and seed (one
// Grid per list, every list's cells run with one call of run, so that its
// workers stay busy from the first list to the last) and judges them. The
// unallocated share is read at 100% arrived demand, or the nearest
// percent a run sampled.
func Judge(ctx context.Context, c JudgeConfig, run protocol.Runner) (*Judgement, error) {
	if c.Ref == "" || len(c.Candidates) == 0 || len(c.Seeds) == 0 || len(c.Lists) == 0 {
		return nil, fmt.Errorf("%w: a judgement needs a reference, candidates, seeds and lists (got %d candidates, %d seeds, %d lists)",
			cluster.ErrEmpty, len(c.Candidates), len(c.Seeds), len(c.Lists))
	}
	j := &Judgement{Ref: c.Ref, Candidates: c.Candidates, Seeds: c.Seeds}
	policies := append([]string{c.Ref}, c.Candidates...)
	shares, err := runGrids(ctx, c, policies, run)
	if err != nil {
		return nil, err
	}
	pooled := map[gen.Family][][]float64{} // family -> candidate -> diffs
	var fams []gen.Family
	for li, l := range c.Lists {
		share := func(p int) []float64 { return shares[li][p*len(c.Seeds) : (p+1)*len(c.Seeds)] }
		ref := share(0)
		lr := ListResult{List: l.Name, Family: l.Family, Ref: protocol.NewMeanStd(ref)}
		if _, ok := pooled[l.Family]; !ok {
			fams = append(fams, l.Family)
			pooled[l.Family] = make([][]float64, len(c.Candidates))
		}
		for ci := range c.Candidates {
			u := share(ci + 1)
			ds := make([]float64, len(u))
			for k := range u {
				ds[k] = u[k] - ref[k]
			}
			lr.Cands, lr.Diffs = append(lr.Cands, protocol.NewMeanStd(u)), append(lr.Diffs, NewPaired(ds))
			pooled[l.Family][ci] = append(pooled[l.Family][ci], ds...)
		}
		j.Lists = append(j.Lists, lr)
	}
	j.Mean, j.Passes = make([]float64, len(c.Candidates)), make([]bool, len(c.Candidates))
	for ci := range j.Passes {
		j.Passes[ci] = true
	}
	for _, f := range fams {
		fr := FamilyResult{Family: f, Worse: make([]int, len(c.Candidates)), Equal: make([]int, len(c.Candidates)), Better: make([]int, len(c.Candidates))}
		for ci := range c.Candidates {
			d := NewPaired(pooled[f][ci])
			fr.Diffs = append(fr.Diffs, d)
			j.Mean[ci] += d.Mean / float64(len(fams))
			if d.Verdict() == "worse" {
				j.Passes[ci] = false
			}
			for _, l := range j.Lists {
				if l.Family != f {
					continue
				}
				switch l.Diffs[ci].Verdict() {
				case "worse":
					fr.Worse[ci]++
				case "better":
					fr.Better[ci]++
				default:
					fr.Equal[ci]++
				}
			}
		}
		j.Families = append(j.Families, fr)
	}
	for ci := range j.Passes {
		j.Passes[ci] = j.Passes[ci] && j.Mean[ci] < 0
	}
	return j, nil
}

// runGrids runs the grid of every list (policies × c.Seeds) as one job
// list, the lists in order, each list's cells in cell order (run nil: one
// after another, stopping when ctx is done), and returns per list and
// cell (policy-major, as Grid's) the share of GPUs unallocated at 100%
// arrived demand: a list's runs are let go once all have run. Its error
// is the first list's with a failed cell, or with a cell that did not run
// (ctx's error), as Grid.Run gives it, prefixed with the list's name.
func runGrids(ctx context.Context, c JudgeConfig, policies []string, run protocol.Runner) ([][]float64, error) {
	grids := make([]*protocol.Grid, len(c.Lists))
	shares := make([][]float64, len(c.Lists))
	left := make([]atomic.Int32, len(c.Lists)) // cells not run yet
	first := make([]int, len(c.Lists)+1)       // list li's cells are jobs first[li] to first[li+1]-1
	for li, l := range c.Lists {
		grids[li] = protocol.NewGrid(protocol.GridConfig{Nodes: c.Nodes, Pods: l.Pods, Policies: policies, Seeds: c.Seeds, Options: c.Options})
		first[li+1] = first[li] + grids[li].Len()
		shares[li] = make([]float64, grids[li].Len())
		left[li].Store(int32(grids[li].Len()))
	}
	n := first[len(c.Lists)]
	listOf := make([]int32, n)
	for li := range c.Lists {
		for i := first[li]; i < first[li+1]; i++ {
			listOf[i] = int32(li)
		}
	}
	errs, ran := make([]error, n), make([]bool, n)
	job := func(_ context.Context, i int) error {
		li := int(listOf[i])
		g, cell := grids[li], i-first[li]
		errs[i], ran[i] = g.RunCell(cell), true
		if errs[i] == nil {
			p, _ := g.Cell(cell)
			r := g.Runs(p)[cell%len(c.Seeds)]
			sum := protocol.Aggregate([]*protocol.Run{r})
			shares[li][cell] = sum.Nearest(100).UnallocatedShare().Mean
		}
		if left[li].Add(-1) == 0 {
			grids[li] = nil // the list's last cell: let its runs go
		}
		return nil // kept in errs, so that only the first is reported
	}
	var err error
	if run != nil {
		err = run(ctx, n, job)
	} else {
		for i := range n {
			if err = ctx.Err(); err != nil {
				break
			}
			job(ctx, i)
		}
	}
	for li, l := range c.Lists {
		for i := first[li]; i < first[li+1]; i++ {
			if errs[i] != nil {
				return nil, fmt.Errorf("list %s: %w", l.Name, errs[i])
			}
		}
		for i := first[li]; i < first[li+1]; i++ {
			if !ran[i] {
				return nil, fmt.Errorf("list %s: %w", l.Name, cmp.Or(err, ctx.Err(), errNotRun))
			}
		}
	}
	return shares, nil
}

// errNotRun is runGrids' error for a cell the Runner skipped without
// saying why.
var errNotRun = errors.New("cluster judge: a run was skipped")
