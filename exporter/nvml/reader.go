// The reader over NVML's C API, in every build: the calls it makes go
// through the library and device interfaces below, which the real binding
// (dl.go, over libnvidia-ml.so.1) and the tests' mocks implement. See doc.go
// for the overview.

package nvml

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ret is an nvmlReturn_t.
type ret int32

// The nvmlReturn_t values this package tells apart (nvml.h).
const (
	success                    ret = 0
	errUninitialized           ret = 1
	errInvalidArgument         ret = 2
	errNotSupported            ret = 3
	errNoPermission            ret = 4
	errInsufficientSize        ret = 7
	errDriverNotLoaded         ret = 9
	errLibraryNotFound         ret = 12
	errFunctionNotFound        ret = 13
	errGPUIsLost               ret = 15
	errArgumentVersionMismatch ret = 25
	errUnknown                 ret = 999
)

// retNames are NVML's names for the codes, the message when the library
// cannot describe a code itself (mocks, or no nvmlErrorString).
var retNames = map[ret]string{
	success: "SUCCESS", errUninitialized: "ERROR_UNINITIALIZED", errInvalidArgument: "ERROR_INVALID_ARGUMENT",
	errNotSupported: "ERROR_NOT_SUPPORTED", errNoPermission: "ERROR_NO_PERMISSION", 5: "ERROR_ALREADY_INITIALIZED",
	6: "ERROR_NOT_FOUND", errInsufficientSize: "ERROR_INSUFFICIENT_SIZE", 8: "ERROR_INSUFFICIENT_POWER",
	errDriverNotLoaded: "ERROR_DRIVER_NOT_LOADED", 10: "ERROR_TIMEOUT", 11: "ERROR_IRQ_ISSUE",
	errLibraryNotFound: "ERROR_LIBRARY_NOT_FOUND", errFunctionNotFound: "ERROR_FUNCTION_NOT_FOUND",
	14: "ERROR_CORRUPTED_INFOROM", errGPUIsLost: "ERROR_GPU_IS_LOST", 16: "ERROR_RESET_REQUIRED",
	17: "ERROR_OPERATING_SYSTEM", 18: "ERROR_LIB_RM_VERSION_MISMATCH", 19: "ERROR_IN_USE", 20: "ERROR_MEMORY",
	21: "ERROR_NO_DATA", 22: "ERROR_VGPU_ECC_NOT_SUPPORTED", 23: "ERROR_INSUFFICIENT_RESOURCES",
	24: "ERROR_FREQ_NOT_SUPPORTED", errArgumentVersionMismatch: "ERROR_ARGUMENT_VERSION_MISMATCH",
	26: "ERROR_DEPRECATED", 27: "ERROR_NOT_READY", 28: "ERROR_GPU_NOT_FOUND", 29: "ERROR_INVALID_STATE",
	errUnknown: "ERROR_UNKNOWN",
}

func (r ret) String() string {
	if s, ok := retNames[r]; ok {
		return s
	}
	return fmt.Sprintf("nvmlReturn_t %d", int32(r))
}

// memInfo is what the memory queries return: nvmlMemory_v2_t's figures, or
// nvmlMemory_t's with Reserved 0 and Used including the reservation.
type memInfo struct {
	Total, Reserved, Free, Used uint64
}

// processInfo is one entry of a process query.
type processInfo struct {
	PID           uint32
	UsedGPUMemory uint64 // valueNotAvailable when NVML cannot tell
}

// library is the part of NVML's API this package calls.
type library interface {
	Init() ret
	Shutdown() ret
	DeviceGetCount() (int, ret)
	DeviceGetHandleByIndex(int) (device, ret)
	// ErrorString is NVML's description of r (nvmlErrorString).
	ErrorString(r ret) string
}

// device is the per-GPU part of the API, over one nvmlDevice_t.
type device interface {
	GetUUID() (string, ret)
	GetName() (string, ret)
	GetMemoryInfo_v2() (memInfo, ret)
	GetMemoryInfo() (memInfo, ret)
	// The process queries return the complete list (they grow the
	// buffer on NVML_ERROR_INSUFFICIENT_SIZE).
	GetComputeRunningProcesses() ([]processInfo, ret)
	GetGraphicsRunningProcesses() ([]processInfo, ret)
}

// Versioned symbol names. Every call that older drivers lack is guarded by a
// lookup of its symbol, so that a library without it is not asked.
const (
	symMemoryV2 = "nvmlDeviceGetMemoryInfo_v2"
)

