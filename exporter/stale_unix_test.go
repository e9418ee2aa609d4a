//go:build unix

package exporter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdLock takes an exclusive flock on path (created if missing) through a
// descriptor of its own, as gpufrag-probe does for its process's life, and
// returns its release. flock locks belong to the open file description, so
// the exporter's own open of the file conflicts with it although both are
// in this process (TestLockOtherDescription checks that).
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		t.Fatalf("flock %s: %v", path, err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// TestLockOtherDescription: a lock held through one descriptor of this
// process makes testLock, through another, say held; let go, free; no lock
// file, unknown; and testLock creates nothing.
func TestLockOtherDescription(t *testing.T) {
	dir := t.TempDir()
	h, err := openDirHandle(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if got := h.testLock(".x.lock"); got != lockUnknown {
		t.Errorf("missing lock file: %v, want unknown", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".x.lock")); !os.IsNotExist(err) {
		t.Errorf("testLock created the lock file (%v)", err)
	}
	release := holdLock(t, filepath.Join(dir, ".x.lock"))
	if got := h.testLock(".x.lock"); got != lockHeld {
		t.Errorf("lock held through another descriptor: %v, want held", got)
	}
	release()
	if got := h.testLock(".x.lock"); got != lockFree {
		t.Errorf("lock let go: %v, want free", got)
	}
	// testLock let its own shared lock go: a writer can take the name.
	holdLock(t, filepath.Join(dir, ".x.lock"))
}

// TestSnapshotDirStale: a file whose probe lock is free is stale (not
// exported, counted once with reason stale, not watched); a held lock or
// none keeps the file exported; a stale name taken again is live again.
func TestSnapshotDirStale(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, false)
	for _, n := range []string{"a__m__r0", "b__m__r0", "c__m__r0"} {
		writeFile(t, filepath.Join(d.dir, n+".pickle"), legacy, t0)
	}
	releaseA := holdLock(t, filepath.Join(d.dir, ".a__m__r0.lock"))
	holdLock(t, filepath.Join(d.dir, ".b__m__r0.lock"))() // b's process has exited
	// c has no lock file: a plain _dump_snapshot writer, liveness unknown.
	check := func(step string, exported map[string]bool, stale, files, staleFiles float64) {
		t.Helper()
		d.rescan(t)
		fams := scrape(t, d.srv.url)
		for inst, want := range exported {
			if _, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", inst); ok != want {
				t.Errorf("%s: instance %s exported = %v, want %v", step, inst, ok, want)
			}
		}
		if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonStale); got != stale {
			t.Errorf("%s: errors{stale} = %v, want %v", step, got, stale)
		}
		if got, _ := value(fams, "gpufrag_snapshot_files"); got != files {
			t.Errorf("%s: snapshot_files = %v, want %v", step, got, files)
		}
		if got, _ := value(fams, "gpufrag_snapshot_stale_files"); got != staleFiles {
			t.Errorf("%s: snapshot_stale_files = %v, want %v", step, got, staleFiles)
		}
	}
	check("start", map[string]bool{"a": true, "b": false, "c": true}, 1, 2, 1)
	check("again", map[string]bool{"a": true, "b": false, "c": true}, 1, 2, 1) // counted once
	// A restarted pod of the same name takes b's lock again.
	releaseB := holdLock(t, filepath.Join(d.dir, ".b__m__r0.lock"))
	check("b restarted", map[string]bool{"a": true, "b": true, "c": true}, 1, 3, 0)
	releaseA()
	releaseB()
	check("a and b exited", map[string]bool{"a": false, "b": false, "c": true}, 3, 1, 2)
	if err := os.Remove(filepath.Join(d.dir, "a__m__r0.pickle")); err != nil {
		t.Fatal(err)
	}
	check("a removed", map[string]bool{"a": false, "b": false, "c": true}, 3, 1, 1)
	logs := d.logs.String()
	if n := strings.Count(logs, `msg="snapshot file stale: not exported" file=b__m__r0.pickle`); n != 2 {
		t.Errorf("b's staleness logged %d times, want 2 (once per episode):\n%s", n, logs)
	}
	if !strings.Contains(logs, "no process holds its lock .b__m__r0.lock") {
		t.Errorf("the log does not say why b is stale:\n%s", logs)
	}
	// The exporter deletes nothing.
	for _, n := range []string{"b__m__r0.pickle", ".a__m__r0.lock", ".b__m__r0.lock"} {
		if _, err := os.Lstat(filepath.Join(d.dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestSnapshotDirStaleMaxFiles: stale files do not take a live file's place
// under --max-files (before, the first names in order were watched, dead or
// not, and new pods' files were ignored).
func TestSnapshotDirStaleMaxFiles(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{MaxFiles: 2}, false)
	for _, n := range []string{"a__m__r0", "b__m__r0", "c__m__r0", "d__m__r0"} {
		writeFile(t, filepath.Join(d.dir, n+".pickle"), legacy, t0)
	}
	holdLock(t, filepath.Join(d.dir, ".a__m__r0.lock"))() // dead
	holdLock(t, filepath.Join(d.dir, ".b__m__r0.lock"))() // dead
	holdLock(t, filepath.Join(d.dir, ".c__m__r0.lock"))
	holdLock(t, filepath.Join(d.dir, ".d__m__r0.lock"))
	d.rescan(t)
	fams := scrape(t, d.srv.url)
	for inst, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true} {
		if _, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", inst); ok != want {
			t.Errorf("instance %s exported = %v, want %v", inst, ok, want)
		}
	}
	for reason, want := range map[string]float64{ReasonMaxFiles: 0, ReasonStale: 2} {
		if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", reason); got != want {
			t.Errorf("errors{%s} = %v, want %v", reason, got, want)
		}
	}
}

