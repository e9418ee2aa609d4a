package exporter

import (
	"path/filepath"
	"testing"
	"time"
)

// oomsOf is the OOM counter of the one sample of the last rescan.
func oomsOf(t *testing.T, d *daemon) int64 {
	t.Helper()
	return memoryOf(t, d).OOMs
}

// memoryOf is the Memory of the one sample of the last rescan.
func memoryOf(t *testing.T, d *daemon) *Memory {
	t.Helper()
	d.rescan(t)
	samples, err := d.snaps.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 {
		t.Fatalf("%d samples, want 1", len(samples))
	}
	return samples[0].Memory
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
		{"its clock stepped back: an OOM stamped before the last one", genSnapshotOOMs(0, 3, 500, 300), 5},
		{"the same two again", genSnapshotOOMs(0, 3, 300, 500), 5},
		{"an older version of the file restored", genSnapshotOOMs(0, 1, 10, 11), 5},
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

// TestSnapshotLastOOM: gpufrag_last_oom_timestamp_seconds is when the OOM
// counted last happened, 0 before any; it moves only when an OOM is
// counted, and a restarted exporter (a new SnapshotDir) that counts a
// file's entries again gives the same time, which is how GPUOOMsIncreasing
// tells a restart from a new OOM (deploy/prometheus/alerts_test.yml).
func TestSnapshotLastOOM(t *testing.T) {
	sec := func(s int) int { return int(t0.Add(time.Duration(s) * time.Second).UnixMicro()) }
	d := newDaemon(t, SnapshotDirConfig{}, false)
	path := filepath.Join(d.dir, "vllm-0__llama__rank0.pickle")
	steps := []struct {
		what string
		data []byte
		want time.Time // zero: 0 exported
	}{
		{"no OOM yet", genSnapshotOOMs(0, 1), time.Time{}},
		{"two OOMs", genSnapshotOOMs(0, 1, sec(-20), sec(-10)), t0.Add(-10 * time.Second)},
		{"the older one scrolled out", genSnapshotOOMs(0, 1, sec(-10)), t0.Add(-10 * time.Second)},
		{"a new OOM stamped earlier (clock stepped back)", genSnapshotOOMs(0, 1, sec(-10), sec(-30)), t0.Add(-30 * time.Second)},
	}
	for i, s := range steps {
		writeFile(t, path, s.data, t0.Add(time.Duration(i+1)*time.Second))
		m := memoryOf(t, d)
		if !m.HasLastOOM || !m.LastOOM.Equal(s.want) {
			t.Errorf("%s: last OOM %v (exported: %v), want %v", s.what, m.LastOOM, m.HasLastOOM, s.want)
		}
		if i != 2 {
			continue
		}
		// A restarted exporter reads this version: fewer OOMs counted (1,
		// not 2), the same time. (After a clock step back, as in the next
		// step, a restart gives the newest entry's time, not the one
		// counted last: GPUOOMsIncreasing can then fire once.)
		d2 := newDaemon(t, SnapshotDirConfig{}, false)
		writeFile(t, filepath.Join(d2.dir, "vllm-0__llama__rank0.pickle"), s.data, t0)
		if after := memoryOf(t, d2); m.OOMs != 2 || after.OOMs != 1 || !after.LastOOM.Equal(m.LastOOM) {
			t.Errorf("restart: ooms %d → %d, last OOM %v → %v; want 2 → 1 and the same time", m.OOMs, after.OOMs, m.LastOOM, after.LastOOM)
		}
	}
}

// TestSnapshotLastOOMUntimed: untimed oom entries (PyTorch 2.0) that raise
// the counter take the exporter's clock as their time.
func TestSnapshotLastOOMUntimed(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false)
	path := filepath.Join(d.dir, "vllm-0__llama__rank0.pickle")
	writeFile(t, path, genSnapshotOOMs(0, 1, 0, 0), t0.Add(time.Second))
	if m := memoryOf(t, d); m.OOMs != 2 || !m.LastOOM.Equal(t0) {
		t.Errorf("ooms %d, last OOM %v; want 2 at the exporter's clock %v", m.OOMs, m.LastOOM, t0)
	}
	d.clock.Advance(time.Minute)
	writeFile(t, path, genSnapshotOOMs(0, 1, 0), t0.Add(2*time.Second))
	if m := memoryOf(t, d); m.OOMs != 2 || !m.LastOOM.Equal(t0) {
		t.Errorf("one entry scrolled out: ooms %d, last OOM %v; want 2 at %v", m.OOMs, m.LastOOM, t0)
	}
}

// TestOOMCountSeenBounded: a device remembers at most maxSeenOOMs entry
// times; older ones count as counted, so an old version of a file with
// many OOMs is not counted again, and memory stays bounded.
func TestOOMCountSeenBounded(t *testing.T) {
	var c oomCount
	times := make([]int64, 3*maxSeenOOMs)
	for i := range times {
		times[i] = int64(1000 + i)
	}
	c = c.next(times[:2*maxSeenOOMs], 1)
	if c.total != 2*maxSeenOOMs || len(c.seen) != maxSeenOOMs || c.last != times[2*maxSeenOOMs-1] {
		t.Fatalf("first version: total %d, %d seen, last %d", c.total, len(c.seen), c.last)
	}
	c = c.next(times[:maxSeenOOMs], 1) // the oldest half again: all before floor
	if c.total != 2*maxSeenOOMs {
		t.Errorf("old entries again: total %d, want %d", c.total, 2*maxSeenOOMs)
	}
	c = c.next(times, 1) // a third of new ones
	if c.total != 3*maxSeenOOMs || len(c.seen) != maxSeenOOMs || c.seen[0] != times[2*maxSeenOOMs] {
		t.Errorf("new entries: total %d, want %d; %d seen from %d", c.total, 3*maxSeenOOMs, len(c.seen), c.seen[0])
	}
	// Two entries of the same microsecond are two OOMs, once each.
	var d oomCount
	d = d.next([]int64{7, 7}, 1)
	d = d.next([]int64{7, 7, 7}, 1)
	if d.total != 3 {
		t.Errorf("equal times: total %d, want 3", d.total)
	}
}
