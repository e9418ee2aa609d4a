package nvml

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// mockLibrary is a library whose calls are the functions set; a call whose
// function is nil panics, as a library that crashes would.
type mockLibrary struct {
	InitFunc                   func() ret
	ShutdownFunc               func() ret
	DeviceGetCountFunc         func() (int, ret)
	DeviceGetHandleByIndexFunc func(int) (device, ret)
}

func (m *mockLibrary) Init() ret                  { return m.InitFunc() }
func (m *mockLibrary) Shutdown() ret              { return m.ShutdownFunc() }
func (m *mockLibrary) DeviceGetCount() (int, ret) { return m.DeviceGetCountFunc() }
func (m *mockLibrary) DeviceGetHandleByIndex(i int) (device, ret) {
	return m.DeviceGetHandleByIndexFunc(i)
}

// ErrorString gives NVML's names for the codes, as the real library's
// nvmlErrorString does not (its messages are prose).
func (m *mockLibrary) ErrorString(ret) string { return "" }

// mockDevice is a device whose calls are the functions set; nil ones panic.
type mockDevice struct {
	GetUUIDFunc                     func() (string, ret)
	GetNameFunc                     func() (string, ret)
	GetMemoryInfo_v2Func            func() (memInfo, ret)
	GetMemoryInfoFunc               func() (memInfo, ret)
	GetComputeRunningProcessesFunc  func() ([]processInfo, ret)
	GetGraphicsRunningProcessesFunc func() ([]processInfo, ret)
}

func (d *mockDevice) GetUUID() (string, ret)           { return d.GetUUIDFunc() }
func (d *mockDevice) GetName() (string, ret)           { return d.GetNameFunc() }
func (d *mockDevice) GetMemoryInfo_v2() (memInfo, ret) { return d.GetMemoryInfo_v2Func() }
func (d *mockDevice) GetMemoryInfo() (memInfo, ret)    { return d.GetMemoryInfoFunc() }
func (d *mockDevice) GetComputeRunningProcesses() ([]processInfo, ret) {
	return d.GetComputeRunningProcessesFunc()
}
func (d *mockDevice) GetGraphicsRunningProcesses() ([]processInfo, ret) {
	return d.GetGraphicsRunningProcessesFunc()
}

const gib = 1 << 30

// gpu describes one mocked device; the zero Return values mean SUCCESS.
type gpu struct {
	uuid, name        string
	total, res, used  uint64 // v2 figures; used excludes res
	compute, graphics []processInfo
	uuidRet, memRet   ret
	memV2Ret          ret
	computeRet        ret
	graphicsRet       ret
	onUUID            func() // runs inside GetUUID
}

func (g gpu) device() *mockDevice {
	return &mockDevice{
		GetUUIDFunc: func() (string, ret) {
			if g.onUUID != nil {
				g.onUUID()
			}
			return g.uuid, g.uuidRet
		},
		GetNameFunc: func() (string, ret) { return g.name, success },
		GetMemoryInfo_v2Func: func() (memInfo, ret) {
			if g.memV2Ret != success {
				return memInfo{}, g.memV2Ret
			}
			return memInfo{Total: g.total, Reserved: g.res, Used: g.used, Free: g.total - g.res - g.used}, success
		},
		GetMemoryInfoFunc: func() (memInfo, ret) {
			if g.memRet != success {
				return memInfo{}, g.memRet
			}
			return memInfo{Total: g.total, Used: g.res + g.used, Free: g.total - g.res - g.used}, success
		},
		GetComputeRunningProcessesFunc: func() ([]processInfo, ret) {
			return g.compute, g.computeRet
		},
		GetGraphicsRunningProcessesFunc: func() ([]processInfo, ret) {
			return g.graphics, g.graphicsRet
		},
	}
}

// mockLib returns a mock NVML with gpus and counters of Init and Shutdown.
func mockLib(gpus ...gpu) (*mockLibrary, *int, *int) {
	var inits, shutdowns int
	return &mockLibrary{
		InitFunc:     func() ret { inits++; return success },
		ShutdownFunc: func() ret { shutdowns++; return success },
		DeviceGetCountFunc: func() (int, ret) {
			return len(gpus), success
		},
		DeviceGetHandleByIndexFunc: func(i int) (device, ret) {
			if i < 0 || i >= len(gpus) {
				return nil, errInvalidArgument
			}
			return gpus[i].device(), success
		},
	}, &inits, &shutdowns
}

func mustOpen(t *testing.T, lib library, has func(string) bool) Reader {
	t.Helper()
	r, err := open(lib, has, defaultLibrary)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return r
}

func pi(pid uint32, used uint64) processInfo {
	return processInfo{PID: pid, UsedGPUMemory: used}
}

