//go:build unix

package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

func mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// rescanWithin rescans and fails the test if the rescan has not returned
// after 10 s (a hang, not a speed limit: a rescan of these files takes
// milliseconds).
func (d *daemon) rescanWithin(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.snaps.Rescan(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rescan hangs")
	}
}

// TestSnapshotDirRefusesNonRegular: a named pipe as a snapshot and as a
// sidecar, links to a snapshot and to a file outside the directory, a
// socket, a directory named like a snapshot and one named like a sidecar.
// The rescan never blocks, opens none of them, exports the good files and
// reports each bad name once over several rescans (issue 13 cases 5 and
// 17; issue 28: the directory was skipped without a word).
func TestSnapshotDirRefusesNonRegular(t *testing.T) {
	good := genSnapshot(0, 1, 0)
	outside := filepath.Join(t.TempDir(), "secret.pickle")
	writeFile(t, outside, good, t0)
	d := newDaemon(t, SnapshotDirConfig{}, false, func(dir string) {
		writeFile(t, filepath.Join(dir, "good__m.pickle"), good, t0)
		mkfifo(t, filepath.Join(dir, "pipe__m.pickle"))
		writeFile(t, filepath.Join(dir, "side.pickle"), genSnapshot(0, 2, 0), t0)
		mkfifo(t, filepath.Join(dir, "side.labels.json"))
		symlink(t, "good__m.pickle", filepath.Join(dir, "link__m.pickle"))
		symlink(t, outside, filepath.Join(dir, "out__m.pickle"))
		symlink(t, "/etc/shadow", filepath.Join(dir, "shadow__m.pickle"))
		if err := os.Mkdir(filepath.Join(dir, "dir.pickle"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "sidedir.pickle"), genSnapshot(0, 4, 0), t0)
		if err := os.Mkdir(filepath.Join(dir, "sidedir.labels.json"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	ln, err := net.Listen("unix", filepath.Join(d.dir, "sock__m.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range 3 {
		d.rescanWithin(t)
	}
	fams := scrape(t, d.srv.url)
	if _, ok := value(fams, "gpufrag_health_ratio", "instance", "good"); !ok {
		t.Error("the good file is not exported next to the bad names")
	}
	for _, inst := range []string{"pipe", "link", "out", "shadow", "sock", "side", "dir", "sidedir"} {
		if _, ok := value(fams, "gpufrag_health_ratio", "instance", inst); ok {
			t.Errorf("instance %s exported", inst)
		}
	}
	for reason, want := range map[string]float64{ReasonNotRegular: 6, ReasonLabels: 2, ReasonIO: 0} {
		if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", reason); got != want {
			t.Errorf("errors{%s} = %v, want %v (each name once over 3 rescans)\n%s", reason, got, want, d.logs.String())
		}
	}
	if got, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); got != 1 {
		t.Errorf("source_up = %v, want 1", got)
	}
	logs := d.logs.String()
	for _, n := range []string{"pipe__m.pickle", "link__m.pickle", "out__m.pickle", "shadow__m.pickle", "sock__m.pickle", "side.pickle", "dir.pickle", "sidedir.pickle"} {
		if c := strings.Count(logs, "file="+n); c != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", n, c, logs)
		}
	}
	for _, w := range []string{"a named pipe (FIFO)", "a symbolic link", "a socket", "side.labels.json", "=\"dir.pickle: exporter: not a regular file: it is a directory", "sidedir.labels.json: exporter: not a regular file: it is a directory"} {
		if !strings.Contains(logs, w) {
			t.Errorf("logs lack %q:\n%s", w, logs)
		}
	}

	// The pipe replaced by a regular file (a new type): read, exported,
	// and said to be readable again.
	if err := os.Remove(filepath.Join(d.dir, "pipe__m.pickle")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d.dir, "pipe__m.pickle"), genSnapshot(0, 3, 0), t0)
	d.rescanWithin(t)
	if _, ok := value(scrape(t, d.srv.url), "gpufrag_health_ratio", "instance", "pipe"); !ok {
		t.Error("the pipe's replacement is not exported")
	}
	if !strings.Contains(d.logs.String(), `"snapshot file readable again" file=pipe__m.pickle`) {
		t.Errorf("no readable-again line:\n%s", d.logs.String())
	}
}

// TestSnapshotDirSurvivesPanic: an analysis that panics on one file (as a
// snapshot with device -1 did, issue 13 case 1) is recovered: that file is
// counted once with reason panic and logged once with the panic, the files
// beside it keep being exported, and the source stays up.
func TestSnapshotDirSurvivesPanic(t *testing.T) {
	d := newDaemonWith(t, SnapshotDirConfig{}, false, func(d *daemon, _ *ServerConfig) {
		d.snaps.diagnose = func(name string, s *snapshot.Snapshot) (*analysis.Report, error) {
			if strings.HasPrefix(name, "poison") {
				var devs []int
				_ = devs[len(s.Segments)+1] // index out of range, as the device -1 panic
			}
			return diagnoseSnapshot(name, s)
		}
	}, func(dir string) {
		writeFile(t, filepath.Join(dir, "a__m.pickle"), genSnapshot(0, 1, 0), t0)
		writeFile(t, filepath.Join(dir, "poison__m.pickle"), genSnapshot(0, 2, 0), t0)
		writeFile(t, filepath.Join(dir, "z__m.pickle"), genSnapshot(0, 3, 0), t0)
	})
	for range 3 {
		d.rescanWithin(t)
	}
	fams := scrape(t, d.srv.url)
	for _, inst := range []string{"a", "z"} {
		if _, ok := value(fams, "gpufrag_health_ratio", "instance", inst); !ok {
			t.Errorf("instance %s not exported next to the poisoned file", inst)
		}
	}
	if _, ok := value(fams, "gpufrag_health_ratio", "instance", "poison"); ok {
		t.Error("the poisoned file was exported")
	}
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonPanic); got != 1 {
		t.Errorf("errors{panic} = %v, want 1", got)
	}
	if got, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); got != 1 {
		t.Errorf("source_up = %v, want 1", got)
	}
	logs := d.logs.String()
	if c := strings.Count(logs, "file=poison__m.pickle"); c != 1 || !strings.Contains(logs, "index out of range") {
		t.Errorf("poisoned file logged %d times (want once, with the panic):\n%s", c, logs)
	}
}