// TestSnapshotDirDuplicateLive: two files with the same sidecar labels, the
// stable name (its lock held) and a -pid5 name: '-' sorts before '.', so by
// name order alone the -pid5 file was exported and the live one skipped.
// Dead (lock free) the -pid5 file is stale; with no lock file (unknown) it
// is the duplicate, because a live file comes first.
func TestSnapshotDirDuplicateLive(t *testing.T) {
	replay, legacy := snapFixture(t, "replay.pickle"), snapFixture(t, "legacy.pickle")
	side := []byte(`{"instance":"i","model":"m","gpu":"0"}`)
	for _, pidLock := range []string{"free", "none"} {
		t.Run("pid_lock="+pidLock, func(t *testing.T) {
			d := newDaemon(t, SnapshotDirConfig{}, false)
			writeFile(t, filepath.Join(d.dir, "i__m__gpu0.pickle"), replay, t0)
			writeFile(t, filepath.Join(d.dir, "i__m__gpu0.labels.json"), side, t0)
			writeFile(t, filepath.Join(d.dir, "i__m__gpu0-pid5.pickle"), legacy, t0)
			writeFile(t, filepath.Join(d.dir, "i__m__gpu0-pid5.labels.json"), side, t0)
			holdLock(t, filepath.Join(d.dir, ".i__m__gpu0.lock"))
			if pidLock == "free" {
				holdLock(t, filepath.Join(d.dir, ".i__m__gpu0-pid5.lock"))()
			}
			d.rescan(t)
			fams := scrape(t, d.srv.url)
			want := float64(expected(t, replay).Devices[0].Metrics.Reserved)
			if got, ok := value(fams, "gpufrag_reserved_bytes", "instance", "i"); !ok || got != want {
				t.Errorf("reserved = %v (%v), want the live file's %v", got, ok, want)
			}
			reason := map[string]string{"free": ReasonStale, "none": ReasonDuplicateLabels}[pidLock]
			if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", reason); got != 1 {
				t.Errorf("errors{%s} = %v, want 1", reason, got)
			}
		})
	}
}

