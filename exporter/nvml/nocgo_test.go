//go:build !cgo

package nvml

import (
	"errors"
	"strings"
	"testing"
)

// Run with CGO_ENABLED=0 go test ./exporter/nvml/.
func TestOpenWithoutCgo(t *testing.T) {
	r, err := Open(WithLibraryPath("/does/not/matter"))
	if r != nil || !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "built without cgo") {
		t.Fatalf("Open = %v, %v; want ErrNoDriver explaining the missing cgo", r, err)
	}
}
