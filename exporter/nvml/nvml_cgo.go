//go:build cgo

// The real binding: go-nvml over libnvidia-ml.so.1. See doc.go for the
// overview.

package nvml

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// library is the part of gonvml.Interface this package calls. Both the real
// binding (gonvml.New) and go-nvml's mock.Interface satisfy it. The per-GPU
// calls go through gonvml.Device, which mock.Device also implements.
type library interface {
	Init() gonvml.Return
	Shutdown() gonvml.Return
	DeviceGetCount() (int, gonvml.Return)
	DeviceGetHandleByIndex(int) (gonvml.Device, gonvml.Return)
}

// Versioned symbol names. go-nvml calls a C function whether or not the
// loaded library exports it (it links with unresolved symbols ignored), and
// calling a missing one crashes the process, so every call that older
// drivers lack is guarded by a lookup of its symbol.
const (
	symMemoryV2 = "nvmlDeviceGetMemoryInfo_v2"
)

// go-nvml picks the newest of these it finds at Init; any one is enough.
var (
	symsCompute  = []string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"}
	symsGraphics = []string{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses"}
)

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long:
// NVML's marker for a process whose memory use it cannot report.
const valueNotAvailable = ^uint64(0)

// Open loads NVML and initialises it. Without a usable driver the error
// wraps ErrNoDriver. Close the reader to shut NVML down.
func Open(opts ...Option) (Reader, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var libOpts []gonvml.LibraryOption
	name := defaultLibrary
	if c.libraryPath != "" {
		libOpts = append(libOpts, gonvml.WithLibraryPath(c.libraryPath))
		name = c.libraryPath
	}
	lib := gonvml.New(libOpts...)
	has := func(symbol string) bool { return lib.Extensions().LookupSymbol(symbol) == nil }
	return open(lib, has, name)
}

// open initialises lib and wraps it in a reader. has reports whether the
// loaded library exports a symbol; nil means every symbol is present (mocks).
// name is the library as the user knows it, for messages.
func open(lib library, has func(string) bool, name string) (r Reader, err error) {
	defer func() {
		// Some go-nvml versions panicked when the library could not be
		// loaded; treat that as a missing driver, not a crash.
		if p := recover(); p != nil {
			r = nil
			err = fmt.Errorf("%w: loading %s panicked (%v); the GPU source is off", ErrNoDriver, name, p)
		}
	}()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		cause := newError("nvmlInit", -1, ret)
		switch ret {
		case gonvml.ERROR_LIBRARY_NOT_FOUND:
			return nil, fmt.Errorf("%w: %s not found; the GPU source is off (%w)", ErrNoDriver, name, cause)
		case gonvml.ERROR_DRIVER_NOT_LOADED:
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

func newError(call string, device int, ret gonvml.Return) *Error {
	return &Error{Call: call, Device: device, Code: int(ret), Msg: ret.Error()}
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
	if ret := r.lib.Shutdown(); ret != gonvml.SUCCESS {
		return newError("nvmlShutdown", -1, ret)
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
	n, ret := r.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, newError("nvmlDeviceGetCount", -1, ret)
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
	h, ret := r.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return Device{}, newError("nvmlDeviceGetHandleByIndex", i, ret)
	}
	d := Device{Index: i}
	if d.UUID, ret = h.GetUUID(); ret != gonvml.SUCCESS {
		return Device{}, newError("nvmlDeviceGetUUID", i, ret)
	}
	if d.Name, ret = h.GetName(); ret != gonvml.SUCCESS {
		return Device{}, newError("nvmlDeviceGetName", i, ret)
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

func (r *reader) memory(h gonvml.Device, d *Device) error {
	if r.memV2 {
		m, ret := h.GetMemoryInfo_v2()
		switch ret {
		case gonvml.SUCCESS:
			d.TotalBytes, d.ReservedBytes, d.UsedBytes, d.FreeBytes = m.Total, m.Reserved, m.Used, m.Free
			return nil
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND, gonvml.ERROR_ARGUMENT_VERSION_MISMATCH:
			// Fall back to the v1 call below.
		default:
			return newError(symMemoryV2, d.Index, ret)
		}
	}
	m, ret := h.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		return newError("nvmlDeviceGetMemoryInfo", d.Index, ret)
	}
	d.TotalBytes, d.ReservedBytes, d.UsedBytes, d.FreeBytes = m.Total, 0, m.Used, m.Free
	return nil
}

// processes merges the compute and graphics process lists. A process with
// both kinds of context appears in both with the same figure; it is kept
// once. Returns nil when neither list is supported.
func (r *reader) processes(h gonvml.Device, i int) ([]Process, error) {
	type query struct {
		ok   bool
		call string
		fn   func() ([]gonvml.ProcessInfo, gonvml.Return)
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
		infos, ret := q.fn()
		if ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_FUNCTION_NOT_FOUND {
			continue
		}
		if ret != gonvml.SUCCESS {
			return nil, newError(q.call, i, ret)
		}
		supported = true
		for _, pi := range infos {
			p := Process{PID: pi.Pid, UsedBytes: pi.UsedGpuMemory, UsedKnown: pi.UsedGpuMemory != valueNotAvailable}
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