// TestSnapshotDirMaxFileAge: with --max-file-age, a file without a lock file
// that has not been modified within it is stale; a held lock keeps an old
// file live; a rewrite makes it live again.
func TestSnapshotDirMaxFileAge(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{MaxFileAge: time.Hour}, false)
	writeFile(t, filepath.Join(d.dir, "old__m.pickle"), legacy, t0.Add(-2*time.Hour))
	writeFile(t, filepath.Join(d.dir, "new__m.pickle"), legacy, t0.Add(-time.Minute))
	writeFile(t, filepath.Join(d.dir, "held__m.pickle"), legacy, t0.Add(-2*time.Hour))
	holdLock(t, filepath.Join(d.dir, ".held__m.lock"))
	d.rescan(t)
	fams := scrape(t, d.srv.url)
	for inst, want := range map[string]bool{"old": false, "new": true, "held": true} {
		if _, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", inst); ok != want {
			t.Errorf("instance %s exported = %v, want %v", inst, ok, want)
		}
	}
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonStale); got != 1 {
		t.Errorf("errors{stale} = %v, want 1", got)
	}
	if !strings.Contains(d.logs.String(), "over --max-file-age 1h0m0s") {
		t.Errorf("the log does not say why old is stale:\n%s", d.logs.String())
	}
	writeFile(t, filepath.Join(d.dir, "old__m.pickle"), legacy, t0)
	d.clock.Advance(time.Minute)
	d.rescan(t)
	fams = scrape(t, d.srv.url)
	for inst, want := range map[string]bool{"old": true, "new": true, "held": true} {
		if _, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", inst); ok != want {
			t.Errorf("after a rewrite: instance %s exported = %v, want %v", inst, ok, want)
		}
	}
}

// TestSnapshotDirHostileLock: a lock name that is a named pipe, a symbolic
// link (to a free lock: followed, it would make the file stale), a
// directory or an unreadable file is never opened, followed or waited on:
// liveness is unknown and the file is exported as before.
func TestSnapshotDirHostileLock(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, false)
	free := filepath.Join(t.TempDir(), "free.lock")
	holdLock(t, free)()
	makers := map[string]func(path string) error{
		"fifo":    func(p string) error { return unix.Mkfifo(p, 0o644) },
		"symlink": func(p string) error { return os.Symlink(free, p) },
		"dir":     func(p string) error { return os.Mkdir(p, 0o755) },
	}
	if os.Geteuid() != 0 { // root opens a file of mode 0
		makers["unreadable"] = func(p string) error { return os.WriteFile(p, nil, 0) }
	}
	for inst, mk := range makers {
		writeFile(t, filepath.Join(d.dir, inst+"__m.pickle"), legacy, t0)
		if err := mk(filepath.Join(d.dir, "."+inst+"__m.lock")); err != nil {
			t.Fatal(err)
		}
	}
	d.rescanWithin(t) // a hostile lock name must not block it
	fams := scrape(t, d.srv.url)
	for inst := range makers {
		if _, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", inst); !ok {
			t.Errorf("%s lock: file not exported", inst)
		}
	}
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonStale); got != 0 {
		t.Errorf("errors{stale} = %v, want 0", got)
	}
	if got, _ := os.ReadFile(free); len(got) != 0 {
		t.Error("the link's target changed")
	}
}

// TestSnapshotDirFilesUnlisted: while the directory cannot be listed,
// gpufrag_snapshot_files is 0 (nothing is watched) instead of the last count.
func TestSnapshotDirFilesUnlisted(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, false)
	writeFile(t, filepath.Join(d.dir, "a__m.pickle"), legacy, t0)
	d.rescan(t)
	if got, _ := value(scrape(t, d.srv.url), "gpufrag_snapshot_files"); got != 1 {
		t.Fatalf("snapshot_files = %v, want 1", got)
	}
	moved := d.dir + ".moved"
	if err := os.Rename(d.dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Rename(moved, d.dir) })
	if err := d.snaps.Rescan(context.Background()); err == nil {
		t.Fatal("rescan of a missing directory: no error")
	}
	fams := scrape(t, d.srv.url)
	if got, _ := value(fams, "gpufrag_snapshot_files"); got != 0 {
		t.Errorf("snapshot_files = %v while the directory cannot be listed, want 0", got)
	}
	if got, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); got != 0 {
		t.Errorf("source_up = %v, want 0", got)
	}
	if err := os.Rename(moved, d.dir); err != nil {
		t.Fatal(err)
	}
	d.rescan(t)
	if got, _ := value(scrape(t, d.srv.url), "gpufrag_snapshot_files"); got != 1 {
		t.Errorf("snapshot_files = %v once listed again, want 1", got)
	}
}
