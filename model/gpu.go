// GPU presets. See package model for the overview.

package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownGPU is returned (wrapped) by LookupGPU for a name that is not a preset.
var ErrUnknownGPU = errors.New("model: unknown gpu")

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
}

const mib = 1 << 20

// gpus are the presets. Bandwidth and FLOP/s are NVIDIA datasheet peaks;
// the capacity is the nvidia-smi memory.total quoted beside each entry.
var gpus = map[string]GPU{
	// A100 SXM4 40GB. NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4):
	// 1,555 GB/s HBM2, BF16 tensor 312 TFLOPS (624 with sparsity).
	// nvidia-smi: 40536MiB (e.g. nanopool/phoenix-miner#17; newer drivers print 40960MiB).
	"a100-40g": {"a100-40g", 40536 * mib, 1555e9, 312e12},
	// A100 SXM4 80GB. Same datasheet: 2,039 GB/s HBM2e, 312 TFLOPS.
	// nvidia-smi: 81920MiB (shown for the A800-SXM4-80GB, the same board with less NVLink, in dexmal/dexbotic#41).
	"a100-80g": {"a100-80g", 81920 * mib, 2039e9, 312e12},
	// H100 SXM5 80GB. NVIDIA H100 Tensor Core GPU datasheet: 3.35 TB/s HBM3,
	// BF16 1,979 TFLOPS with sparsity, so 989 TFLOPS dense.
	// nvidia-smi: 81559MiB ("NVIDIA H100 80GB HBM3", 700 W, in many public issue reports).
	"h100-80g": {"h100-80g", 81559 * mib, 3.35e12, 989e12},
	// H200 SXM 141GB. NVIDIA H200 datasheet: 4.8 TB/s HBM3e, BF16 1,979 TFLOPS
	// with sparsity (989 dense; same compute as H100 SXM).
	// nvidia-smi: 143771MiB ("NVIDIA H200", 700 W, in many public issue reports).
	"h200-141g": {"h200-141g", 143771 * mib, 4.8e12, 989e12},
	// B200 (HGX B200, 1,000 W). NVIDIA HGX/DGX B200 datasheet: 8 TB/s HBM3e
	// per GPU, FP16/BF16 4.5 PFLOPS with sparsity, so 2.25 PFLOPS dense.
	// Sold as 192 GB (raw HBM); the HGX spec sheet says 180 GB and
	// nvidia-smi says 183359MiB (NVIDIA/TensorRT-LLM#10278). pytorch/ao PR
	// #4002 measures a 7,680-bit bus, i.e. 7.67 TB/s; we keep the datasheet 8 TB/s.
	"b200-192g": {"b200-192g", 183359 * mib, 8e12, 2.25e15},
	// L40S 48GB (PCIe). NVIDIA L40S datasheet: 864 GB/s GDDR6, BF16 tensor
	// 362.05 TFLOPS dense (733 with sparsity).
	// nvidia-smi: 46068 MiB (akash-network/provider-configs PR #99).
	"l40s-48g": {"l40s-48g", 46068 * mib, 864e9, 362.05e12},
	// GeForce RTX 3090 24GB. NVIDIA Ampere GA102 whitepaper, table 9:
	// 936 GB/s GDDR6X; peak BF16 tensor with FP32 accumulate 71 TFLOPS dense
	// (142 sparse). nvidia-smi: 24576MiB (noonghunna/club-3090 issue reports).
	"rtx3090-24g": {"rtx3090-24g", 24576 * mib, 936e9, 71e12},
	// Tesla T4 16GB. NVIDIA T4 datasheet: 320 GB/s GDDR6, mixed-precision
	// FP16/FP32 65 TFLOPS. Turing has no BF16: BF16FLOPS holds the FP16
	// figure, which is what a T4 deployment (dtype=half) runs at.
	// nvidia-smi: 15360MiB (as Google Colab's T4 prints it; not re-checked against a
	// second source, unlike the others).
	"t4-16g": {"t4-16g", 15360 * mib, 320e9, 65e12},
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
