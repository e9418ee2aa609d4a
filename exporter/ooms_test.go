package exporter

import (
	"path/filepath"
	"testing"
	"time"
)

// oomsOf is the OOM counter of the one sample of the last rescan.
func oomsOf(t *testing.T, d *daemon) int64 {
	t.Helper()
	d.rescan(t)
	samples, err := d.snaps.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 {
		t.Fatalf("%d samples, want 1", len(samples))
	}
	return samples[0].Memory.OOMs
}

// TestSnapshotOOMsNeverDecrease replaces one file with the versions a probe
// writes while the allocator's history ring scrolls: gpufrag_ooms_total is
// a counter (Memory.OOMs must never decrease), so an oom entry that leaves
// the ring must not take the counter down, which Prometheus would read as
// a reset and count the entries still there again: increase() > 0, and
// GPUOOMsIncreasing firing, with no new OOM. New entries are told from old
// ones by their time_us.
func TestSnapshotOOMsNeverDecrease(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false)
	path := filepath.Join(d.dir, "vllm-0__llama__rank0.pickle")
	at := t0
	version := func(data []byte) {
		at = at.Add(time.Second)
		writeFile(t, path, data, at)
	}
	steps := []struct {
		what string
		data []byte
		want int64
	}{
		{"two OOMs in the ring", genSnapshotOOMs(0, 1, 10, 11), 2},
		{"the older one scrolled out", genSnapshotOOMs(0, 1, 11), 2},
		{"a version being written (truncated: skipped, no sample)", genSnapshotOOMs(0, 1, 11)[:40], -1},
		{"a new OOM", genSnapshotOOMs(0, 2, 11, 12), 3},
		{"every OOM scrolled out", genSnapshotOOMs(0, 1), 3},
		{"a restarted process's first OOM (later time)", genSnapshotOOMs(0, 3, 500), 4},
	}
	for _, s := range steps {
		version(s.data)
		if s.want < 0 {
			d.rescan(t)
			continue
		}
		if got := oomsOf(t, d); got != s.want {
			t.Errorf("%s: ooms_total = %d, want %d", s.what, got, s.want)
		}
	}
}

// TestSnapshotOOMsUntimed: oom entries without time_us (PyTorch 2.0's
// traces) cannot be told apart across versions; the counter is the most
// the file has held, so it never decreases either.
func TestSnapshotOOMsUntimed(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false)
	path := filepath.Join(d.dir, "vllm-0__llama__rank0.pickle")
	for i, s := range []struct {
		data []byte
		want int64
	}{
		{genSnapshotOOMs(0, 1, 0, 0), 2},
		{genSnapshotOOMs(0, 1, 0), 2},
		{genSnapshotOOMs(0, 2, 0, 0, 0), 3},
	} {
		writeFile(t, path, s.data, t0.Add(time.Duration(i+1)*time.Second))
		if got := oomsOf(t, d); got != s.want {
			t.Errorf("version %d: ooms_total = %d, want %d", i, got, s.want)
		}
	}
}

// TestSnapshotOOMsDeviceAway: a device missing from one version (its
// series gone) keeps its counter for when it comes back, so the counter
// does not come back lower (a reset, and increase() counting old entries
// again).
func TestSnapshotOOMsDeviceAway(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false)
	path := filepath.Join(d.dir, "vllm-0__llama__rank0.pickle")
	for i, s := range []struct {
		data []byte
		want int64
	}{
		{genSnapshotOOMs(1, 1, 10, 11), 2},
		{genSnapshotOOMs(0, 1), 0}, // device 1 absent: device 0's sample, no OOM
		{genSnapshotOOMs(1, 1, 12), 3},
	} {
		writeFile(t, path, s.data, t0.Add(time.Duration(i+1)*time.Second))
		if got := oomsOf(t, d); got != s.want {
			t.Errorf("version %d: ooms_total = %d, want %d", i, got, s.want)
		}
	}
}
