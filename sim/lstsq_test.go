package sim

import "gonum.org/v1/gonum/mat"

// leastSquares returns the x minimising |A x − y|² for the rows of A
// (gonum's QR solve), for the tests that fit the step model's forms to
// cited kernel tables.
func leastSquares(rows [][]float64, y []float64) []float64 {
	a := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, r := range rows {
		a.SetRow(i, r)
	}
	var x mat.VecDense
	if err := x.SolveVec(a, mat.NewVecDense(len(y), y)); err != nil {
		panic(err) // the tables' designs have full column rank
	}
	return x.RawVector().Data
}
