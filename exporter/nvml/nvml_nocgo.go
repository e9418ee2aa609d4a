//go:build !cgo

// The stub for builds without cgo. See doc.go for the overview.

package nvml

import "fmt"

// Open always fails in a build without cgo: the NVML binding needs it.
func Open(opts ...Option) (Reader, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo (CGO_ENABLED=0), which the NVML binding needs; the GPU source is off", ErrNoDriver)
}
