// Package nvml reads GPU memory from the NVIDIA driver through NVML, the
// library behind nvidia-smi.
//
// What is read, per GPU, in device index order:
//
//   - index, UUID and product name;
//   - total, used and free framebuffer memory in bytes
//     (nvmlDeviceGetMemoryInfo_v2 when the driver exports it, which also
//     gives the memory the driver reserves; otherwise nvmlDeviceGetMemoryInfo,
//     whose "used" includes that reservation and whose Reserved is 0);
//   - the processes holding memory on the GPU with their usage in bytes: the
//     union of the compute and graphics process lists, one entry per PID,
//     sorted by PID. NVML reports some processes without a figure (for example
//     inside containers without the host PID namespace); those have
//     UsedKnown false and UsedBytes 0.
//
// Every figure is in bytes. MIG instances are not enumerated: a MIG-enabled
// GPU reports its whole memory, and its process list may be unsupported
// (then empty).
//
// Without a driver the source is off, not broken: Open returns an error that
// wraps ErrNoDriver ("NVML not available: libnvidia-ml.so.1 not found; the
// GPU source is off"), so a daemon can report the GPU source down once and
// keep serving its other sources. The library is loaded with dlopen when Open
// runs, so a binary that imports this package starts on hosts without a GPU.
//
// The binding: libnvidia-ml.so.1 is opened with dlopen and its functions are
// called through github.com/ebitengine/purego, without cgo, so the binding is
// in every linux/amd64 and linux/arm64 build, CGO_ENABLED=0 included, and
// compiles none of NVML's header (with cgo on, purego builds a dlopen shim of
// a few lines). (It replaced NVIDIA/go-nvml, whose cgo preamble printed 29
// deprecation warnings on a first build and cost about 10 CPU-seconds of a
// cold build, and which a CGO_ENABLED=0 build silently lost.) It calls ten
// functions of NVML's stable C ABI, with the struct layouts of nvml.h; see
// dl.go. With purego, a CGO_ENABLED=0 binary is dynamically linked (against
// libc, which NVML needs anyway). For a fully static binary, build with
// -tags nonvml: Open then fails with an error wrapping ErrNoDriver and
// ErrNotBuilt that says so, as it does on other platforms. Built tells a
// caller in advance.
//
// Testing: the reader runs against in-memory mocks of the library (every
// build), and the binding against a small fake libnvidia-ml.so.1 compiled
// from testdata/fakenvml.c when a C compiler is present, so the real dlopen
// path is exercised without a GPU, with and without cgo.
package nvml

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoDriver means NVML cannot be used on this host or in this binary: the
// library is missing, the kernel driver is not loaded, or the binary was
// built without the reader (then the error also wraps ErrNotBuilt). It is an expected state, not a failure of the reader.
var ErrNoDriver = errors.New("NVML not available")

// ErrNotBuilt means this binary has no NVML reader: it was built with -tags
// nonvml, or for a platform other than linux/amd64 and linux/arm64. Errors
// wrapping it also wrap ErrNoDriver.
var ErrNotBuilt = errors.New("not in this build")

// Built returns nil when this binary has the NVML reader, else an error
// wrapping ErrNotBuilt that says why not. A driver is not needed for nil.
func Built() error { return buildError() }

// ErrClosed is returned by Devices after Close.
var ErrClosed = errors.New("nvml: reader closed")

// Device is one GPU's memory at the time of the read.
type Device struct {
	Index int    // NVML device index, 0-based
	UUID  string // e.g. "GPU-5f1a…"
	Name  string // product name, e.g. "NVIDIA H100 80GB HBM3"

	TotalBytes    uint64 // framebuffer size
	ReservedBytes uint64 // held by the driver and firmware; 0 with the v1 call
	UsedBytes     uint64 // allocated by contexts (v1 call: includes reserved)
	FreeBytes     uint64 // unallocated

	// Processes holding memory on the device, sorted by PID: empty (not
	// nil) when there are none, nil when NVML does not support process
	// queries on this device or driver.
	Processes []Process
}

// Process is one process's memory on one GPU.
type Process struct {
	PID       uint32
	UsedBytes uint64 // 0 when UsedKnown is false
	UsedKnown bool   // false when NVML reports the figure as unavailable
}

// Reader reads GPU memory. Implementations are safe for concurrent use.
type Reader interface {
	// Devices reads every GPU. When some GPUs fail, it returns the others
	// in index order together with an error joining one *Error per failed
	// GPU; callers that need all-or-nothing must treat any error as a
	// failure. ctx is checked before each GPU (NVML calls themselves cannot
	// be interrupted).
	Devices(ctx context.Context) ([]Device, error)
	// Close shuts NVML down. It is idempotent; Devices fails with ErrClosed
	// afterwards.
	Close() error
}

// Option configures Open.
type Option func(*config)

type config struct {
	libraryPath string
}

// WithLibraryPath loads NVML from path instead of the dynamic loader's search
// for "libnvidia-ml.so.1".
func WithLibraryPath(path string) Option {
	return func(c *config) { c.libraryPath = path }
}

// defaultLibrary is the soname the dynamic loader is asked for.
const defaultLibrary = "libnvidia-ml.so.1"

// Error is a call to NVML that did not return NVML_SUCCESS.
type Error struct {
	Call   string // NVML C function, e.g. "nvmlDeviceGetMemoryInfo_v2"
	Device int    // GPU index, or -1 for calls not about one GPU
	Code   int    // the nvmlReturn_t value
	Msg    string // NVML's own description of Code (nvmlErrorString)
}

func (e *Error) Error() string {
	if e.Device < 0 {
		return fmt.Sprintf("nvml: %s: %s (nvmlReturn_t %d)", e.Call, e.Msg, e.Code)
	}
	return fmt.Sprintf("nvml: GPU %d: %s: %s (nvmlReturn_t %d)", e.Device, e.Call, e.Msg, e.Code)
}
