// Which parameters the runs pin: each candidate's effect on the fitted
// metrics (over their noise) is measured at the start, and the candidates
// are taken in paramTable's order while the linearised fit would still
// know every chosen one within maxStdErr. See fit.go.

package calib

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

const (
	// probeStep is the relative change of a parameter when its effect is
	// measured (20%): large enough to move the simulated steps by more
	// than a nanosecond's rounding, small enough to stay near the start.
	probeStep = 0.2
	// maxStdErr is the largest standard error, in ln units, a fitted
	// parameter may have in the linearised fit at the start (0.2: about
	// ±20%). A parameter the runs cannot pin that closely, alone or beside
	// those chosen before it, is left at the start's value: fitting it
	// would fit the noise, and trade it off against the others along a
	// direction the runs do not see (weight reads and the step overhead
	// are one constant per decode step for a single model).
	maxStdErr = 0.2
)

// identify chooses the parameters to fit (indexes in paramTable, in table
// order) from the weighted residuals r0 at the start, and reports every
// candidate. It costs one replay of the fitted runs per candidate
// (probes).
//
// For each candidate j it measures the column J_j = d r ÷ d ln(parameter)
// of the residuals over their noise by one change of probeStep. In table
// order, j is chosen when, with it, every chosen parameter's standard
// error sqrt(diag((JᵀJ)⁻¹)) stays within maxStdErr, up to one parameter
// fewer than there are fitted metrics (so an error is left to measure the
// fit by). With FitOptions.Params the named parameters are fitted whatever
// their errors, and the report says which the runs do not pin.
func (f *fitter) identify(ctx context.Context, r0 []float64) (chosen []int, reports []ParamReport, probes int, err error) {
	var forced map[int]bool
	if len(f.o.Params) > 0 {
		idx, err := lookupParams(f.o.Params)
		if err != nil {
			return nil, nil, 0, err
		}
		forced = map[int]bool{}
		for _, j := range idx {
			forced[j] = true
		}
	}
	limit := max(1, len(f.slots)-1)
	var cols [][]float64 // the chosen parameters' columns
	perSeq := false      // overhead.per_seq_ns is chosen (load.go)
	for _, j := range f.load.order(f.start) {
		pm := &paramTable[j]
		v := pm.get(f.start)
		rep := ParamReport{Name: pm.name, Before: v, After: v, index: j}
		switch {
		case pm.needsTP && f.o.Setup.TP <= 1:
			rep.Reason = "no effect at tp 1"
		case forced != nil && !forced[j]:
			rep.Reason = "not asked for (--params)"
		case pm.name == "overhead.step_ns" && hostChosen(chosen):
			rep.Reason = "set by " + hostParam + ", which is fitted"
		case forced == nil:
			rep.Reason = f.load.loadKeeps(pm, perSeq)
		}
		if rep.Reason != "" {
			reports = append(reports, rep)
			continue
		}
		col, err := f.column(ctx, j, r0)
		if err != nil {
			return nil, nil, 0, err
		}
		probes++
		for k, x := range col {
			rep.Elasticity = math.Max(rep.Elasticity, math.Abs(x*f.slots[k].sigma))
		}
		trial := append(append([][]float64(nil), cols...), col)
		se, ok := stdErrs(trial)
		worst := 0.0
		for _, s := range se {
			worst = math.Max(worst, s)
		}
		reason := ""
		switch {
		case !ok || worst > maxStdErr:
			reason = whyNot(col, se, ok, chosen, cols)
		case len(chosen) >= limit:
			reason = fmt.Sprintf("%d parameters are fitted already, and %d metrics can pin at most %d with an error left to measure the fit by",
				len(chosen), len(f.slots), limit)
		}
		if forced != nil || reason == "" {
			chosen = append(chosen, j)
			cols = trial
			rep.Fitted = true
			rep.Because = f.load.loadFits(pm)
			perSeq = perSeq || pm.name == "overhead.per_seq_ns"
			if reason != "" {
				rep.Reason = "fitted as asked, but " + reason
				f.warns = append(f.warns, fmt.Sprintf("%s is fitted as --params asks, but %s", pm.name, reason))
			}
		} else {
			rep.Reason = reason
		}
		reports = append(reports, rep)
	}
	// The chosen set's standard errors, for the report.
	if se, ok := stdErrs(cols); ok {
		k := 0
		for i := range reports {
			if reports[i].Fitted {
				reports[i].StdErr = se[k]
				k++
			}
		}
	}
	// The report lists them in the table's order, whatever order the load
	// tried them in.
	slices.SortStableFunc(reports, func(a, b ParamReport) int { return a.index - b.index })
	return chosen, reports, probes, nil
}

