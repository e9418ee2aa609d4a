// GPU presets. See package model for the overview.

package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownGPU is returned (wrapped) by LookupGPU for a name that is not a preset.
var ErrUnknownGPU = errors.New("unknown gpu")

// GPU is what the simulator needs to know about one accelerator.
//
// Capacity convention: the memory.total that nvidia-smi reports for the
// board, in MiB × 2^20 bytes. It is below the marketing figure (which is in
// GB = 10^9, or is the raw HBM size before the driver's reserved and ECC
// regions) and is the number users see, so a simulated "80 GiB" device
// matches a real one within the CUDA context overhead (a few hundred MiB,
// which belongs to the simulator's non-KV memory, not here). CUDA's
// cudaMemGetInfo total can be a little lower still: e.g. an A100-SXM4-40GB
// reports 42,298,834,944 B (40,339 MiB) to deviceQuery against nvidia-smi's
// 40,536 MiB (bottlerocket-os/bottlerocket PR #3873).
type GPU struct {
	Name         string
	Capacity     int64   // bytes: nvidia-smi memory.total (MiB) × 2^20
	MemBandwidth float64 // bytes/s, datasheet peak (decimal TB/s × 10^12)
	BF16FLOPS    float64 // FLOP/s, datasheet dense BF16 tensor peak, without 2:4 sparsity
	// FP8FLOPS is the datasheet dense FP8 tensor peak in FLOP/s (without
	// 2:4 sparsity); 0 where the GPU has no FP8 tensor cores (Ampere,
	// Turing), which run FP8 weights through BF16 math (vLLM's Marlin
	// kernels: weight-only).
	FP8FLOPS float64
	// LinkBandwidth is the GPU-to-GPU bandwidth in bytes/s in one
	// direction, as a ring all-reduce uses it (every GPU sends and receives
	// at once): NVLink on SXM parts, where NVIDIA quotes the bidirectional
	// total (half of it here), and the PCIe slot on cards without NVLink
	// (the one-way figure of the PCIe generation × 16 lanes).
	LinkBandwidth float64

	// Measured* are what independent microbenchmarks (not LLM-serving
	// runs, which are what the simulator is judged on) sustained on this
	// board: 0 where no figure was found (the a800-80g's bandwidth is the
	// a100-80g's, the same board's: TestSameBoardMeasured). The sources are
	// listed above the presets and beside each entry; docs/calibrate.md
	// ("Issue 24, ninth session: what GPUs really sustain") has the table,
	// the figures rejected and why. sim.SustainedPeaks scales the joint model's peaks by them.
	MeasuredMemBandwidth float64 // bytes/s, STREAM-like device-memory bandwidth (triad, or copy counting read + write)
	MeasuredBF16FLOPS    float64 // FLOP/s, large square BF16 GEMM (FP16 on Turing, like BF16FLOPS)
	MeasuredFP8FLOPS     float64 // FLOP/s, large square FP8 GEMM (cuBLASLt)
}

const mib = 1 << 20

// a100SXM80Triad is [azure]'s BabelStream Triad on the A100 SXM4 80GB
// (ND A100 v4), in bytes/s: the a100-80g's measured bandwidth and, as the
// same board with less NVLink, the a800-80g's.
const a100SXM80Triad = 1.70e12

