package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/testkit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// fixture returns a file of the repository's test data (relative to this
// package), skipping the test with a clear message when it is absent.
func fixture(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(rel))
	if err != nil {
		t.Skipf("fixture %s not available (%v): this test needs the repository's test data", rel, err)
	}
	return data
}

// snapFixture is a pickle of package snapshot's testdata.
func snapFixture(t testing.TB, name string) []byte {
	return fixture(t, "../snapshot/testdata/"+name)
}

// sharedFixture is a real snapshot of ../shared/data/snapshots (outside the
// repository; the test skips when it is not checked out next to it).
func sharedFixture(t testing.TB, name string) []byte {
	return fixture(t, "../../shared/data/snapshots/"+name)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = testkit.LockedBuffer

func testLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// server is a daemon started by startServer.
type server struct {
	url  string
	stop context.CancelFunc
	done chan error
}

// startServer serves cfg on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, cfg ServerConfig) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{url: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- Serve(ctx, ln, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return s
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape fetches /metrics and parses it.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of the series of family name whose labels include
// want (label=value pairs), and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
outer:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if have[want[i]] != want[i+1] {
				continue outer
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// eventually retries cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expected analyses data as the snapshot directory should.
func expected(t *testing.T, data []byte) *analysis.Report {
	t.Helper()
	s, err := snapshot.ReadBytes(data, "x")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func writeFile(t *testing.T, path string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// daemon is a full daemon over a temporary snapshot directory: registry,
// snapshot source with capture, collector, and server, on a manual clock.
type daemon struct {
	dir, capDir string
	clock       *ManualClock
	logs        *syncBuffer
	reg         *prometheus.Registry
	snaps       *SnapshotDir
	capture     *Capturer
	srv         *server
}

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// newDaemon starts a daemon; with run, its rescans run in the background on
// the manual clock (the first at start, after setup has written its files).
func newDaemon(t *testing.T, cfg SnapshotDirConfig, run bool, setup ...func(dir string)) *daemon {
	t.Helper()
	return newDaemonWith(t, cfg, run, nil, setup...)
}

// newDaemonWith is newDaemon with before called on the daemon and the
// server's configuration before the server starts (test hooks, a watchdog
// interval).
func newDaemonWith(t *testing.T, cfg SnapshotDirConfig, run bool, before func(*daemon, *ServerConfig), setup ...func(dir string)) *daemon {
	t.Helper()
	d := &daemon{dir: t.TempDir(), capDir: filepath.Join(t.TempDir(), "oom"), clock: NewManualClock(t0),
		logs: &syncBuffer{}, reg: prometheus.NewPedanticRegistry()}
	for _, f := range setup {
		f(d.dir)
	}
	log := testLogger(d.logs)
	var err error
	d.capture, err = NewCapturer(CaptureConfig{Dir: d.capDir, Clock: d.clock, Logger: log, Registerer: d.reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.capture.Close() })
	cfg.Dir, cfg.Clock, cfg.Logger, cfg.Registerer, cfg.Capture = d.dir, d.clock, log, d.reg, d.capture
	d.snaps, err = NewSnapshotDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWithOptions(d.reg, Options{SourceTimeout: time.Second, Logger: log}, d.snaps); err != nil {
		t.Fatal(err)
	}
	scfg := ServerConfig{Gatherer: d.reg, Logger: log, Snapshots: d.capture}
	if run {
		scfg.Runners = []Runner{d.snaps}
	}
	if before != nil {
		before(d, &scfg)
	}
	d.srv = startServer(t, scfg)
	return d
}

func (d *daemon) rescan(t *testing.T) {
	t.Helper()
	if err := d.snaps.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDaemonSnapshots drives the daemon through a snapshot directory's life:
// files arrive, change, break and go, and /metrics follows on each rescan.
func TestDaemonSnapshots(t *testing.T) {
	modern := snapFixture(t, "modern_p4.pickle") // device 0 has an oom entry; device 1 none
	replay := snapFixture(t, "replay.pickle")
	hostile := fixture(t, "../snapshot/pickle/testdata/hostile_p4.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, true, func(dir string) {
		writeFile(t, filepath.Join(dir, "vllm-0__llama-8b__dump.pickle"), modern, t0)
		writeFile(t, filepath.Join(dir, "r.pickle"), replay, t0)
		writeFile(t, filepath.Join(dir, "r.labels.json"), []byte(`{"instance":"sgl-1","model":"qwen","gpu":"3"}`), t0)
	})
	if err := d.clock.WaitTickers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(10 * time.Second) // a tick: the runner rescans
	// The runner's first scan and the tick's, so that no background scan
	// overlaps the writes below.
	eventually(t, "two rescans", func() bool {
		d.snaps.mu.Lock()
		defer d.snaps.mu.Unlock()
		return d.snaps.scans >= 2
	})
	eventually(t, "both files exported", func() bool {
		fams := scrape(t, d.srv.url)
		_, a := value(fams, "gpufrag_fragmentation_ratio", "instance", "vllm-0", "gpu", "0")
		_, b := value(fams, "gpufrag_fragmentation_ratio", "instance", "sgl-1", "gpu", "3")
		return a && b
	})

	if code, body := get(t, d.srv.url+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	fams := scrape(t, d.srv.url)
	want := expected(t, modern)
	for _, dev := range want.Devices {
		gpu := fmt.Sprint(dev.Device)
		got, ok := value(fams, "gpufrag_fragmentation_ratio", "instance", "vllm-0", "model", "llama-8b", "gpu", gpu, "pool", "pytorch")
		if !ok || got != dev.Metrics.FragRate {
			t.Errorf("gpu %s fragmentation_ratio = %v (%v), analysis says %v", gpu, got, ok, dev.Metrics.FragRate)
		}
		got, _ = value(fams, "gpufrag_reserved_bytes", "instance", "vllm-0", "gpu", gpu)
		if got != float64(dev.Metrics.Reserved) || got == 0 {
			t.Errorf("gpu %s reserved_bytes = %v, analysis says %v", gpu, got, dev.Metrics.Reserved)
		}
	}
	if got, _ := value(fams, "gpufrag_ooms_total", "instance", "vllm-0", "gpu", "0"); got != 1 {
		t.Errorf("ooms_total gpu 0 = %v, want the file's 1 oom entry", got)
	}
	if got, _ := value(fams, "gpufrag_ooms_total", "instance", "vllm-0", "gpu", "1"); got != 0 {
		t.Errorf("ooms_total gpu 1 = %v, want 0", got)
	}
	if got, _ := value(fams, "gpufrag_snapshots_analyzed_total"); got != 2 {
		t.Errorf("snapshots_analyzed_total = %v, want 2", got)
	}
	if got, _ := value(fams, "gpufrag_snapshot_last_analyzed_timestamp_seconds"); got != float64(t0.Add(10*time.Second).Unix()) &&
		got != float64(t0.Unix()) {
		t.Errorf("last_analyzed_timestamp = %v, want the manual clock's time", got)
	}
	if got, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); got != 1 {
		t.Errorf("source_up = %v", got)
	}

	// The OOM snapshot was captured, under the injected clock's time.
	caps := d.capture.Files()
	if len(caps) != 1 || !strings.HasPrefix(caps[0].Name, "vllm-0-llama-8b-20261130T0300") {
		t.Fatalf("captures = %+v, want one vllm-0-llama-8b-… file", caps)
	}
	if got, _ := value(fams, "gpufrag_oom_snapshots_captured_total", "instance", "vllm-0", "model", "llama-8b"); got != 1 {
		t.Errorf("oom_snapshots_captured_total = %v, want 1", got)
	}
	code, body := get(t, d.srv.url+"/snapshots/"+caps[0].Name)
	if code != 200 || body != string(modern) {
		t.Errorf("download: status %d, %d bytes, want the file's %d", code, len(body), len(modern))
	}
	if code, body := get(t, d.srv.url+"/snapshots/"); code != 200 || !strings.Contains(body, `href="`+caps[0].Name+`"`) {
		t.Errorf("listing: %d %s", code, body)
	}
	if code, body := get(t, d.srv.url+"/snapshots/index.json"); code != 200 || !strings.Contains(body, `"name":"`+caps[0].Name+`"`) {
		t.Errorf("index.json: %d %s", code, body)
	}
	for _, bad := range []string{"../r.pickle", "..%2fr.pickle", "%2e%2e/%2e%2e/etc/passwd", ".capture-x.tmp", "x.pickle"} {
		if code, _ := get(t, d.srv.url+"/snapshots/"+bad); code != http.StatusNotFound {
			t.Errorf("/snapshots/%s: status %d, want 404", bad, code)
		}
	}

	// A hostile and a truncated pickle arrive with a new good file: both are
	// reported and skipped, the others keep being exported.
	writeFile(t, filepath.Join(d.dir, "evil.pickle"), hostile, t0)
	writeFile(t, filepath.Join(d.dir, "cut.pickle"), truncatedPickle(t, snapFixture(t, "modern_p2.pickle")), t0)
	writeFile(t, filepath.Join(d.dir, "huge.pickle"), fixture(t, "../snapshot/pickle/testdata/huge_binunicode8.pickle"), t0)
	writeFile(t, filepath.Join(d.dir, "new__m.pickle"), replay, t0)
	// A torch.save checkpoint (a ZIP archive) dropped in by mistake.
	writeFile(t, filepath.Join(d.dir, "model.pkl"), append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), make([]byte, 64)...), t0)
	d.rescan(t)
	d.rescan(t) // unchanged files are neither re-read nor re-reported
	fams = scrape(t, d.srv.url)
	for reason, want := range map[string]float64{ReasonForbidden: 1, ReasonTruncated: 1, ReasonLength: 1, ReasonNotSnapshot: 1, ReasonField: 0} {
		if got, ok := value(fams, "gpufrag_snapshot_errors_total", "reason", reason); !ok || got != want {
			t.Errorf("snapshot_errors_total{reason=%q} = %v (%v), want %v\n%s", reason, got, ok, want, d.logs.String())
		}
	}
	for _, inst := range []string{"vllm-0", "sgl-1", "new"} {
		if _, ok := value(fams, "gpufrag_health_ratio", "instance", inst); !ok {
			t.Errorf("instance %s not exported next to the bad files", inst)
		}
	}
	if _, ok := value(fams, "gpufrag_health_ratio", "instance", "evil"); ok {
		t.Error("the hostile file was exported")
	}
	if got, _ := value(fams, "gpufrag_snapshots_analyzed_total"); got != 3 {
		t.Errorf("snapshots_analyzed_total = %v, want 3 (unchanged files are not re-read)", got)
	}
	logs := d.logs.String()
	if n := strings.Count(logs, "file=evil.pickle"); n != 1 {
		t.Errorf("hostile file logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "STACK_GLOBAL") {
		t.Errorf("the log does not carry the reader's error:\n%s", logs)
	}

	// A changed file (new size and time) is re-read; a removed one goes.
	writeFile(t, filepath.Join(d.dir, "vllm-0__llama-8b__dump.pickle"), replay, t0.Add(time.Minute))
	if err := os.Remove(filepath.Join(d.dir, "r.pickle")); err != nil {
		t.Fatal(err)
	}
	d.rescan(t)
	fams = scrape(t, d.srv.url)
	wantReplay := expected(t, replay).Devices[0].Metrics
	if got, _ := value(fams, "gpufrag_reserved_bytes", "instance", "vllm-0", "gpu", "0"); got != float64(wantReplay.Reserved) {
		t.Errorf("changed file: reserved_bytes = %v, want %v", got, wantReplay.Reserved)
	}
	if _, ok := value(fams, "gpufrag_reserved_bytes", "instance", "vllm-0", "gpu", "1"); ok {
		t.Error("changed file still exports the old file's device 1")
	}
	if _, ok := value(fams, "gpufrag_reserved_bytes", "instance", "sgl-1"); ok {
		t.Error("removed file still exported")
	}
	if n := len(d.capture.Files()); n != 1 {
		t.Errorf("%d captures, want 1 (the new version has no oom entry)", n)
	}
	problems, err := testutil.GatherAndLint(d.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestSnapshotDirLimits: files past --max-files, files larger than
// --max-file-bytes, a new instance past --max-instances and a file that
// repeats another's labels are each counted once and skipped.
func TestSnapshotDirLimits(t *testing.T) {
	replay := snapFixture(t, "replay.pickle")
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{MaxFiles: 4, MaxInstances: 2, MaxFileBytes: int64(len(replay))}, false)
	writeFile(t, filepath.Join(d.dir, "a__m.pickle"), replay, t0)
	writeFile(t, filepath.Join(d.dir, "a__m__copy.pickle"), legacy, t0) // same labels as a__m
	writeFile(t, filepath.Join(d.dir, "b.pickle"), legacy, t0)
	writeFile(t, filepath.Join(d.dir, "c.pickle"), legacy, t0) // a third instance
	writeFile(t, filepath.Join(d.dir, "d.pickle"), legacy, t0) // fifth file
	writeFile(t, filepath.Join(d.dir, "big.pkl"), append(bytes.Clone(replay), 0), t0)
	d.rescan(t)
	d.rescan(t)
	fams := scrape(t, d.srv.url)
	// Name order: a__m, a__m__copy, b, big.pkl | c, d (past 4 files).
	for reason, want := range map[string]float64{ReasonMaxFiles: 2, ReasonTooLarge: 1, ReasonDuplicateLabels: 1, ReasonMaxInstances: 0} {
		if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", reason); got != want {
			t.Errorf("errors{%s} = %v, want %v", reason, got, want)
		}
	}
	if got, _ := value(fams, "gpufrag_snapshot_files"); got != 4 {
		t.Errorf("snapshot_files = %v, want 4", got)
	}
	// Make room for c under the file cap: now it is a third instance.
	for _, n := range []string{"big.pkl", "d.pickle"} {
		if err := os.Remove(filepath.Join(d.dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	d.rescan(t)
	fams = scrape(t, d.srv.url)
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonMaxInstances); got != 1 {
		t.Errorf("errors{max_instances} = %v, want 1", got)
	}
	for inst, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if _, ok := value(fams, "gpufrag_reserved_bytes", "instance", inst); ok != want {
			t.Errorf("instance %s exported = %v, want %v", inst, ok, want)
		}
	}
	// The duplicate is a__m__copy (name order), not a__m: a__m keeps replay's figures.
	wantR := expected(t, replay).Devices[0].Metrics.Reserved
	if got, _ := value(fams, "gpufrag_reserved_bytes", "instance", "a"); got != float64(wantR) {
		t.Errorf("a reserved = %v, want replay.pickle's %v", got, wantR)
	}
}

// TestSnapshotDirSidecarErrors: a malformed sidecar skips its file with
// reason labels and an error naming the byte offset.
func TestSnapshotDirSidecarErrors(t *testing.T) {
	legacy := snapFixture(t, "legacy.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, false)
	writeFile(t, filepath.Join(d.dir, "x.pickle"), legacy, t0)
	writeFile(t, filepath.Join(d.dir, "x.labels.json"), []byte(`{"instance": 7}`), t0)
	writeFile(t, filepath.Join(d.dir, "y.pickle"), legacy, t0)
	writeFile(t, filepath.Join(d.dir, "y.labels.json"), []byte(`{"instance":"ok","zone":"z"}`), t0)
	d.rescan(t)
	fams := scrape(t, d.srv.url)
	if got, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonLabels); got != 2 {
		t.Errorf("errors{labels} = %v, want 2", got)
	}
	logs := d.logs.String()
	for _, s := range []string{"x.labels.json: byte offset 14", `field \"instance\"`, `field \"zone\": unknown field`} {
		if !strings.Contains(logs, s) {
			t.Errorf("logs lack %q:\n%s", s, logs)
		}
	}
	// Fixing the sidecar (a new stamp) brings the file in.
	writeFile(t, filepath.Join(d.dir, "x.labels.json"), []byte(`{"instance":"fixed","model":"m"}`), t0.Add(time.Second))
	d.rescan(t)
	if _, ok := value(scrape(t, d.srv.url), "gpufrag_reserved_bytes", "instance", "fixed", "model", "m"); !ok {
		t.Error("fixed sidecar not picked up")
	}
}

// TestSharedSnapshot: the contract check's file through the daemon.
func TestSharedSnapshot(t *testing.T) {
	data := sharedFixture(t, "Charran78__DocuBox__dump_snapshot.pickle")
	d := newDaemon(t, SnapshotDirConfig{}, false)
	writeFile(t, filepath.Join(d.dir, "Charran78__DocuBox__dump_snapshot.pickle"), data, t0)
	d.rescan(t)
	fams := scrape(t, d.srv.url)
	n := 0
	for name := range fams {
		if strings.HasPrefix(name, "gpufrag_") {
			n++
		}
	}
	if n < 8 {
		t.Errorf("%d gpufrag_ families, want >= 8", n)
	}
	want := expected(t, data).Devices[0].Metrics
	if got, _ := value(fams, "gpufrag_largest_free_block_bytes", "instance", "Charran78", "model", "DocuBox"); got != float64(want.LargestFreeBlock) {
		t.Errorf("largest_free_block_bytes = %v, want %v", got, want.LargestFreeBlock)
	}
}

// truncatedPickle cuts data at the longest prefix the reader reports as
// truncated (a cut inside a string reports a bad length instead).
func truncatedPickle(t *testing.T, data []byte) []byte {
	t.Helper()
	for n := len(data) / 2; n > 2; n-- {
		if _, err := snapshot.ReadBytes(data[:n], "cut"); errors.Is(err, pickle.ErrTruncated) {
			return data[:n]
		}
	}
	t.Fatal("no prefix reads as truncated")
	return nil
}

func TestLabelsFromName(t *testing.T) {
	for name, want := range map[string]sidecar{
		"vllm-0__llama__dump.pickle": {Instance: "vllm-0", Model: "llama"},
		"a__b__c__d.pkl":             {Instance: "a", Model: "b"},
		"a__b.pickle":                {Instance: "a", Model: "b"},
		"__b__c.pickle":              {Instance: "__b__c"},
		"plain.pickle":               {Instance: "plain"},
		"bad\xff__m.pickle":          {Instance: "bad", Model: "_m"},
		// Issue 28: control characters become '_' as invalid UTF-8 does.
		"esc\x1b]0;t\x07x__m.pickle": {Instance: "esc_]0;t_x", Model: "m"},
		"nl\nx\u0085.pickle":         {Instance: "nl_x_"},
	} {
		if got := labelsFromName(name); got != want {
			t.Errorf("%q: %+v, want %+v", name, got, want)
		}
	}
}

// FuzzLabelsFromName: any file name yields valid UTF-8 labels with a
// non-empty instance, and never a panic.
func FuzzLabelsFromName(f *testing.F) {
	for _, s := range []string{"vllm-0__llama__dump.pickle", "a__b.pkl", "____.pickle", "x.pickle", "\xff__\xfe.pickle", ".pickle"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		l := labelsFromName(name)
		if err := (Labels{Instance: l.Instance, Model: l.Model}).valid(); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if l.GPU != "" || (l.Model != "" && (l.Instance == "" || strings.Contains(l.Instance, "__"))) {
			t.Fatalf("%q: %+v", name, l)
		}
	})
}
