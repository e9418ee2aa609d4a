//go:build !linux || !(amd64 || arm64) || nonvml

// The stub for builds without the binding. See doc.go for the overview.

package nvml

import (
	"fmt"
	"runtime"
)

// buildError says why this build cannot read NVML.
func buildError() error {
	if nonvmlTag {
		return fmt.Errorf("%w: this gpufrag was built with -tags nonvml, which leaves the NVML reader out; rebuild without that tag to read GPUs", ErrNotBuilt)
	}
	return fmt.Errorf("%w: this gpufrag was built for %s/%s; the NVML reader is built for linux/amd64 and linux/arm64 only", ErrNotBuilt, runtime.GOOS, runtime.GOARCH)
}

// Open always fails in a build without the binding, with an error that
// wraps ErrNoDriver and ErrNotBuilt.
func Open(opts ...Option) (Reader, error) {
	return nil, fmt.Errorf("%w: %w; the GPU source is off", ErrNoDriver, buildError())
}
