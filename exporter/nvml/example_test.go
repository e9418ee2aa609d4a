package nvml_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/gpufrag/gpufrag/exporter/nvml"
)

// A daemon opens NVML once; without a driver it turns the GPU source off and
// carries on with its other sources.
func ExampleOpen() {
	r, err := nvml.Open()
	if errors.Is(err, nvml.ErrNoDriver) {
		log.Print(err) // e.g. "NVML not available: libnvidia-ml.so.1 not found; the GPU source is off (…)"
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	devs, err := r.Devices(context.Background())
	if err != nil {
		log.Print(err) // some GPUs failed; devs holds the others
	}
	for _, d := range devs {
		fmt.Printf("GPU %d %s: %d of %d bytes used, %d processes\n", d.Index, d.UUID, d.UsedBytes, d.TotalBytes, len(d.Processes))
	}
}
