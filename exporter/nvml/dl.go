//go:build linux && (amd64 || arm64) && !nonvml

// The real binding: libnvidia-ml.so.1 loaded with dlopen and called through
// github.com/ebitengine/purego, without cgo. See doc.go for the overview and
// for why not go-nvml.

package nvml

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// buildError is nil: this build has the binding.
func buildError() error { return nil }

// Open loads NVML and initialises it. Without a usable driver the error
// wraps ErrNoDriver. Close the reader to shut NVML down.
func Open(opts ...Option) (Reader, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	name := defaultLibrary
	if c.libraryPath != "" {
		name = c.libraryPath
	}
	lib, err := load(name)
	var nf notFound
	switch {
	case errors.As(err, &nf):
		return nil, fmt.Errorf("%w: %s not found; the GPU source is off (%w)", ErrNoDriver, name, nf.err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w; the GPU source is off", ErrNoDriver, err)
	}
	return open(lib, lib.has, name)
}

// The C signatures called, from nvml.h (every one returns nvmlReturn_t):
//
//	nvmlInit_v2(void)
//	nvmlShutdown(void)
//	nvmlErrorString(nvmlReturn_t) -> const char *
//	nvmlDeviceGetCount_v2(unsigned int *count)
//	nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
//	nvmlDeviceGetUUID(nvmlDevice_t, char *uuid, unsigned int length)
//	nvmlDeviceGetName(nvmlDevice_t, char *name, unsigned int length)
//	nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t *)
//	nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t *)
//	nvmlDeviceGet{Compute,Graphics}RunningProcesses{,_v2,_v3}(nvmlDevice_t,
//	    unsigned int *infoCount, nvmlProcessInfo{_v1,}_t *infos)
//
// The structs, as laid out by the C compiler on amd64 and arm64:

// cMemory is nvmlMemory_t.
type cMemory struct {
	Total, Free, Used uint64
}

// cMemoryV2 is nvmlMemory_v2_t: version first, then reserved between total
// and free.
type cMemoryV2 struct {
	Version                     uint32
	Total, Reserved, Free, Used uint64
}

// memoryV2Version is nvmlMemory_v2, NVML_STRUCT_VERSION(Memory, 2): the
// struct's size with the version in the top byte.
const memoryV2Version = uint32(unsafe.Sizeof(cMemoryV2{})) | 2<<24

// cProcessV1 is nvmlProcessInfo_v1_t.
type cProcessV1 struct {
	PID  uint32
	Used uint64
}

// cProcess is nvmlProcessInfo_t, the layout of the _v2 and _v3 queries.
type cProcess struct {
	PID                            uint32
	Used                           uint64
	GPUInstanceID, ComputeInstance uint32
}

// bufferSize is NVML_DEVICE_UUID_V2_BUFFER_SIZE and
// NVML_DEVICE_NAME_V2_BUFFER_SIZE, the largest UUID and name NVML writes.
const bufferSize = 96

// dlLibrary is a loaded libnvidia-ml.so.1.
type dlLibrary struct {
	handle uintptr
	syms   map[string]uintptr // every symbol looked up, 0 when absent

	init, shutdown, errorString, count, handleByIndex uintptr
	uuid, name, memory, memoryV2                      uintptr
	// The newest process queries the library exports, and their layout.
	compute, graphics     uintptr
	computeV1, graphicsV1 bool
}

// loadMu serialises dlopen and the lookups; the library's calls are
// serialised by the reader.
var loadMu sync.Mutex

// load dlopens path (a soname the dynamic loader searches for, or a file)
// and looks up the symbols this package calls. A library without nvmlInit_v2
// is not NVML.
func load(path string) (*dlLibrary, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, notFound{err}
	}
	l := &dlLibrary{handle: h, syms: map[string]uintptr{}}
	sym := func(name string) uintptr {
		p, err := purego.Dlsym(h, name)
		if err != nil {
			p = 0
		}
		l.syms[name] = p
		return p
	}
	first := func(names []string) (uintptr, bool) {
		for i, n := range names {
			if p := sym(n); p != 0 {
				return p, i == len(names)-1
			}
		}
		return 0, false
	}
	l.init, l.shutdown, l.errorString = sym("nvmlInit_v2"), sym("nvmlShutdown"), sym("nvmlErrorString")
	l.count, l.handleByIndex = sym("nvmlDeviceGetCount_v2"), sym("nvmlDeviceGetHandleByIndex_v2")
	l.uuid, l.name = sym("nvmlDeviceGetUUID"), sym("nvmlDeviceGetName")
	l.memory, l.memoryV2 = sym("nvmlDeviceGetMemoryInfo"), sym(symMemoryV2)
	l.compute, l.computeV1 = first(symsCompute)
	l.graphics, l.graphicsV1 = first(symsGraphics)
	for _, n := range []string{"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
		"nvmlDeviceGetUUID", "nvmlDeviceGetName", "nvmlDeviceGetMemoryInfo"} {
		if l.syms[n] == 0 {
			// Not closed: a library that is not NVML may not survive it.
			return nil, fmt.Errorf("%s loaded but it does not export %s, so it is not a usable NVML", path, n)
		}
	}
	return l, nil
}

// notFound is a library dlopen could not load (dlerror's message).
type notFound struct{ err error }

func (e notFound) Error() string { return e.err.Error() }

// has reports whether the library exports symbol.
func (l *dlLibrary) has(symbol string) bool { return l.syms[symbol] != 0 }