func h100() gpu {
	return gpu{
		uuid: "GPU-0", name: "H100", total: 80 * gib, res: gib / 2, used: 40 * gib,
		// 9 is in both lists (compute and graphics context); 3 has no figure.
		compute:  []processInfo{pi(9, 10*gib), pi(7, 30*gib)},
		graphics: []processInfo{pi(9, 10*gib), pi(3, valueNotAvailable)},
	}
}

func TestDevicesSuccess(t *testing.T) {
	lib, inits, shutdowns := mockLib(h100(), gpu{uuid: "GPU-1", name: "A100", total: 40 * gib, res: gib / 4})
	r := mustOpen(t, lib, nil)
	got, err := r.Devices(context.Background())
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	want := []Device{
		{Index: 0, UUID: "GPU-0", Name: "H100", TotalBytes: 80 * gib, ReservedBytes: gib / 2, UsedBytes: 40 * gib,
			FreeBytes: 80*gib - gib/2 - 40*gib,
			Processes: []Process{{PID: 3}, {PID: 7, UsedBytes: 30 * gib, UsedKnown: true}, {PID: 9, UsedBytes: 10 * gib, UsedKnown: true}}},
		{Index: 1, UUID: "GPU-1", Name: "A100", TotalBytes: 40 * gib, ReservedBytes: gib / 4, FreeBytes: 40*gib - gib/4,
			Processes: []Process{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Devices:\n got %+v\nwant %+v", got, want)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if *inits != 1 || *shutdowns != 1 {
		t.Errorf("Init called %d times, Shutdown %d times; want 1 and 1", *inits, *shutdowns)
	}
	if _, err := r.Devices(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Devices after Close: err = %v, want ErrClosed", err)
	}
}

// Without nvmlDeviceGetMemoryInfo_v2 in the library, or when it is not
// supported, the v1 figures are used: used includes reserved.
func TestMemoryV1Fallback(t *testing.T) {
	noV2 := h100()
	noV2.memV2Ret = errNotSupported
	for name, tc := range map[string]struct {
		g   gpu
		has func(string) bool
	}{
		"symbol missing": {h100(), func(s string) bool { return s != symMemoryV2 }},
		"not supported":  {noV2, nil},
	} {
		t.Run(name, func(t *testing.T) {
			lib, _, _ := mockLib(tc.g)
			got, err := mustOpen(t, lib, tc.has).Devices(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			d := got[0]
			if d.TotalBytes != 80*gib || d.ReservedBytes != 0 || d.UsedBytes != 40*gib+gib/2 || d.FreeBytes != 80*gib-gib/2-40*gib {
				t.Errorf("v1 figures: got total %d reserved %d used %d free %d", d.TotalBytes, d.ReservedBytes, d.UsedBytes, d.FreeBytes)
			}
		})
	}
}

func TestPerDeviceErrors(t *testing.T) {
	lost := h100()
	lost.uuid = "GPU-1"
	lost.memV2Ret = errGPUIsLost
	badProcs := h100()
	badProcs.uuid = "GPU-2"
	badProcs.computeRet = errNoPermission
	lib, _, _ := mockLib(h100(), lost, badProcs, gpu{uuid: "GPU-3", total: gib})
	got, err := mustOpen(t, lib, nil).Devices(context.Background())
	var uuids []string
	for _, d := range got {
		uuids = append(uuids, fmt.Sprintf("%d:%s", d.Index, d.UUID))
	}
	if strings.Join(uuids, ",") != "0:GPU-0,3:GPU-3" {
		t.Errorf("devices returned: %v, want 0:GPU-0,3:GPU-3", uuids)
	}
	if err == nil {
		t.Fatal("no error for the failed GPUs")
	}
	var e *Error
	if !errors.As(err, &e) || e.Device != 1 || e.Call != "nvmlDeviceGetMemoryInfo_v2" || e.Code != int(errGPUIsLost) {
		t.Errorf("first error = %#v, want GPU 1 nvmlDeviceGetMemoryInfo_v2 code 15", e)
	}
	for _, want := range []string{
		"nvml: GPU 1: nvmlDeviceGetMemoryInfo_v2: ERROR_GPU_IS_LOST (nvmlReturn_t 15)",
		"nvml: GPU 2: nvmlDeviceGetComputeRunningProcesses: ERROR_NO_PERMISSION (nvmlReturn_t 4)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestLibraryLevelErrors(t *testing.T) {
	lib, _, _ := mockLib(h100())
	lib.DeviceGetCountFunc = func() (int, ret) { return 0, errUnknown }
	got, err := mustOpen(t, lib, nil).Devices(context.Background())
	if got != nil || err == nil || err.Error() != "nvml: nvmlDeviceGetCount: ERROR_UNKNOWN (nvmlReturn_t 999)" {
		t.Errorf("count failure: got %v, %v", got, err)
	}

	lib, _, _ = mockLib(gpu{uuid: "x"}, gpu{uuid: "y"})
	lib.DeviceGetHandleByIndexFunc = func(i int) (device, ret) {
		if i == 1 {
			return nil, errGPUIsLost
		}
		return gpu{uuid: "x"}.device(), success
	}
	got, err = mustOpen(t, lib, nil).Devices(context.Background())
	if len(got) != 1 || got[0].UUID != "x" || err == nil || !strings.Contains(err.Error(), "GPU 1: nvmlDeviceGetHandleByIndex") {
		t.Errorf("handle failure: got %v, %v", got, err)
	}

	lib, _, _ = mockLib()
	lib.ShutdownFunc = func() ret { return errUninitialized }
	var e *Error
	if err := mustOpen(t, lib, nil).Close(); !errors.As(err, &e) || e.Call != "nvmlShutdown" || e.Code != 1 {
		t.Errorf("Close with failing Shutdown: %v", err)
	}
}

func TestProcessesUnsupported(t *testing.T) {
	g := h100()
	g.computeRet, g.graphicsRet = errNotSupported, errNotSupported
	lib, _, _ := mockLib(g)
	got, err := mustOpen(t, lib, nil).Devices(context.Background())
	if err != nil || len(got) != 1 || got[0].Processes != nil || got[0].TotalBytes != 80*gib {
		t.Errorf("unsupported process queries: got %+v, %v; want the device with nil Processes", got, err)
	}

	// A library that exports neither query is not asked.
	lib, _, _ = mockLib(h100())
	got, err = mustOpen(t, lib, func(s string) bool { return !strings.Contains(s, "RunningProcesses") }).Devices(context.Background())
	if err != nil || got[0].Processes != nil {
		t.Errorf("no process symbols: got %+v, %v", got, err)
	}

	// Only the compute list: graphics-only processes are not seen.
	lib, _, _ = mockLib(h100())
	got, err = mustOpen(t, lib, func(s string) bool { return !strings.Contains(s, "Graphics") }).Devices(context.Background())
	if err != nil || len(got[0].Processes) != 2 || got[0].Processes[0].PID != 7 {
		t.Errorf("compute only: got %+v, %v", got, err)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		ret      ret
		noDriver bool
		msg      string
	}{
		{errLibraryNotFound, true, "NVML not available: libnvidia-ml.so.1 not found; the GPU source is off (nvml: nvmlInit: ERROR_LIBRARY_NOT_FOUND (nvmlReturn_t 12))"},
		{errDriverNotLoaded, true, "NVML not available: libnvidia-ml.so.1 loaded but the NVIDIA kernel driver is not running; the GPU source is off (nvml: nvmlInit: ERROR_DRIVER_NOT_LOADED (nvmlReturn_t 9))"},
		{errNoPermission, false, "nvml: nvmlInit: ERROR_NO_PERMISSION (nvmlReturn_t 4)"},
	} {
		lib := &mockLibrary{InitFunc: func() ret { return tc.ret }}
		r, err := open(lib, nil, defaultLibrary)
		if r != nil || err == nil {
			t.Fatalf("Init %v: open succeeded", tc.ret)
		}
		if errors.Is(err, ErrNoDriver) != tc.noDriver || err.Error() != tc.msg {
			t.Errorf("Init %v: err = %q (ErrNoDriver %v), want %q (ErrNoDriver %v)", tc.ret, err, errors.Is(err, ErrNoDriver), tc.msg, tc.noDriver)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != int(tc.ret) {
			t.Errorf("Init %v: no *Error with the code in %v", tc.ret, err)
		}
	}

	lib := &mockLibrary{InitFunc: func() ret { panic("dlopen exploded") }}
	if _, err := open(lib, nil, "/x/libnvidia-ml.so.1"); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "/x/libnvidia-ml.so.1 panicked (dlopen exploded)") {
		t.Errorf("panicking Init: %v", err)
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	first := h100()
	first.onUUID = cancel // cancelled while GPU 0 is read
	lib, _, _ := mockLib(first, h100())
	got, err := mustOpen(t, lib, nil).Devices(ctx)
	if got != nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "GPU 1 of 2") {
		t.Errorf("cancelled: got %v, %v", got, err)
	}
	if _, err := mustOpen(t, lib, nil).Devices(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: %v", err)
	}
}

func TestPanickingDevice(t *testing.T) {
	lib, _, _ := mockLib(h100())
	lib.DeviceGetHandleByIndexFunc = func(int) (device, ret) {
		return &mockDevice{}, success // every method panics
	}
	if _, err := mustOpen(t, lib, nil).Devices(context.Background()); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("panicking device: %v", err)
	}
}

// Run with -race: the reader serialises concurrent scrapes and Close.
func TestConcurrentDevices(t *testing.T) {
	lib, _, shutdowns := mockLib(h100(), h100())
	r := mustOpen(t, lib, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := r.Devices(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("Devices: %v", err)
				}
			}
		})
	}
	wg.Go(func() { _ = r.Close() })
	wg.Wait()
	if *shutdowns != 1 {
		t.Errorf("Shutdown called %d times", *shutdowns)
	}
}