// The binding calls the newest of these the library exports; any one is enough.
var (
	symsCompute  = []string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"}
	symsGraphics = []string{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses"}
)

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long:
// NVML's marker for a process whose memory use it cannot report.
const valueNotAvailable = ^uint64(0)

// open initialises lib and wraps it in a reader. has reports whether the
// loaded library exports a symbol; nil means every symbol is present (mocks).
// name is the library as the user knows it, for messages.
func open(lib library, has func(string) bool, name string) (r Reader, err error) {
	defer func() {
		// A library that crashes Go code on Init (a mock, or a broken
		// binding) is a missing driver, not a crash of the daemon.
		if p := recover(); p != nil {
			r = nil
			err = fmt.Errorf("%w: loading %s panicked (%v); the GPU source is off", ErrNoDriver, name, p)
		}
	}()
	if rc := lib.Init(); rc != success {
		cause := newError(lib, "nvmlInit", -1, rc)
		switch rc {
		case errLibraryNotFound:
			return nil, fmt.Errorf("%w: %s not found; the GPU source is off (%w)", ErrNoDriver, name, cause)
		case errDriverNotLoaded:
			return nil, fmt.Errorf("%w: %s loaded but the NVIDIA kernel driver is not running; the GPU source is off (%w)", ErrNoDriver, name, cause)
		}
		return nil, cause
	}
	if has == nil {
		has = func(string) bool { return true }
	}
	return &reader{
		lib:      lib,
		memV2:    has(symMemoryV2),
		compute:  slices.ContainsFunc(symsCompute, has),
		graphics: slices.ContainsFunc(symsGraphics, has),
	}, nil
}

// newError describes a failed call with lib's message for rc.
func newError(lib library, call string, device int, rc ret) *Error {
	msg := lib.ErrorString(rc)
	if msg == "" {
		msg = rc.String()
	}
	return &Error{Call: call, Device: device, Code: int(rc), Msg: msg}
}

// reader implements Reader over a library.
type reader struct {
	mu     sync.Mutex // serialises NVML use and guards closed
	lib    library
	closed bool

	// Which optional calls the loaded library exports; fixed at open.
	memV2, compute, graphics bool
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if rc := r.lib.Shutdown(); rc != success {
		return newError(r.lib, "nvmlShutdown", -1, rc)
	}
	return nil
}

func (r *reader) Devices(ctx context.Context) (devs []Device, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	defer func() {
		if p := recover(); p != nil {
			devs = nil
			err = fmt.Errorf("nvml: reading devices panicked: %v", p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nvml: reading devices: %w", err)
	}
	n, rc := r.lib.DeviceGetCount()
	if rc != success {
		return nil, newError(r.lib, "nvmlDeviceGetCount", -1, rc)
	}
	var errs []error
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("nvml: reading GPU %d of %d: %w", i, n, err)
		}
		d, err := r.device(i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		devs = append(devs, d)
	}
	return devs, errors.Join(errs...)
}

// device reads GPU i. Any failed call fails the GPU, except process queries
// the device or driver does not support.
func (r *reader) device(i int) (Device, error) {
	h, rc := r.lib.DeviceGetHandleByIndex(i)
	if rc != success {
		return Device{}, newError(r.lib, "nvmlDeviceGetHandleByIndex", i, rc)
	}
	d := Device{Index: i}
	if d.UUID, rc = h.GetUUID(); rc != success {
		return Device{}, newError(r.lib, "nvmlDeviceGetUUID", i, rc)
	}
	if d.Name, rc = h.GetName(); rc != success {
		return Device{}, newError(r.lib, "nvmlDeviceGetName", i, rc)
	}
	if err := r.memory(h, &d); err != nil {
		return Device{}, err
	}
	procs, err := r.processes(h, i)
	if err != nil {
		return Device{}, err
	}
	d.Processes = procs
	return d, nil
}

func (r *reader) memory(h device, d *Device) error {
	if r.memV2 {
		m, rc := h.GetMemoryInfo_v2()
		switch rc {
		case success:
			d.TotalBytes, d.ReservedBytes, d.UsedBytes, d.FreeBytes = m.Total, m.Reserved, m.Used, m.Free
			return nil
		case errNotSupported, errFunctionNotFound, errArgumentVersionMismatch:
			// Fall back to the v1 call below.
		default:
			return newError(r.lib, symMemoryV2, d.Index, rc)
		}
	}
	m, rc := h.GetMemoryInfo()
	if rc != success {
		return newError(r.lib, "nvmlDeviceGetMemoryInfo", d.Index, rc)
	}
	d.TotalBytes, d.ReservedBytes, d.UsedBytes, d.FreeBytes = m.Total, 0, m.Used, m.Free
	return nil
}

// processes merges the compute and graphics process lists. A process with
// both kinds of context appears in both with the same figure; it is kept
// once. Returns nil when neither list is supported.
func (r *reader) processes(h device, i int) ([]Process, error) {
	type query struct {
		ok   bool
		call string
		fn   func() ([]processInfo, ret)
	}
	byPID := map[uint32]Process{}
	supported := false
	for _, q := range []query{
		{r.compute, "nvmlDeviceGetComputeRunningProcesses", h.GetComputeRunningProcesses},
		{r.graphics, "nvmlDeviceGetGraphicsRunningProcesses", h.GetGraphicsRunningProcesses},
	} {
		if !q.ok {
			continue
		}
		infos, rc := q.fn()
		if rc == errNotSupported || rc == errFunctionNotFound {
			continue
		}
		if rc != success {
			return nil, newError(r.lib, q.call, i, rc)
		}
		supported = true
		for _, pi := range infos {
			p := Process{PID: pi.PID, UsedBytes: pi.UsedGPUMemory, UsedKnown: pi.UsedGPUMemory != valueNotAvailable}
			if !p.UsedKnown {
				p.UsedBytes = 0
			}
			if old, dup := byPID[p.PID]; dup && (!p.UsedKnown || old.UsedKnown && old.UsedBytes >= p.UsedBytes) {
				continue
			}
			byPID[p.PID] = p
		}
	}
	if !supported {
		return nil, nil
	}
	procs := make([]Process, 0, len(byPID))
	for _, p := range byPID {
		procs = append(procs, p)
	}
	slices.SortFunc(procs, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return procs, nil
}