// call calls the C function fn, which returns an nvmlReturn_t (a C int: the
// low 32 bits of the return register). Like purego.SyscallN's, its pointer
// arguments are kept alive and on the heap for the call.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) ret {
	r1, _, _ := purego.SyscallN(fn, args...)
	return ret(int32(r1))
}

func (l *dlLibrary) Init() ret { return call(l.init) }

// Shutdown shuts NVML down. The library stays loaded: dlclose of a library
// that may have started threads is not safe, and a daemon closes it once, on
// its way out.
func (l *dlLibrary) Shutdown() ret { return call(l.shutdown) }

func (l *dlLibrary) ErrorString(r ret) string {
	if l.errorString == 0 {
		return ""
	}
	p, _, _ := purego.SyscallN(l.errorString, uintptr(uint32(r)))
	return cString(p, 1024)
}

func (l *dlLibrary) DeviceGetCount() (int, ret) {
	var n uint32
	rc := call(l.count, uintptr(unsafe.Pointer(&n)))
	return int(n), rc
}

func (l *dlLibrary) DeviceGetHandleByIndex(i int) (device, ret) {
	if i < 0 || uint64(i) > uint64(^uint32(0)) {
		return nil, errInvalidArgument
	}
	var h uintptr // nvmlDevice_t, an opaque pointer
	rc := call(l.handleByIndex, uintptr(i), uintptr(unsafe.Pointer(&h)))
	if rc != success {
		return nil, rc
	}
	return dlDevice{l, h}, success
}

// cString copies the NUL-terminated C string at p, of at most max bytes.
func cString(p uintptr, max int) string {
	if p == 0 {
		return ""
	}
	// p points into the library's memory, which the Go collector does not
	// manage; reading it through a *byte is what C.GoString does.
	b := unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), max)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// dlDevice is one nvmlDevice_t of a loaded library.
type dlDevice struct {
	l *dlLibrary
	h uintptr
}

// str calls fn(device, buf, len) and returns what it wrote.
func (d dlDevice) str(fn uintptr) (string, ret) {
	var buf [bufferSize]byte
	rc := call(fn, d.h, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if rc != success {
		return "", rc
	}
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i]), success
		}
	}
	return string(buf[:]), success
}

func (d dlDevice) GetUUID() (string, ret) { return d.str(d.l.uuid) }
func (d dlDevice) GetName() (string, ret) { return d.str(d.l.name) }

func (d dlDevice) GetMemoryInfo_v2() (memInfo, ret) {
	if d.l.memoryV2 == 0 {
		return memInfo{}, errFunctionNotFound
	}
	m := cMemoryV2{Version: memoryV2Version}
	rc := call(d.l.memoryV2, d.h, uintptr(unsafe.Pointer(&m)))
	return memInfo{Total: m.Total, Reserved: m.Reserved, Free: m.Free, Used: m.Used}, rc
}

func (d dlDevice) GetMemoryInfo() (memInfo, ret) {
	var m cMemory
	rc := call(d.l.memory, d.h, uintptr(unsafe.Pointer(&m)))
	return memInfo{Total: m.Total, Free: m.Free, Used: m.Used}, rc
}

func (d dlDevice) GetComputeRunningProcesses() ([]processInfo, ret) {
	return d.processes(d.l.compute, d.l.computeV1)
}

func (d dlDevice) GetGraphicsRunningProcesses() ([]processInfo, ret) {
	return d.processes(d.l.graphics, d.l.graphicsV1)
}

// maxProcesses bounds the buffer a process query may ask for: far above the
// processes one GPU holds (each takes a context of hundreds of MiB), and
// small enough that a library answering nonsense cannot make the daemon
// allocate without bound.
const maxProcesses = 1 << 16

// firstProcessCapacity is the process queries' first buffer, in entries:
// enough for the processes a GPU usually holds. The fake-library test sets it
// to 1 to make the query grow its buffer.
var firstProcessCapacity uint32 = 8

// processes runs one process query: *count is the capacity of infos on entry
// and the number written on return; too small a capacity answers
// NVML_ERROR_INSUFFICIENT_SIZE with *count the number needed (which may
// grow again before the next try, as processes start).
func (d dlDevice) processes(fn uintptr, v1 bool) ([]processInfo, ret) {
	if fn == 0 {
		return nil, errFunctionNotFound
	}
	for n := firstProcessCapacity; ; {
		var rc ret
		var out []processInfo
		got := n
		if v1 {
			buf := make([]cProcessV1, n)
			rc = call(fn, d.h, uintptr(unsafe.Pointer(&got)), uintptr(unsafe.Pointer(&buf[0])))
			if rc == success {
				for _, p := range buf[:min(got, n)] {
					out = append(out, processInfo{PID: p.PID, UsedGPUMemory: p.Used})
				}
			}
		} else {
			buf := make([]cProcess, n)
			rc = call(fn, d.h, uintptr(unsafe.Pointer(&got)), uintptr(unsafe.Pointer(&buf[0])))
			if rc == success {
				for _, p := range buf[:min(got, n)] {
					out = append(out, processInfo{PID: p.PID, UsedGPUMemory: p.Used})
				}
			}
		}
		switch {
		case rc == success:
			return out, success
		case rc != errInsufficientSize:
			return nil, rc
		case n >= maxProcesses:
			return nil, rc
		}
		n = min(max(got, 2*n), maxProcesses)
	}
}
