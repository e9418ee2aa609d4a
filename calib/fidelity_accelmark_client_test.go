package calib

import (
	"math"
	"testing"
)

// TestPyRandom: newPyRandom draws what CPython's random.Random(42) draws. The
// vectors were printed by python3 (3.11.7; random.py's expovariate is the
// same expression in 3.10, the clients' Python):
//
//	r = random.Random(42); [r.getrandbits(32) for _ in range(630)]
//	r = random.Random(42); r.Random(), r.Random()
//	r = random.Random(42); [r.Expovariate(5) for _ in range(300)]
func TestPyRandom(t *testing.T) {
	r := newPyRandom(42)
	var u []uint32
	for range 630 {
		u = append(u, r.Uint32())
	}
	// 630 draws pass the first regeneration of the 624-word state.
	if u[0] != 2746317213 || u[1] != 478163327 || u[2] != 107420369 || u[629] != 2404681399 {
		t.Fatalf("getrandbits(32): %d %d %d … %d, want 2746317213 478163327 107420369 … 2404681399", u[0], u[1], u[2], u[629])
	}
	r = newPyRandom(42)
	if a, b := r.Random(), r.Random(); a != 0.6394267984578837 || b != 0.025010755222666936 {
		t.Fatalf("random(): %v %v, want 0.6394267984578837 0.025010755222666936", a, b)
	}
	r = newPyRandom(42)
	var x []float64
	for range 300 {
		x = append(x, r.Expovariate(5))
	}
	if !ulpNear(x[0], 0.2040120574549602) || !ulpNear(x[299], 0.42929822046690536) {
		t.Fatalf("expovariate(5): %v … %v, want 0.2040120574549602 … 0.42929822046690536", x[0], x[299])
	}
}

// ulpNear says whether a and b are within 4 units in the last place: Go's
// math.Log and glibc's log, which CPython calls, differ by one ulp on some
// arguments (expovariate's first draw, for one), 1e-16 of a second here,
// far below the nanoseconds of workload.Request.Arrival.
func ulpNear(a, b float64) bool {
	return math.Abs(a-b) <= 4*math.Abs(math.Nextafter(b, math.Inf(1))-b)
}

// TestFidelityAccelMarkClientArrivals: each run's arrivals are the
// client's own, with every earlier rate's and run's draws consumed first.
// The vectors are the first, middle (n/2) and last arrival of each run, as
// python3 prints them:
//
//	r = random.Random(42)
//	for q in rates:            # the suite's online_qps_levels, in order
//	    for k in range(3):     # num_runs
//	        a = list(itertools.accumulate([r.Expovariate(q) for _ in range(n)]))
func TestFidelityAccelMarkClientArrivals(t *testing.T) {
	for _, c := range []struct {
		ref     string
		rate    float64
		n, run  int
		a, m, z float64
	}{
		{"x/nvidia_a100_sxm4_80gbx1_suite_A_nvidia_sglang_c43a8309_b14c1ebc/online/result.json", 5, 300, 0, 0.2040120574549602, 30.336241795591356, 62.90434830457228},
		{"x_suite_A_y", 25, 300, 1, 0.07444035889803519, 5.48848985908476, 11.799491876858175},
		{"x_suite_A_y", 100, 300, 2, 0.01680602359340117, 1.5709009003517629, 2.958761727935654},
		{"x_suite_B_y", 2, 200, 1, 1.7368236745173216, 58.408295941692884, 112.39243919250464},
		{"x_suite_B_y", 25, 200, 0, 0.030289639147923555, 4.453244229567603, 8.12494180012694},
		{"x_suite_C_y/fp8/online", 10, 300, 2, 0.11375941267361485, 15.352133404559456, 30.70416165427564},
		{"x_suite_C_y", 50, 300, 1, 0.039909468148582296, 3.001193393599872, 6.049764390589804},
	} {
		runs, err := fidAccelMarkClientArrivals(c.ref, c.rate, c.n)
		if err != nil {
			t.Fatalf("%s at %g: %v", c.ref, c.rate, err)
		}
		if len(runs) != 3 || len(runs[c.run]) != c.n {
			t.Fatalf("%s at %g: %d runs, want 3 of %d", c.ref, c.rate, len(runs), c.n)
		}
		at := runs[c.run]
		if !ulpNear(at[0], c.a) || !ulpNear(at[c.n/2], c.m) || !ulpNear(at[c.n-1], c.z) {
			t.Errorf("%s at %g, run %d: %v %v %v, want %v %v %v", c.ref, c.rate, c.run, at[0], at[c.n/2], at[c.n-1], c.a, c.m, c.z)
		}
	}
	for _, c := range []struct {
		ref  string
		rate float64
		n    int
	}{
		{"x_suite_A_y", 7, 300},  // not a rate of the suite
		{"x_suite_A_y", 25, 150}, // not the suite's run
		{"x_suite_F_y", 10, 300}, // a suite not cited
		{"no suite", 5, 300},
	} {
		if _, err := fidAccelMarkClientArrivals(c.ref, c.rate, c.n); err == nil {
			t.Errorf("%s at %g, %d requests: no error", c.ref, c.rate, c.n)
		}
	}
}
