package exporter

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func names(files []CapturedFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func newTestCapturer(t *testing.T, dir string, files int, bytes int64, clock Clock) (*Capturer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	c, err := NewCapturer(CaptureConfig{Dir: dir, MaxFiles: files, MaxBytes: bytes, Clock: clock, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, reg
}

// TestCaptureRetentionFiles: past MaxFiles the oldest go first, and the
// index survives a restart in the same order.
func TestCaptureRetentionFiles(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(t0)
	c, reg := newTestCapturer(t, dir, 3, 1<<20, clock)
	var all []string
	for i := range 5 {
		name, err := c.Capture("vllm-0", "llama", []byte(fmt.Sprint("snapshot ", i)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, name)
		clock.Advance(time.Second)
	}
	if want := fmt.Sprintf("vllm-0-llama-%s-1.pickle", t0.Format("20060102T150405Z")); all[0] != want {
		t.Errorf("first name %q, want %q", all[0], want)
	}
	if got := names(c.Files()); !slices.Equal(got, all[2:]) {
		t.Errorf("index %v, want the newest three %v", got, all[2:])
	}
	if got := dirNames(t, dir); !slices.Equal(got, all[2:]) {
		t.Errorf("directory %v, want %v", got, all[2:])
	}
	if got := testutil.ToFloat64(c.captured.WithLabelValues("vllm-0", "llama")); got != 5 {
		t.Errorf("captured_total = %v, want 5", got)
	}
	if n, err := testutil.GatherAndCount(reg, "gpufrag_oom_snapshot_capture_errors_total"); err != nil || n != 1 {
		t.Errorf("capture errors family: %d series (%v)", n, err)
	}

	// Restart: a leftover temporary file is removed, the index is rebuilt
	// oldest first, and the sequence continues.
	if err := os.WriteFile(filepath.Join(dir, captureTempPrefix+"123.tmp"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a capture"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, _ := newTestCapturer(t, dir, 3, 1<<20, clock)
	if got := names(c2.Files()); !slices.Equal(got, all[2:]) {
		t.Errorf("after restart: index %v, want %v", got, all[2:])
	}
	name, err := c2.Capture("vllm-0", "llama", []byte("six"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(name, "-6.pickle") {
		t.Errorf("sequence after restart: %s, want -6", name)
	}
	// The temporary file is gone, all[2] fell to the limit, other files stay.
	if got, want := dirNames(t, dir), []string{"notes.txt", all[3], all[4], name}; !slices.Equal(got, want) {
		t.Errorf("directory after restart %v, want %v", got, want)
	}
}

// TestCaptureRetentionBytes: past MaxBytes the oldest go first, and the
// newest stays even when it alone passes the limit.
func TestCaptureRetentionBytes(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(t0)
	c, _ := newTestCapturer(t, dir, 100, 100, clock)
	a, _ := c.Capture("i", "m", bytes.Repeat([]byte("a"), 40))
	b, _ := c.Capture("i", "m", bytes.Repeat([]byte("b"), 40))
	if got := names(c.Files()); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("index %v", got)
	}
	cc, _ := c.Capture("i", "m", bytes.Repeat([]byte("c"), 40)) // 120 > 100: a goes
	if got := names(c.Files()); !slices.Equal(got, []string{b, cc}) {
		t.Errorf("index %v, want [%s %s]", got, b, cc)
	}
	huge, err := c.Capture("i", "m", bytes.Repeat([]byte("h"), 500))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Files()); !slices.Equal(got, []string{huge}) {
		t.Errorf("index %v, want only the newest %s", got, huge)
	}
	if data, err := os.ReadFile(filepath.Join(dir, huge)); err != nil || len(data) != 500 {
		t.Errorf("newest capture: %d bytes, %v", len(data), err)
	}
}

// TestCaptureAtomic: a reader polling the directory never sees a capture
// name whose content is incomplete, and a failed capture leaves no file
// under a final name.
func TestCaptureAtomic(t *testing.T) {
	dir := t.TempDir()
	c, _ := newTestCapturer(t, dir, 1000, 1<<40, NewManualClock(t0))
	const size = 2 << 20
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, size) }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var bad []string
	var mu sync.Mutex
	checks := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), captureTempPrefix) {
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					continue // deleted meanwhile
				}
				mu.Lock()
				checks++
				if len(data) != size || data[0] != data[size-1] {
					bad = append(bad, fmt.Sprintf("%s: %d bytes", e.Name(), len(data)))
				}
				mu.Unlock()
			}
		}
	})
	for i := range 8 {
		if _, err := c.Capture("i", "m", payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("partial captures seen under final names: %v", bad)
	}
	t.Logf("%d complete reads", checks)

	// The directory disappears: the capture fails, is counted, and leaves
	// nothing behind.
	gone := filepath.Join(t.TempDir(), "gone")
	c2, _ := newTestCapturer(t, gone, 10, 1<<20, NewManualClock(t0))
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Capture("i", "m", []byte("x")); err == nil {
		t.Fatal("capture into a removed directory succeeded")
	}
	if got := testutil.ToFloat64(c2.errs); got != 1 {
		t.Errorf("capture_errors_total = %v, want 1", got)
	}
	if len(c2.Files()) != 0 {
		t.Errorf("failed capture indexed: %v", c2.Files())
	}
}

