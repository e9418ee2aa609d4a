// One fold of the leave-one-out protocol, fitted and judged alone: the
// quick loop for a change of the step model or the fit (`go run
// ./calib/cmd/refit -folds source:accelmark,...`), which writes nothing.
// docs/fidelity.md's held-out figures are the same errors, from the full
// refit.

package calib

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/sim"
)

// FoldFigure is one figure a fold judges: its relative error under the
// model fitted without it.
type FoldFigure struct {
	Figure *Figure
	// Profile names the GPU, engine and release (or class) it ran under.
	Profile string
	// Err is (simulated − published) ÷ published; OK is false when the
	// run gives no value.
	Err float64
	OK  bool
}

// Fold is a fold's fit and the figures it judges.
type Fold struct {
	Fit     *JointFit
	Figures []FoldFigure
}

// Median is the median |relative error| of the fold's figures with a
// value, and how many there are.
func (f *Fold) Median() (float64, int) {
	var errs []float64
	for _, x := range f.Figures {
		if x.OK {
			errs = append(errs, math.Abs(x.Err))
		}
	}
	return stats.Median(errs), len(errs)
}

// JudgeFold fits the joint model without o.Without (required) and judges
// the figures left out that count towards the targets (use fit or
// holdout, a metric of FidelityMetrics) with it, as docs/fidelity.md's
// "held out by source" and "held out by GPU" columns do.
func JudgeFold(ctx context.Context, d *Dataset, o JointFitOptions) (*Fold, error) {
	if o.Without == "" {
		return nil, fmt.Errorf("%w: a fold needs what it leaves out (source:ID or gpu:NAME)", ErrFidelity)
	}
	fit, err := FitJoint(ctx, d, o)
	if err != nil {
		return nil, err
	}
	figs, err := JudgeWith(ctx, d, o, fit.Model)
	if err != nil {
		return nil, err
	}
	return &Fold{Fit: fit, Figures: figs}, nil
}

// JudgeWith judges the figures o.Without leaves out, as JudgeFold does,
// with the model m instead of a fit.
func JudgeWith(ctx context.Context, d *Dataset, o JointFitOptions, m *sim.JointModel) ([]FoldFigure, error) {
	jp, err := jointTargets(d, o, true)
	if err != nil {
		return nil, err
	}
	if err := recordCases(ctx, jp.cases, o.Workers); err != nil {
		return nil, err
	}
	vals, ok, err := jp.values(ctx, m)
	if err != nil {
		return nil, err
	}
	var out []FoldFigure
	for k, t := range jp.targets {
		ff := FoldFigure{Figure: t.fig, Profile: t.plan.gpu + " " + t.plan.engine.String(), OK: ok[k]}
		if t.c >= 0 {
			ff.Profile = jp.cases[t.c].profileLabel()
		}
		if ok[k] {
			ff.Err = vals[k]/t.fig.Value - 1
		}
		out = append(out, ff)
	}
	slices.SortStableFunc(out, func(a, b FoldFigure) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Figure.Metric, b.Figure.Metric))
	})
	return out, nil
}

// JointParamValue is the value of the joint model's parameter name
// (JointParamNames) in j; false for an unknown name.
func JointParamValue(j *sim.JointModel, name string) (float64, bool) {
	for _, p := range jointParams() {
		if p.name == name {
			return p.get(j), true
		}
	}
	return 0, false
}