// hostChosen says whether the host's speed (hostParam) is among the
// chosen parameters: it is the step's fixed cost, which then is not fitted
// apart.
func hostChosen(chosen []int) bool {
	for _, j := range chosen {
		if paramTable[j].name == hostParam {
			return true
		}
	}
	return false
}

// whyNot says why a candidate whose column is col, and whose trial set
// (the chosen parameters' columns cols, then col) has standard errors se
// (ok false: singular), is not fitted.
func whyNot(col, se []float64, ok bool, chosen []int, cols [][]float64) string {
	alone, aloneOK := stdErrs([][]float64{col})
	if !aloneOK || alone[0] > maxStdErr {
		if !aloneOK {
			return "it has no effect on the fitted metrics"
		}
		return fmt.Sprintf("the runs pin it only within ±%.0f%% (one standard error over their noise; a fitted parameter needs ±%.0f%%)",
			100*alone[0], 100*maxStdErr)
	}
	// It is pinned alone: it is the overlap with a chosen one. Name the
	// chosen parameter whose effect is most like its own.
	best, bestCos := "", -1.0
	for k, j := range chosen {
		if c := math.Abs(cosine(col, cols[k])); c > bestCos {
			best, bestCos = paramTable[j].name, c
		}
	}
	if !ok {
		return fmt.Sprintf("its effect on the fitted metrics is that of %s (cosine %.2f): the runs cannot tell them apart", best, bestCos)
	}
	worst, w := "it", 0.0
	for k, s := range se {
		if s > w {
			worst, w = "it", s
			if k < len(chosen) {
				worst = paramTable[chosen[k]].name
			}
		}
	}
	return fmt.Sprintf("fitted beside the parameters chosen before it, %s would be pinned only within ±%.0f%% (its effect is most like that of %s: cosine %.2f)",
		worst, 100*w, best, bestCos)
}

// column measures d r ÷ d ln(parameter j) at the start for every slot: one
// replay with the parameter changed by probeStep (down when up would
// leave its range).
func (f *fitter) column(ctx context.Context, j int, r0 []float64) ([]float64, error) {
	pm := &paramTable[j]
	v := math.Max(pm.lo, math.Min(pm.hi, pm.get(f.start)))
	up := v * (1 + probeStep)
	if up > pm.hi {
		up = v / (1 + probeStep)
	}
	if pm.integer {
		up = math.Round(up)
	}
	p := f.start.Clone()
	pm.set(p, up)
	vals, _, err := f.evaluate(ctx, p, f.fitIdx, f.o.Seeds)
	if err != nil {
		return nil, err
	}
	r := f.residuals(vals)
	col := make([]float64, len(r))
	d := math.Log(up / v)
	if d == 0 || math.IsNaN(d) {
		return col, nil
	}
	for k := range r {
		col[k] = (r[k] - r0[k]) / d
	}
	return col, nil
}

// stdErrs returns sqrt(diag((JᵀJ)⁻¹)) for the columns J (the standard
// errors of a linearised least-squares fit whose residuals have unit
// variance), and false when JᵀJ is singular.
func stdErrs(cols [][]float64) ([]float64, bool) {
	n := len(cols)
	if n == 0 {
		return nil, true
	}
	a := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			a.SetSym(i, j, dot(cols[i], cols[j]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return nil, false
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, false
	}
	se := make([]float64, n)
	for i := range n {
		v := inv.At(i, i)
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, false
		}
		se[i] = math.Sqrt(v)
	}
	return se, true
}

func cosine(a, b []float64) float64 {
	na, nb := math.Sqrt(dot(a, a)), math.Sqrt(dot(b, b))
	if na == 0 || nb == 0 {
		return 0
	}
	return dot(a, b) / (na * nb)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}