// gpus are the presets. Bandwidth and FLOP/s are NVIDIA datasheet peaks;
// the capacity is the nvidia-smi memory.total quoted beside each entry.
//
// The Measured* figures come from these sources (keys used below):
//   - [azure] Azure/AI-benchmarking-guide @8fd0c6e, Azure_Results/ND_{A100_v4,H100_v5,H200_v5}_results.md
//     (2024-09-24/25): "HBM Bandwidth" is BabelStream, Triad taken; "GEMM CuBLASLt" is m=n=k=8192,
//     random init, 10,000 warm-up iterations (FP8 on H100/H200, FP16 on A100).
//   - [zzc] zzc0721/torch-performance-test-data @9d82827, database.md (rows added 2025-01-31 to
//     2025-10-20, one per contributor): torch.matmul of N×N by N×N, N in 1024..10240, the best N,
//     10 warm-up and 30 timed runs (test.py); the BF16 column (FP16 for the T4). Several rows of one
//     board: their median.
//   - [alcf] argonne-lcf/ALCFBeginnersGuide @ce07d3c, polaris/02_profiling.md (2024-07-17):
//     BabelStream 5.0, CUDA, FP64, 268 MB arrays, driver 12020, Triad.
//   - [chsasank] chsasank/device-benchmarks @7ccc883, README.md table (rows of 2024-02-15):
//     torch copy_ of up to 0.38 GB, read + write bytes, host-timed (biased a little low: the same
//     harness gives the RTX 4090 912 GB/s against [nvbench]'s 922).
//   - [nvbench] xytpai/nvbench @cfe8228, README.md: global_memory_bandwidth, float4 reads; cross-checked
//     by krrishnarraj/clpeak#106 (2023-05-20, 921.3 GB/s float16 reads at a 248 W power limit).
var gpus = map[string]GPU{
	// A100 SXM4 40GB. NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4):
	// 1,555 GB/s HBM2, BF16 tensor 312 TFLOPS (624 with sparsity), no FP8;
	// NVLink 3 600 GB/s (bidirectional), so 300 GB/s each way.
	// nvidia-smi: 40536MiB (e.g. nanopool/phoenix-miner#17; newer drivers print 40960MiB).
	// Measured: [alcf] Triad 1,377.5 GB/s (Polaris, A100-SXM4-40GB); [zzc] BF16 246.33 TFLOPS
	// (2025-02-02, container cloud).
	"a100-40g": {Name: "a100-40g", Capacity: 40536 * mib, MemBandwidth: 1555e9, BF16FLOPS: 312e12,
		LinkBandwidth: 300e9, MeasuredMemBandwidth: 1377.5e9, MeasuredBF16FLOPS: 246.33e12},
	// A100 SXM4 80GB. Same datasheet: 2,039 GB/s HBM2e, 312 TFLOPS, NVLink 3 600 GB/s.
	// nvidia-smi: 81920MiB (shown for the A800-SXM4-80GB, the same board with less NVLink, in dexmal/dexbotic#41).
	// Measured: [azure] ND A100 v4 Triad 1.70 TB/s (FP16 GEMM 8192³ 253.7 TFLOPS there);
	// [zzc] BF16 264.53 TFLOPS (A100 SXM4 80GB, 2025-09-24).
	"a100-80g": {Name: "a100-80g", Capacity: 81920 * mib, MemBandwidth: 2039e9, BF16FLOPS: 312e12,
		LinkBandwidth: 300e9, MeasuredMemBandwidth: a100SXM80Triad, MeasuredBF16FLOPS: 264.53e12},
	// H100 SXM5 80GB. NVIDIA H100 Tensor Core GPU datasheet: 3.35 TB/s HBM3,
	// BF16 1,979 TFLOPS with sparsity, so 989 TFLOPS dense; FP8 3,958 with
	// sparsity, so 1,979 dense; NVLink 4 900 GB/s, so 450 GB/s each way.
	// nvidia-smi: 81559MiB ("NVIDIA H100 80GB HBM3", 700 W, in many public issue reports).
	// Measured: [azure] ND H100 v5 Triad 2.97 TB/s, FP8 GEMM 8192³ 1,290.1 TFLOPS; [zzc] BF16
	// 790.6 TFLOPS, the mean of two "NVIDIA H100 80GB HBM3" rows (797.51 and 783.66, 2025-10).
	"h100-80g": {Name: "h100-80g", Capacity: 81559 * mib, MemBandwidth: 3.35e12, BF16FLOPS: 989e12,
		FP8FLOPS: 1979e12, LinkBandwidth: 450e9,
		MeasuredMemBandwidth: 2.97e12, MeasuredBF16FLOPS: 790.6e12, MeasuredFP8FLOPS: 1290.1e12},
	// H200 SXM 141GB. NVIDIA H200 datasheet: 4.8 TB/s HBM3e, BF16 1,979 TFLOPS
	// with sparsity (989 dense; same compute as H100 SXM), FP8 3,958 with
	// sparsity (1,979 dense), NVLink 900 GB/s (450 GB/s each way).
	// nvidia-smi: 143771MiB ("NVIDIA H200", 700 W, in many public issue reports).
	// Measured: [azure] ND H200 v5 Triad 4.15 TB/s, FP8 GEMM 8192³ 1,300.6 TFLOPS; [zzc] BF16
	// 790.29 TFLOPS (2025-10-05). Our own check on a lent H200 (calib/device/peaks.py, three runs,
	// 2026-12-04, calib/testdata/ops/h200-peaks-*.json): triad 4.23-4.31 TB/s, BF16 658-758
	// TFLOPS, FP8 (torch._scaled_mm) 1,328-1,374: +2..+4%, −17..−4% and +2..+6% of these, which
	// stay (the figures every other GPU's share is taken from are published ones too).
	"h200-141g": {Name: "h200-141g", Capacity: 143771 * mib, MemBandwidth: 4.8e12, BF16FLOPS: 989e12,
		FP8FLOPS: 1979e12, LinkBandwidth: 450e9,
		MeasuredMemBandwidth: 4.15e12, MeasuredBF16FLOPS: 790.29e12, MeasuredFP8FLOPS: 1300.6e12},
	// B200 (HGX B200, 1,000 W). NVIDIA HGX/DGX B200 datasheet: 8 TB/s HBM3e
	// per GPU, FP16/BF16 4.5 PFLOPS with sparsity, so 2.25 PFLOPS dense;
	// FP8 9 PFLOPS with sparsity, so 4.5 dense; NVLink 5 1.8 TB/s (900 GB/s each way).
	// Sold as 192 GB (raw HBM); the HGX spec sheet says 180 GB and
	// nvidia-smi says 183359MiB (NVIDIA/TensorRT-LLM#10278). pytorch/ao PR
	// #4002 measures a 7,680-bit bus, i.e. 7.67 TB/s; we keep the datasheet 8 TB/s.
	// Measured: [zzc] BF16 1,696.03 TFLOPS (GCP a4-highgpu-8g, 2025-07-07). No first-hand
	// bandwidth or FP8 figure (NVIDIA/cccl#9481 gives 92-94% of an unstated driver peak; Azure's
	// GB200 run is another board): 0.
	"b200-192g": {Name: "b200-192g", Capacity: 183359 * mib, MemBandwidth: 8e12, BF16FLOPS: 2.25e15,
		FP8FLOPS: 4.5e15, LinkBandwidth: 900e9, MeasuredBF16FLOPS: 1696.03e12},
	// L40S 48GB (PCIe). NVIDIA L40S datasheet: 864 GB/s GDDR6, BF16 tensor
	// 362.05 TFLOPS dense (733 with sparsity), FP8 1,466 TFLOPS with
	// sparsity (733 dense); no NVLink: PCIe Gen4 x16, 64 GB/s bidirectional
	// (32 GB/s each way).
	// nvidia-smi: 46068 MiB (akash-network/provider-configs PR #99).
	// Measured: [zzc] BF16 269.15 TFLOPS (2025-10-05, container). No L40S bandwidth or FP8
	// figure (RRZE-HPC/gpu-benches measures the 300 W L40: triad 830 GB/s): 0.
	"l40s-48g": {Name: "l40s-48g", Capacity: 46068 * mib, MemBandwidth: 864e9, BF16FLOPS: 362.05e12,
		FP8FLOPS: 733e12, LinkBandwidth: 32e9, MeasuredBF16FLOPS: 269.15e12},
	// A800 SXM4 80GB: the A100 SXM4 80GB with its NVLink cut from 600 to
	// 400 GB/s (bidirectional) for export to China (NVIDIA statement of
	// 2022-11-07; NVIDIA A800 datasheet): 2,039 GB/s HBM2e, BF16 tensor
	// 312 TFLOPS dense (624 with sparsity), no FP8; NVLink 400 GB/s, so
	// 200 GB/s each way. nvidia-smi: 81920MiB ("NVIDIA A800-SXM4-80GB",
	// dexmal/dexbotic#41, the board the a100-80g entry cites).
	// Measured: [zzc] BF16 266.48 TFLOPS (A800 SXM4 80GB, 2025-09-24). No first-hand A800
	// bandwidth figure: the a100-80g's ([azure] Triad 1.70 TB/s) stands for it, as the same
	// board's (same GA100, same 80 GB HBM2e at 2,039 GB/s; only NVLink differs, which a
	// device-memory triad does not touch). A board NVIDIA sells as another SKU (the L40 for the
	// L40S: other clocks and power limit) does not lend its figure (TestSameBoardMeasured).
	"a800-80g": {Name: "a800-80g", Capacity: 81920 * mib, MemBandwidth: 2039e9, BF16FLOPS: 312e12,
		LinkBandwidth: 200e9, MeasuredMemBandwidth: a100SXM80Triad, MeasuredBF16FLOPS: 266.48e12},
	// A10G 24GB (AWS g5 instances; NVIDIA publishes no A10G datasheet).
	// Baseten, "NVIDIA A10 vs A10G for ML model inference": 24 GB GDDR6 at
	// 600 GB/s, as the A10; BF16 tensor 70 TFLOPS dense against the A10's
	// 125 (the excerpt stored here shows the memory figures; 70 is the
	// page's table, and 80 SMs x 1.71 GHz x 512 FLOP a clock, GA102's rate
	// with FP32 accumulate on non-pro boards as the RTX 3090's 71, gives
	// 70.0); no FP8. PCIe Gen4 x16 (32 GB/s each way), no NVLink (g5.12xlarge
	// joins its four over PCIe). nvidia-smi: 23028MiB ("NVIDIA A10G", many
	// public g5 logs).
	// Measured: no first-hand A10G figure found (the A10 is another board): 0.
	"a10g-24g": {Name: "a10g-24g", Capacity: 23028 * mib, MemBandwidth: 600e9, BF16FLOPS: 70e12,
		LinkBandwidth: 32e9},
	// RTX A6000 48GB (GA102 workstation board). NVIDIA RTX A6000 datasheet:
	// 768 GB/s GDDR6 with ECC, tensor 309.7 TFLOPS with sparsity, so BF16
	// 154.8 dense (84 SMs x 1.8 GHz x 1,024: the pro boards' full rate with
	// FP32 accumulate); no FP8. The link is the PCIe Gen4 x16 slot (32 GB/s
	// each way); the NVLink bridge (112.5 GB/s bidirectional) joins two cards
	// only and is not assumed. nvidia-smi: 49140MiB ("NVIDIA RTX A6000",
	// public issue logs).
	// Measured: [zzc] BF16 123.34 TFLOPS (2025-10-05, container); no bandwidth figure stored
	// (chsasank/device-benchmarks#15 has one, cut off before its large arrays): 0.
	"rtx-a6000-48g": {Name: "rtx-a6000-48g", Capacity: 49140 * mib, MemBandwidth: 768e9, BF16FLOPS: 154.8e12,
		LinkBandwidth: 32e9, MeasuredBF16FLOPS: 123.34e12},
	// GeForce RTX 4090 24GB. NVIDIA Ada GPU architecture whitepaper,
	// appendix table: 1,008 GB/s GDDR6X; BF16 tensor with FP32 accumulate
	// 165.2 TFLOPS dense (330.4 sparse), FP8 with FP32 accumulate 330.3
	// dense (660.6 sparse): 128 SMs x 2.52 GHz x 512 is 165.15, kept here
	// so that FP8 is exactly twice BF16 as the whitepaper's own 330.3 is.
	// PCIe Gen4 x16, no NVLink (32 GB/s each way). nvidia-smi: 24564MiB
	// ("NVIDIA GeForce RTX 4090", public issue logs).
	// Measured: [nvbench] 921.85 GB/s; [zzc] BF16 165.26 TFLOPS, the median of the six 24 GB rows
	// (162.39 to 173.31). No FP8 GEMM figure: 0.
	"rtx4090-24g": {Name: "rtx4090-24g", Capacity: 24564 * mib, MemBandwidth: 1008e9, BF16FLOPS: 165.15e12,
		FP8FLOPS: 330.3e12, LinkBandwidth: 32e9, MeasuredMemBandwidth: 921.85e9, MeasuredBF16FLOPS: 165.26e12},
	// GeForce RTX 3090 24GB. NVIDIA Ampere GA102 whitepaper, table 9:
	// 936 GB/s GDDR6X; peak BF16 tensor with FP32 accumulate 71 TFLOPS dense
	// (142 sparse); no FP8. The link is the PCIe Gen4 x16 slot (32 GB/s each
	// way); the optional NVLink bridge (112.5 GB/s bidirectional) is not
	// assumed. nvidia-smi: 24576MiB (noonghunna/club-3090 issue reports).
	// Measured: [chsasank] 831 GB/s; [zzc] BF16 76.58 TFLOPS, the median of three rows (76.34 to
	// 76.68): above the whitepaper's 71, which is at the 1,695 MHz rated boost clock.
	"rtx3090-24g": {Name: "rtx3090-24g", Capacity: 24576 * mib, MemBandwidth: 936e9, BF16FLOPS: 71e12,
		LinkBandwidth: 32e9, MeasuredMemBandwidth: 831e9, MeasuredBF16FLOPS: 76.58e12},
	// Tesla T4 16GB. NVIDIA T4 datasheet: 320 GB/s GDDR6, mixed-precision
	// FP16/FP32 65 TFLOPS, PCIe Gen3 x16 (32 GB/s bidirectional, 16 GB/s
	// each way). Turing has no BF16: BF16FLOPS holds the FP16
	// figure, which is what a T4 deployment (dtype=half) runs at.
	// nvidia-smi: 15360MiB (as Google Colab's T4 prints it; not re-checked against a
	// second source, unlike the others).
	// Measured: [chsasank] 240 GB/s (router-gao/cuda-demo's cuda-samples bandwidthTest, device to
	// device: 239.6); [zzc] FP16 41.93 TFLOPS, the median of three rows (41.91 Colab, 41.93 and
	// 42.71 Kaggle): a 70 W board.
	"t4-16g": {Name: "t4-16g", Capacity: 15360 * mib, MemBandwidth: 320e9, BF16FLOPS: 65e12,
		LinkBandwidth: 16e9, MeasuredMemBandwidth: 240e9, MeasuredBF16FLOPS: 41.93e12},
}

// GPUNames returns the GPU preset names, sorted.
func GPUNames() []string {
	names := make([]string, 0, len(gpus))
	for n := range gpus {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupGPU returns the named GPU preset, case-insensitively ("H100-80G"
// works). Unknown names give an error wrapping ErrUnknownGPU that lists the presets.
func LookupGPU(name string) (GPU, error) {
	g, ok := gpus[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return GPU{}, fmt.Errorf("%w: %q (presets: %s)", ErrUnknownGPU, name, strings.Join(GPUNames(), ", "))
	}
	return g, nil
}
