package calib

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
)

// seeded returns the file at path with a "seed" key (vLLM's --metadata
// seed=N) of seed added, so that its Poisson arrivals are drawn with that
// seed: another file of the same run, as if the benchmark had been rerun
// with --seed N.
func seeded(tb testing.TB, path string, seed int) *File {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	i := bytes.IndexByte(data, '{')
	if i < 0 {
		tb.Fatalf("%s: no JSON object", path)
	}
	out := append(append(append([]byte(nil), data[:i+1]...), fmt.Sprintf(`"seed": "%d", `, seed)...), data[i+1:]...)
	f, err := ReadFile(bytes.NewReader(out), fmt.Sprintf("%s (seed %d)", path, seed))
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// BenchmarkCalibrate10 is the benchmark: a calibration of 10
// files. The 10 files are the shared surajssd qps 1 and qps 16 runs (200
// requests each, Llama-3.3-70B TP 8 on A100-40GB) under 5 seeds each,
// every default on (noise over 8 draws, identification, Nelder–Mead up to
// DefaultMaxEvals). Target: under 30 s.
func BenchmarkCalibrate10(b *testing.B) {
	var files []*File
	for _, q := range []string{"01", "16"} {
		p := sharedBench(b, surajssd(q))
		for seed := range 5 {
			files = append(files, seeded(b, p, seed))
		}
	}
	benchCalibrate(b, files)
}

// BenchmarkCalibrateFixture10 is the same on 10 seeds of the 6-request
// fixture cut from the qps 1 run, which needs no shared data.
func BenchmarkCalibrateFixture10(b *testing.B) {
	var files []*File
	for seed := range 10 {
		files = append(files, seeded(b, benchFixture("vllm_bench_qps1_cut.json"), seed))
	}
	benchCalibrate(b, files)
}

func benchCalibrate(b *testing.B, files []*File) {
	s := setup70B(b)
	var evals int
	for b.Loop() {
		rep, err := Calibrate(context.Background(), files, nil, FitOptions{Setup: s})
		if err != nil {
			b.Fatal(err)
		}
		evals = rep.Fit.Evaluations + rep.Fit.ProbeEvaluations
	}
	b.ReportMetric(float64(evals), "evals")
}
