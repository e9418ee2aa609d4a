package calib

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// OpsDir is where the repository keeps operator timings measured on real
// GPUs (calib/device/steptime.py), relative to its root; docs/fidelity.md
// judges the joint model's GEMM terms on them.
const OpsDir = "calib/testdata/ops"

// OpsPageRow is one file of measured operator timings, judged under a
// joint model: the GEMM points of a layer whose kernels no fit saw.
type OpsPageRow struct {
	File    string // base name, under OpsDir
	GPUName string // as torch named it
	GPU     string // the preset it is judged as
	Layer   string // the shape timed, with " FP8" for FP8 weights
	// Points is how many GEMM points are judged: all of them for BF16
	// weights; for FP8 only the compute-bound ones (≥ computeBoundTokens
	// rows), since torch's FP8 kernel at decode sizes is not what servers
	// run (docs/calibrate.md, "FP8 linear layers").
	Points        int
	Median, Worst float64 // |relative error| of the joint model over those points
	WorstAt       string  // the worst point, "n=192", with its signed error in WorstErr
	WorstErr      float64
}

// opsGPUPresets names the GPU preset of torch's device names; an operator
// file of another GPU is refused until its preset is named here.
var opsGPUPresets = map[string]string{
	"NVIDIA H200":           "h200-141g",
	"NVIDIA H100 80GB HBM3": "h100-80g",
	"NVIDIA A100-SXM4-80GB": "a100-80g",
	"NVIDIA A100-SXM4-40GB": "a100-40g",
	"NVIDIA L40S":           "l40s-48g",
}

// OpsPage judges every operator-timing file in dir (steptime.py's schema;
// other JSON files there, such as peaks.py's, are passed over) that was
// replayed as CUDA graphs under j (nil: the embedded joint model), with
// its GPU's vLLM V1 profile: eager files time Python's launches, not the
// kernels. Rows are sorted by file name.
func OpsPage(dir string, j *sim.JointModel) ([]OpsPageRow, error) {
	if j == nil {
		j = sim.DefaultJoint()
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	v, err := sim.ParseEngineVersion(sim.EngineVLLMV1, "")
	if err != nil {
		return nil, err
	}
	var rows []OpsPageRow
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var head struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(data, &head) != nil || head.Schema != OpsSchema {
			continue
		}
		o, err := ReadOps(bytes.NewReader(data), name)
		if err != nil {
			return nil, err
		}
		if o.TimingMode() != "cuda-graph" {
			continue
		}
		preset, ok := opsGPUPresets[o.GPUName]
		if !ok {
			return nil, fmt.Errorf("%w: %s: GPU %q has no preset in calib.opsGPUPresets", ErrBadOps, name, opsClip(o.GPUName))
		}
		g, err := model.LookupGPU(preset)
		if err != nil {
			return nil, err
		}
		p, err := j.Profile(g, sim.EngineVLLMV1, v)
		if err != nil {
			return nil, err
		}
		fit, err := FitOps(o, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		row := OpsPageRow{File: filepath.Base(name), GPUName: o.GPUName, GPU: preset, Layer: o.Model.Name}
		if o.FP8() {
			row.Layer += " FP8"
		}
		var errs []float64
		for i, lp := range o.Linear {
			pt := fit.Points[i] // FitOps lists the linear points first, in o.Linear's order
			if o.FP8() && lp.Tokens < computeBoundTokens {
				continue
			}
			errs = append(errs, math.Abs(pt.BeforeError))
			if math.Abs(pt.BeforeError) > math.Abs(row.WorstErr) {
				row.WorstAt, row.WorstErr = pt.What, pt.BeforeError
			}
		}
		if len(errs) == 0 {
			continue
		}
		row.Points, row.Median, row.Worst = len(errs), stats.Median(errs), slices.Max(errs)
		rows = append(rows, row)
	}
	return rows, nil
}
