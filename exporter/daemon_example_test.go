package exporter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpufrag/gpufrag/exporter"
)

// A slow reader (NVML here; an engine's /metrics or the Kubernetes API
// alike) becomes a source with one adapter, polled in the background and
// served from memory. The daemon passes poll to exporter.Serve as a Runner;
// here one Poll stands in for the first tick.
func ExampleNewPolledSource() {
	readNVML := func(context.Context) ([]exporter.GPUDevice, error) {
		return []exporter.GPUDevice{{Index: 0, UUID: "GPU-0f1e", Name: "NVIDIA H100 80GB HBM3",
			TotalBytes: 80 << 30, UsedBytes: 60 << 30, FreeBytes: 20 << 30}}, nil
	}
	poll, err := exporter.NewPolledSource(exporter.NewGPUSource("nvml", readNVML), 15*time.Second, 2*time.Second, nil)
	if err != nil {
		panic(err)
	}
	if err := poll.Poll(context.Background()); err != nil {
		panic(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := exporter.NewWithOptions(reg, exporter.Options{SourceTimeout: 2 * time.Second}, poll); err != nil {
		panic(err)
	}
	n, err := testutil.GatherAndCount(reg, "gpufrag_gpu_memory_free_bytes", "gpufrag_gpu_info")
	fmt.Println(n, err)
	// Output: 2 <nil>
}
