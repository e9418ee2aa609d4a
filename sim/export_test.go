package sim

// Test hooks for the external tests (package sim_test).

// NoFastPaths turns off the engine's fast paths (decode runs, repeated
// activation round trips, kept fragmentation metrics); call it before Run.
func NoFastPaths(e *Engine) { e.noFastPaths() }

// FastPathSteps returns the steps decode runs did and the steps whose
// activation calls a repeated round trip stood in for.
func FastPathSteps(e *Engine) (runSteps, tripRepeats int64) { return e.runs.steps, e.trips.repeats }

// SampleWork returns the sampling loop's iterations and the samples it took
// (every sample time up to the end, before thinning).
func SampleWork(e *Engine) (iterations, taken int64) { return e.samp.iters, e.samp.taken }
