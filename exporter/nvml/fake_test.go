//go:build linux && (amd64 || arm64) && !nonvml

package nvml

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// These tests run the real binding (go-nvml's dlopen of libnvidia-ml.so.1)
// against testdata/fakenvml.c, compiled here with the system C compiler.
//
// Each read runs in a fresh child process (this test binary re-executed with
// helperEnv set): go-nvml binds C symbols process-wide on first use and keeps
// package-level state per loaded library, so loading two different fake
// libraries, or the same one twice, in one process is not something the real
// daemon does and not something to test in-process.

const (
	helperEnv    = "GPUFRAG_NVML_HELPER"      // "1" in the child
	helperLibEnv = "GPUFRAG_NVML_HELPER_PATH" // WithLibraryPath, or "" for the default soname
	helperCapEnv = "GPUFRAG_NVML_HELPER_CAP"  // the process queries' first buffer size
	resultPrefix = "NVML-HELPER-RESULT "
)

// helperResult is what the child prints.
type helperResult struct {
	Devices  []Device
	Err      string
	NoDriver bool
	CloseErr string
}

// TestHelperProcess is the child's body; it does nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper for the fake-library tests; runs only as their child process")
	}
	var opts []Option
	if p := os.Getenv(helperLibEnv); p != "" {
		opts = append(opts, WithLibraryPath(p))
	}
	if c := os.Getenv(helperCapEnv); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil {
			t.Fatal(err)
		}
		firstProcessCapacity = uint32(n)
	}
	var res helperResult
	r, err := Open(opts...)
	if err == nil {
		res.Devices, err = r.Devices(context.Background())
		if cerr := r.Close(); cerr != nil {
			res.CloseErr = cerr.Error()
		}
	}
	if err != nil {
		res.Err = err.Error()
		res.NoDriver = errors.Is(err, ErrNoDriver)
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		t.Fatal(jerr)
	}
	fmt.Println(resultPrefix + string(b))
}

// buildFake compiles testdata/fakenvml.c into dir/libnvidia-ml.so.1.
func buildFake(t *testing.T, dir string, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) on PATH, so the real NVML binding is not tested against testdata/fakenvml.c; CI installs gcc")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "libnvidia-ml.so.1")
	args := append(append([]string{"-shared", "-fPIC", "-Wall", "-Werror"}, defines...), "-o", out, filepath.Join("testdata", "fakenvml.c"))
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// runHelper runs TestHelperProcess in a child with env added.
func runHelper(t *testing.T, env ...string) helperResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, resultPrefix); ok {
			var res helperResult
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				t.Fatalf("helper result %q: %v", rest, err)
			}
			return res
		}
	}
	t.Fatalf("helper printed no result:\n%s\nstderr:\n%s", out, stderr.Bytes())
	return helperResult{}
}

// The figures of testdata/fakenvml.c.
const (
	fakeMiB = uint64(1) << 20
	fakeGiB = uint64(1) << 30
)

// fakeDevices is what the fake reports through the v2 memory call and the v3
// process queries.
func fakeDevices() []Device {
	return []Device{
		{
			Index: 0, UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "Fake H100 80GB",
			TotalBytes: 80 * fakeGiB, ReservedBytes: 512 * fakeMiB, UsedBytes: 40 * fakeGiB,
			FreeBytes: 80*fakeGiB - 512*fakeMiB - 40*fakeGiB,
			Processes: []Process{
				{PID: 4242, UsedBytes: 30 * fakeGiB, UsedKnown: true},
				{PID: 5151, UsedBytes: 10 * fakeGiB, UsedKnown: true}, // in both lists
				{PID: 6060}, // NVML_VALUE_NOT_AVAILABLE
			},
		},
		{
			Index: 1, UUID: "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", Name: "Fake A100 40GB",
			TotalBytes: 40 * fakeGiB, ReservedBytes: 256 * fakeMiB, FreeBytes: 40*fakeGiB - 256*fakeMiB,
			Processes: []Process{},
		},
	}
}

func TestFakeLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := buildFake(t, filepath.Join(dir, "current"))
	oldLib := buildFake(t, filepath.Join(dir, "old"), "-DFAKENVML_OLD_DRIVER")

	// An old driver has only the v1 memory call: used includes reserved,
	// and Reserved is unknown (0).
	oldDevs := fakeDevices()
	for i := range oldDevs {
		d := &oldDevs[i]
		d.UsedBytes += d.ReservedBytes
		d.ReservedBytes = 0
	}

	for _, tc := range []struct {
		name string
		env  []string
		want []Device
		err  string // substring of the joined per-GPU error
	}{
		{"WithLibraryPath", []string{helperLibEnv + "=" + lib}, fakeDevices(), ""},
		{"LD_LIBRARY_PATH", []string{helperLibEnv + "=", "LD_LIBRARY_PATH=" + filepath.Dir(lib)}, fakeDevices(), ""},
		{"old driver", []string{helperLibEnv + "=" + oldLib}, oldDevs, ""},
		// A first buffer of one entry: the queries answer
		// NVML_ERROR_INSUFFICIENT_SIZE and are asked again.
		{"small buffer", []string{helperLibEnv + "=" + lib, helperCapEnv + "=1"}, fakeDevices(), ""},
		{"small buffer, old driver", []string{helperLibEnv + "=" + oldLib, helperCapEnv + "=1"}, oldDevs, ""},
		{"lost GPU", []string{helperLibEnv + "=" + lib, "FAKENVML_LOST_GPU=1"}, fakeDevices()[:1],
			// The message comes from the library's nvmlErrorString.
			"nvml: GPU 1: nvmlDeviceGetMemoryInfo_v2: fake: GPU is lost (nvmlReturn_t 15)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runHelper(t, tc.env...)
			if res.NoDriver {
				t.Fatalf("fake library not loaded: %s", res.Err)
			}
			if tc.err == "" && res.Err != "" || !strings.Contains(res.Err, tc.err) {
				t.Errorf("error = %q, want one containing %q", res.Err, tc.err)
			}
			if res.CloseErr != "" {
				t.Errorf("Close: %s", res.CloseErr)
			}
			if !reflect.DeepEqual(res.Devices, tc.want) {
				t.Errorf("Devices:\n got %+v\nwant %+v", res.Devices, tc.want)
			}
		})
	}
}

func TestBuilt(t *testing.T) {
	if err := Built(); err != nil {
		t.Errorf("Built() = %v in a build with the reader", err)
	}
}

// A library that is not NVML is refused before anything is called.
func TestNotNVML(t *testing.T) {
	libc := "libc.so.6"
	r, err := Open(WithLibraryPath(libc))
	if r != nil || !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "libc.so.6 loaded but it does not export nvmlInit_v2, so it is not a usable NVML") {
		t.Errorf("Open(%s) = %v, %v; want ErrNoDriver saying it is not NVML", libc, r, err)
	}
}

// A path with no library behind it is "no driver", in process: nothing is
// loaded, so nothing is bound.
func TestNoLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "libnvidia-ml.so.1")
	r, err := Open(WithLibraryPath(path))
	if r != nil || !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open(%s) = %v, %v; want ErrNoDriver", path, r, err)
	}
	want := "NVML not available: " + path + " not found; the GPU source is off"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}