func TestCaptureNames(t *testing.T) {
	for in, want := range map[string]string{
		"vllm-0": "vllm-0", "": "_", "../etc": "_._etc", ".hidden": "_hidden", "a/b c": "a_b_c", "é": "__",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
	for name, ok := range map[string]bool{
		"a-b-20261130T030000Z-1.pickle":       true,
		"vllm-0-m-20261130T030000Z-12.pickle": true,
		"a-b-20261130T030000Z-x.pickle":       false,
		"a-b-2026-1.pickle":                   false,
		"a-20261130T030000Z-1.pickle":         false,
		"a b-c-20261130T030000Z-1.pickle":     false,
		"a-b-20261130T030000Z-1.pkl":          false,
	} {
		if _, _, got := parseCaptureName(name); got != ok {
			t.Errorf("parseCaptureName(%q) ok = %v, want %v", name, got, ok)
		}
	}
}

// FuzzCaptureName: every name Capture can make parses back, with its time
// and sequence, and parsing never panics.
func FuzzCaptureName(f *testing.F) {
	f.Add("vllm-0", "llama", 1, "x-y-20261130T030000Z-3.pickle")
	f.Add("", "../..", 99, "")
	f.Add(".a", "é/\x00", 0, "a-b-c-d.pickle")
	f.Fuzz(func(t *testing.T, inst, model string, seq int, raw string) {
		parseCaptureName(raw)
		if seq < 0 {
			seq = -seq
		}
		if seq < 0 {
			return
		}
		name := fmt.Sprintf("%s-%s-%s-%d.pickle", safeName(inst), safeName(model), t0.Format(captureTimeLayout), seq)
		ts, s, ok := parseCaptureName(name)
		if !ok || s != seq || ts != t0.Format(captureTimeLayout) {
			t.Fatalf("%q: parsed (%q, %d, %v)", name, ts, s, ok)
		}
		if strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") || checkName(name) != nil {
			t.Fatalf("unsafe name %q", name)
		}
		if _, _, ok := parseCaptureName(raw); ok && checkName(raw) != nil {
			t.Fatalf("parsed a name that cannot be opened: %q", raw)
		}
	})
}

// TestCaptureLongLabels: labels of any length (a sidecar allows 64 KiB)
// make a capture name under NAME_MAX that parses back; a name that grew by
// being captured again does not parse past NAME_MAX (issue 13 case 13).
func TestCaptureLongLabels(t *testing.T) {
	c, _ := newTestCapturer(t, t.TempDir(), 3, 1<<20, NewManualClock(t0))
	name, err := c.Capture(strings.Repeat("i", 64<<10), strings.Repeat("m", 300), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(name) > maxNameBytes || !IsCaptureName(name) {
		t.Errorf("capture name of %d bytes (parses: %v)", len(name), IsCaptureName(name))
	}
	grown := "a-b-20261130T030000Z-1"
	for range 12 {
		grown += "-_-20261130T030000Z-1"
	}
	if IsCaptureName(grown + ".pickle") {
		t.Errorf("a name of %d bytes parses as a capture", len(grown)+7)
	}
}

// TestCaptureSameContent: data a capture already holds is not written
// again, neither by the same Capturer nor after a restart (the captures
// found at start are compared by size, then SHA-256); other data of the
// same size is.
func TestCaptureSameContent(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(t0)
	c, _ := newTestCapturer(t, dir, 3, 1<<20, clock)
	first, err := c.Capture("vllm-0", "llama", []byte("oom snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	again, err := c.Capture("vllm-0", "llama", []byte("oom snapshot"))
	if err != nil || again != first {
		t.Errorf("same data again: %q, %v; want the first capture %q", again, err, first)
	}
	if got := testutil.ToFloat64(c.captured.WithLabelValues("vllm-0", "llama")); got != 1 {
		t.Errorf("captured_total = %v, want 1", got)
	}

	// Restart, as a crash-looping pod's exporter does: the snapshot
	// directory's files are new to it, the capture is not.
	c2, _ := newTestCapturer(t, dir, 3, 1<<20, clock)
	for range 3 {
		clock.Advance(time.Second)
		if name, err := c2.Capture("vllm-0", "llama", []byte("oom snapshot")); err != nil || name != first {
			t.Errorf("after restart: %q, %v; want the first capture %q", name, err, first)
		}
	}
	other, err := c2.Capture("vllm-0", "llama", []byte("OOM SNAPSHOT"))
	if err != nil || other == first {
		t.Errorf("other data of the same size: %q, %v; want a new capture", other, err)
	}
	if got, want := dirNames(t, dir), []string{first, other}; !slices.Equal(got, want) {
		t.Errorf("directory %v, want %v", got, want)
	}
}

// TestCaptureSeriesBounded: past MaxSeries label sets, the one captured
// least recently loses its gpufrag_oom_snapshots_captured_total series, so
// pods that come and go under new names do not grow the series for ever;
// a label set captured again is kept.
func TestCaptureSeriesBounded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := NewCapturer(CaptureConfig{Dir: t.TempDir(), MaxSeries: 3, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for i, instance := range []string{"vllm-a", "vllm-b", "vllm-c", "vllm-a", "vllm-d", "vllm-e"} {
		if _, err := c.Capture(instance, "llama", []byte(fmt.Sprint("snapshot ", i))); err != nil {
			t.Fatal(err)
		}
	}
	n, err := testutil.GatherAndCount(reg, "gpufrag_oom_snapshots_captured_total")
	if err != nil || n != 3 {
		t.Fatalf("%d series (%v), want 3", n, err)
	}
	// b and c went (captured least recently); a, captured twice, stays.
	want := map[string]float64{"vllm-a": 2, "vllm-d": 1, "vllm-e": 1}
	for instance, v := range want {
		if got := testutil.ToFloat64(c.captured.WithLabelValues(instance, "llama")); got != v {
			t.Errorf("%s: captured_total = %v, want %v", instance, got, v)
		}
	}
	if _, err := NewCapturer(CaptureConfig{Dir: t.TempDir(), MaxSeries: -1}); err == nil {
		t.Error("MaxSeries -1 accepted")
	}
}
