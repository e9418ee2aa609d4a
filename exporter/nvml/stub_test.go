//go:build !linux || !(amd64 || arm64) || nonvml

package nvml

import (
	"errors"
	"strings"
	"testing"
)

// Run with go test -tags nonvml ./exporter/nvml/.
func TestOpenWithoutReader(t *testing.T) {
	r, err := Open(WithLibraryPath("/does/not/matter"))
	if r != nil || !errors.Is(err, ErrNoDriver) || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Open = %v, %v; want an error wrapping ErrNoDriver and ErrNotBuilt", r, err)
	}
	want := "NVML not available: not in this build: this gpufrag was built "
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; the GPU source is off") {
		t.Errorf("Open: %q, want it to start with %q and say the GPU source is off", err, want)
	}
	if nonvmlTag && !strings.Contains(err.Error(), "-tags nonvml") {
		t.Errorf("Open: %q does not name the nonvml tag", err)
	}
	if b := Built(); !errors.Is(b, ErrNotBuilt) || !strings.Contains(err.Error(), b.Error()) {
		t.Errorf("Built() = %v, want the reason Open gives", b)
	}
}