// TestSnapshotDirStuck: a rescan that makes no progress for StuckAfter is
// reported: the source goes down, /healthz answers 503 with the file it is
// at, the watchdog logs it; when the rescan moves on all comes back.
func TestSnapshotDirStuck(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	d := newDaemonWith(t, SnapshotDirConfig{StuckAfter: time.Minute}, true, func(d *daemon, scfg *ServerConfig) {
		scfg.WatchdogInterval = 5 * time.Millisecond
		d.snaps.diagnose = func(name string, s *snapshot.Snapshot) (*analysis.Report, error) {
			if name == "slow.pickle" {
				entered <- struct{}{}
				<-release // a read that hangs in the file system
			}
			return diagnoseSnapshot(name, s)
		}
	}, func(dir string) {
		writeFile(t, filepath.Join(dir, "a.pickle"), genSnapshot(0, 1, 0), t0)
		writeFile(t, filepath.Join(dir, "slow.pickle"), genSnapshot(0, 2, 0), t0)
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	<-entered
	up := func() float64 {
		v, _ := value(scrape(t, d.srv.url), "gpufrag_source_up", "source", "snapshots")
		return v
	}
	if code, _ := get(t, d.srv.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d before the deadline, want 200", code)
	}
	d.clock.Advance(time.Minute + time.Second)
	if err := d.snaps.Stuck(); !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "slow.pickle") {
		t.Fatalf("Stuck() = %v, want ErrStuck naming slow.pickle", err)
	}
	if v := up(); v != 0 {
		t.Errorf("source_up = %v while stuck, want 0", v)
	}
	code, body := get(t, d.srv.url+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "degraded: ") || !strings.Contains(body, "slow.pickle") {
		t.Errorf("/healthz = %d %q, want 503 degraded naming slow.pickle", code, body)
	}
	eventually(t, "the watchdog's log line", func() bool {
		return strings.Contains(d.logs.String(), "background source stuck")
	})
	close(release)
	released = true
	eventually(t, "the source back up", func() bool { return up() == 1 })
	if code, body := get(t, d.srv.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %q after the rescan moved on", code, body)
	}
	eventually(t, "the watchdog's recovery line", func() bool {
		return strings.Contains(d.logs.String(), "background source moving again")
	})
}

// TestCaptureServesOnlyItsFiles: a capture replaced after start-up by a
// link (to a secret outside the directory), a named pipe, or another file
// is not served, and pipes leak no goroutine (issue 13 case 6).
func TestCaptureServesOnlyItsFiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:secret-hash:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, SnapshotDirConfig{}, false)
	var names []string
	for i := range 4 {
		name, err := d.capture.Capture("vllm-0", "m", fmt.Appendf(nil, "captured snapshot %d", i))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	fetch := func(name string) (int, string) {
		t.Helper()
		resp, err := client.Get(d.srv.url + "/snapshots/" + name)
		if err != nil {
			t.Fatalf("GET %s: %v", name, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := fetch(names[0]); code != 200 || body != "captured snapshot 0" {
		t.Fatalf("intact capture: %d %q", code, body)
	}
	replace := func(name string, with func(path string)) {
		path := filepath.Join(d.capDir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		with(path)
	}
	replace(names[0], func(p string) { symlink(t, secret, p) })
	replace(names[1], func(p string) { mkfifo(t, p) })
	// Same size, another file: written before the capture goes, so that it
	// cannot reuse the capture's inode number.
	other := filepath.Join(d.capDir, "other")
	writeFile(t, other, []byte("another snapshot 2!"[:len("captured snapshot 2")]), t0)
	if err := os.Rename(other, filepath.Join(d.capDir, names[2])); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	for range 20 {
		for _, n := range names[:3] {
			if code, body := fetch(n); code != http.StatusNotFound || strings.Contains(body, "secret") {
				t.Fatalf("%s replaced: %d %q, want 404", n, code, body)
			}
		}
	}
	client.CloseIdleConnections()
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= base+2 })
	if code, body := fetch(names[3]); code != 200 || body != "captured snapshot 3" {
		t.Errorf("intact capture after the others: %d %q", code, body)
	}
	logs := d.logs.String()
	for _, w := range []string{"a symbolic link", "a named pipe (FIFO)", "replaced since it was captured"} {
		if !strings.Contains(logs, w) {
			t.Errorf("logs lack %q:\n%s", w, logs)
		}
	}
}

// TestCaptureIndexSkipsNonRegular: at start, capture-named links and pipes
// are neither indexed (so never served) nor deleted by retention.
func TestCaptureIndexSkipsNonRegular(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, []byte("secret"), t0)
	symlink(t, secret, filepath.Join(dir, "a-m-20261130T030000Z-1.pickle"))
	mkfifo(t, filepath.Join(dir, "a-m-20261130T030000Z-2.pickle"))
	writeFile(t, filepath.Join(dir, "a-m-20261130T030000Z-3.pickle"), []byte("ok"), t0)
	c, _ := newTestCapturer(t, dir, 1, 1<<20, NewManualClock(t0))
	if got := names(c.Files()); len(got) != 1 || got[0] != "a-m-20261130T030000Z-3.pickle" {
		t.Errorf("index = %v, want only the regular capture", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a-m-20261130T030000Z-1.pickle")); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
}

// TestPolledSourceStuck: a source that ignores its context's deadline is
// reported stuck (Collect fails, Stuck says so) until its poll returns.
func TestPolledSourceStuck(t *testing.T) {
	clock := NewManualClock(t0)
	release := make(chan struct{})
	entered := make(chan struct{})
	src := FuncContextSource{SourceName: "hang", Fn: func(context.Context) ([]Sample, error) {
		close(entered)
		<-release
		return nil, nil
	}}
	p, err := NewPolledSource(src, 10*time.Second, 5*time.Second, clock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Poll(context.Background()) }()
	<-entered
	if err := p.Stuck(); err != nil {
		t.Errorf("stuck before the deadline: %v", err)
	}
	clock.Advance(16 * time.Second)
	if err := p.Stuck(); !errors.Is(err, ErrStuck) {
		t.Errorf("Stuck() = %v, want ErrStuck", err)
	}
	if _, err := p.Collect(); !errors.Is(err, ErrStuck) {
		t.Errorf("Collect() = %v, want ErrStuck", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.Stuck(); err != nil {
		t.Errorf("stuck after the poll returned: %v", err)
	}
}

// TestFirstScanDoesNotBlockServing: a first rescan stuck on a file returns
// ErrStuck after StuckAfter instead of keeping the daemon from serving.
func TestFirstScanDoesNotBlockServing(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "slow.pickle"), genSnapshot(0, 1, 0), t0)
	clock := NewManualClock(t0)
	s, err := NewSnapshotDir(SnapshotDirConfig{Dir: dir, Clock: clock, StuckAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	s.diagnose = func(name string, sn *snapshot.Snapshot) (*analysis.Report, error) {
		<-release
		return diagnoseSnapshot(name, sn)
	}
	done := make(chan error, 1)
	go func() { done <- s.FirstScan(context.Background()) }()
	if err := clock.WaitTickers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if err := <-done; !errors.Is(err, ErrStuck) {
		t.Errorf("FirstScan = %v, want ErrStuck", err)
	}
}

// TestDistinctDirs: the capture directory may be neither the snapshot
// directory (by path, through a link, or with a trailing separator) nor
// inside it, nor contain it; NewSnapshotDir refuses such a Capturer (issue
// 13 case 13).
func TestDistinctDirs(t *testing.T) {
	root := t.TempDir()
	snaps := filepath.Join(root, "snaps")
	if err := os.Mkdir(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, snaps, link)
	for _, c := range []struct {
		snaps, capture, want string
	}{
		{snaps, snaps, "are the same directory"},
		{snaps, snaps + "/", "are the same directory"},
		{snaps, filepath.Join(snaps, "..", "snaps"), "are the same directory"},
		{snaps, link, "are the same directory"},
		{snaps, filepath.Join(link, "oom"), "is inside " + snaps},
		{snaps, filepath.Join(snaps, "a", "b"), "is inside"},
		{snaps, root, snaps + " is inside " + root},
		{snaps, filepath.Join(root, "oom"), ""},
		{snaps, filepath.Join(root, "snaps2"), ""},
	} {
		err := DistinctDirs(c.snaps, c.capture)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s, %s: %v, want nil", c.snaps, c.capture, err)
		case c.want != "" && (!errors.Is(err, ErrSameDir) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s, %s: %v, want ErrSameDir with %q", c.snaps, c.capture, err, c.want)
		}
	}
	c, _ := newTestCapturer(t, link, 5, 1<<20, NewManualClock(t0))
	if _, err := NewSnapshotDir(SnapshotDirConfig{Dir: snaps, Capture: c}); !errors.Is(err, ErrSameDir) {
		t.Errorf("NewSnapshotDir over its own capture directory: %v, want ErrSameDir", err)
	}
}

// TestCaptureNotCapturedAgain: a file named like a capture in the snapshot
// directory (a capture directory shared through a mount DistinctDirs cannot
// see) is exported but never captured again, so names do not grow.
func TestCaptureNotCapturedAgain(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false, func(dir string) {
		writeFile(t, filepath.Join(dir, "vllm-0-m-20261130T030000Z-1.pickle"), genSnapshot(0, 1, 2), t0)
		writeFile(t, filepath.Join(dir, "vllm-1__m.pickle"), genSnapshot(0, 2, 1), t0)
	})
	for range 3 {
		d.rescanWithin(t)
	}
	got := names(d.capture.Files())
	if len(got) != 1 || !strings.HasPrefix(got[0], "vllm-1-m-") {
		t.Errorf("captures = %v, want only vllm-1's", got)
	}
	if _, ok := value(scrape(t, d.srv.url), "gpufrag_ooms_total", "instance", "vllm-0-m-20261130T030000Z-1"); !ok {
		t.Error("the capture-named snapshot is not exported")
	}
}

// TestSnapshotDirDeviceMinusOne: the 216-byte kind of snapshot whose
// segment has device -1 (issue 13 case 1, which panicked the analysis and
// crash-looped the daemon) is one skipped file, whatever the reader's
// version says about it (a field error once snapshots are validated, a
// recovered panic before), and the files beside it are exported.
func TestSnapshotDirDeviceMinusOne(t *testing.T) {
	d := newDaemon(t, SnapshotDirConfig{}, false, func(dir string) {
		writeFile(t, filepath.Join(dir, "a__m.pickle"), genSnapshot(0, 1, 0), t0)
		writeFile(t, filepath.Join(dir, "neg__m.pickle"), genSnapshot(-1, 1, 0), t0)
		writeFile(t, filepath.Join(dir, "z__m.pickle"), genSnapshot(0, 2, 0), t0)
	})
	for range 3 {
		d.rescanWithin(t)
	}
	fams := scrape(t, d.srv.url)
	total := 0.0
	for _, r := range snapshotReasons {
		v, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", r)
		total += v
	}
	if total != 1 {
		t.Errorf("snapshot_errors_total sums to %v, want 1 (the device -1 file, once)\n%s", total, d.logs.String())
	}
	for _, inst := range []string{"a", "z"} {
		if _, ok := value(fams, "gpufrag_health_ratio", "instance", inst); !ok {
			t.Errorf("instance %s not exported next to the device -1 file", inst)
		}
	}
	if _, ok := value(fams, "gpufrag_health_ratio", "instance", "neg"); ok {
		t.Error("the device -1 file was exported")
	}
}

// TestSnapshotDirRefusesBadLabels (issue 28): sidecars with invalid UTF-8
// (exported as U+FFFD before), a lone escaped surrogate, keys that differ
// only in case and a NUL in a value are refused, each counted and logged
// once with reason labels, while the files beside them are exported; a
// file name with control characters is exported with '_' in their place.
func TestSnapshotDirRefusesBadLabels(t *testing.T) {
	sidecars := map[string]string{
		"utf8":      "{\"instance\":\"bad\xffname\"}",
		"surrogate": `{"instance":"x\udc80"}`,
		"case":      `{"instance":"x","INSTANCE":"y"}`,
		"nul":       `{"instance":"a\u0000b","model":"m"}`,
		"esc":       `{"model":"\u001b]0;owned\u0007"}`,
	}
	const escName = "esc\x1b]0;t\x07x__m.pickle"
	d := newDaemon(t, SnapshotDirConfig{}, false, func(dir string) {
		for stem, side := range sidecars {
			writeFile(t, filepath.Join(dir, stem+".pickle"), genSnapshot(0, 1, 0), t0)
			writeFile(t, filepath.Join(dir, stem+".labels.json"), []byte(side), t0)
		}
		writeFile(t, filepath.Join(dir, "good.pickle"), genSnapshot(0, 2, 0), t0)
		writeFile(t, filepath.Join(dir, escName), genSnapshot(0, 3, 0), t0)
	})
	for range 3 {
		d.rescanWithin(t)
	}
	code, body := get(t, d.srv.url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if i := strings.IndexAny(body, "\ufffd\x00\x1b\x07"); i >= 0 {
		t.Errorf("/metrics holds %q at byte %d:\n%s", body[i], i, body)
	}
	fams := scrape(t, d.srv.url)
	for _, inst := range []string{"good", "esc_]0;t_x"} {
		if _, ok := value(fams, "gpufrag_health_ratio", "instance", inst); !ok {
			t.Errorf("instance %q not exported:\n%s", inst, body)
		}
	}
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonLabels); got != float64(len(sidecars)) {
		t.Errorf("errors{labels} = %v, want %d (each file once over 3 rescans)\n%s", got, len(sidecars), d.logs.String())
	}
	if got, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); got != 1 {
		t.Errorf("source_up = %v, want 1", got)
	}
	logs := d.logs.String()
	for stem, want := range map[string]string{
		"utf8":      "utf8.labels.json: byte 16: invalid UTF-8 (byte 0xff)",
		"surrogate": `is half of a UTF-16 surrogate pair`,
		"case":      `keys \"instance\" and \"INSTANCE\" differ only in case`,
		"nul":       `field \"instance\": value \"a\\x00b\": byte 1: control character U+0000`,
		"esc":       `field \"model\": value \"\\x1b]0;owned\\a\": byte 0: control character U+001B`,
	} {
		if c := strings.Count(logs, "file="+stem+".pickle reason=labels"); c != 1 {
			t.Errorf("%s logged %d times, want once", stem, c)
		}
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}
