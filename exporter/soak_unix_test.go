//go:build unix

package exporter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/testkit"

	"github.com/prometheus/client_golang/prometheus"
)

// Soak test bounds. The files are small (under 200 KB), MaxFileBytes is
// 1 MiB, and one file is analysed at a time: the whole test process peaked
// at 32 MiB over 15 s (79 MiB under -race), so 128 MiB (512 MiB with the
// race detector, which multiplies memory by 5 to 10) is a leak or an
// unbounded decode, not noise.
const (
	soakRSSBound     = 128 << 20
	soakRSSBoundRace = 512 << 20
	soakWindow       = 48 // files kept in the directory (under MaxFiles and MaxInstances)
	soakMaxFileBytes = 1 << 20
)

// vmRSS returns the process's resident set size from /proc/self/status
// (0 where there is none).
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// soakKind is one kind of file rotated through the directory: good ones
// with their expected allocated bytes, bad ones with the reason they must be
// counted under ("" where the reason depends on the reader's version).
type soakKind struct {
	name   string
	good   bool
	reason string
	make   func(dir, name string, i int) // writes dir/name
}

// soakWrite writes data as dir/name through a dot file and a rename, so a
// rescan never sees a partial file.
func soakWrite(t testing.TB, dir, name string, data []byte) {
	tmp := filepath.Join(dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Error(err)
	}
}

// bombSnapshot is a pickle whose segment list references one memoised
// segment of blocks many times (a shared-reference pickle, issue 13 case 4).
func bombSnapshot(blocks, repeats int) []byte {
	var bl []any
	for i := range blocks {
		bl = append(bl, pod{{"address", 1<<40 + i<<20}, {"size", 1 << 20}, {"requested_size", 1 << 20},
			{"state", "active_allocated"}, {"frames", []any{}}})
	}
	seg := &snaptest.Shared{V: pod{{"device", 0}, {"address", 1 << 40}, {"total_size", blocks << 20}, {"allocated_size", blocks << 20},
		{"active_size", blocks << 20}, {"requested_size", blocks << 20}, {"stream", 0}, {"segment_type", "large"},
		{"is_expandable", false}, {"frames", []any{}}, {"blocks", bl}}}
	segs := make([]any, repeats) // one segment, then references to it through the memo
	for i := range segs {
		segs[i] = seg
	}
	return snaptest.Encode(pod{{"segments", segs}, {"device_traces", []any{[]any{}}}})
}

// TestSoak rotates good, hostile, blocking and linked files through a
// running daemon's snapshot directory for a fixed time (3 s with -short,
// 15 s otherwise) while /metrics, /healthz and /snapshots/ are fetched
// concurrently over loopback, and captures are replaced by links to a
// secret. It asserts: every request answered (no 5xx, no transport error),
// the secret never served, peak VmRSS under a bound, every good file in the
// directory exported with its figures, every bad file counted exactly once
// in gpufrag_snapshot_errors_total, and goroutines back to their baseline
// once the daemon stops.
func TestSoak(t *testing.T) {
	longtest.Skip(t)
	duration := 15 * time.Second
	if testing.Short() {
		duration = 3 * time.Second
	}
	rssBound := int64(soakRSSBound)
	if testkit.Race {
		rssBound = soakRSSBoundRace
	}
	baseGoroutines := runtime.NumGoroutine()
	dir, capDir := t.TempDir(), filepath.Join(t.TempDir(), "oom")
	secretDir := t.TempDir()
	const secretMark = "SECRET-MUST-NOT-BE-SERVED"
	secret := filepath.Join(secretDir, "shadow")
	if err := os.WriteFile(secret, []byte(secretMark), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := testLogger(logs)
	reg := prometheus.NewPedanticRegistry()
	capture, err := NewCapturer(CaptureConfig{Dir: capDir, MaxFiles: 8, Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer capture.Close()
	snaps, err := NewSnapshotDir(SnapshotDirConfig{Dir: dir, Rescan: 10 * time.Millisecond, MaxFileBytes: soakMaxFileBytes,
		StuckAfter: time.Minute, Logger: log, Registerer: reg, Capture: capture})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWithOptions(reg, Options{SourceTimeout: time.Second, Logger: log}, snaps); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ln, ServerConfig{Gatherer: reg, Logger: log, Snapshots: capture,
			Runners: []Runner{snaps}, WatchdogInterval: 50 * time.Millisecond})
	}()
	stopped := false
	stopServer := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	defer stopServer()

	good := genSnapshot(0, 1, 0)
	lastGood := "none.pickle"
	kinds := []soakKind{
		{name: "good", good: true},
		{name: "good-oom", good: true},
		{name: "devneg", make: func(d, n string, _ int) { soakWrite(t, d, n, genSnapshot(-1, 1, 0)) }},
		{name: "truncated", make: func(d, n string, _ int) { soakWrite(t, d, n, good[:len(good)/2]) }},
		{name: "bitflip", make: func(d, n string, _ int) { // the STOP opcode flipped into an unknown one
			b := bytes.Clone(good)
			b[len(b)-1] ^= 0xff
			soakWrite(t, d, n, b)
		}},
		{name: "zip", make: func(d, n string, _ int) {
			soakWrite(t, d, n, append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), make([]byte, 200)...))
		}},
		{name: "hugelen", make: func(d, n string, _ int) { // BINUNICODE8 declaring 1 TiB
			soakWrite(t, d, n, binary.LittleEndian.AppendUint64([]byte("\x80\x04\x8d"), 1<<40))
		}},
		{name: "bomb", make: func(d, n string, _ int) { soakWrite(t, d, n, bombSnapshot(64, 60000)) }},
		{name: "fifo", reason: ReasonNotRegular, make: func(d, n string, _ int) { mkfifo(t, filepath.Join(d, n)) }},
		{name: "linkout", reason: ReasonNotRegular, make: func(d, n string, _ int) { symlink(t, secret, filepath.Join(d, n)) }},
		{name: "linkin", reason: ReasonNotRegular, make: func(d, n string, _ int) {
			symlink(t, lastGood, filepath.Join(d, n)) // to a good file (or one gone: dangling)
		}},
	}

	// The concurrent clients: every answer must be a 200 (404 for a capture
	// that retention deleted between the listing and the download), and the
	// secret never appears.
	var requests, failures, downloads atomic.Int64
	var failMu sync.Mutex
	var firstFailures []string
	fail := func(format string, args ...any) {
		failures.Add(1)
		failMu.Lock()
		if len(firstFailures) < 5 {
			firstFailures = append(firstFailures, fmt.Sprintf(format, args...))
		}
		failMu.Unlock()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	fetch := func(path string, ok ...int) []byte {
		requests.Add(1)
		resp, err := client.Get(base + path)
		if err != nil {
			fail("GET %s: %v", path, err)
			return nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			fail("GET %s: reading: %v", path, err)
		}
		if bytes.Contains(b, []byte(secretMark)) {
			fail("GET %s served the secret", path)
		}
		if resp.StatusCode != http.StatusOK && (len(ok) == 0 || resp.StatusCode != ok[0]) {
			fail("GET %s: status %d: %.200s", path, resp.StatusCode, b)
		}
		return b
	}
	var peakRSS atomic.Int64
	clientsCtx, stopClients := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	loop := func(f func()) {
		clients.Go(func() {
			for clientsCtx.Err() == nil {
				f()
			}
		})
	}
	loop(func() { fetch("/metrics") })
	loop(func() { fetch("/metrics") })
	loop(func() { fetch("/healthz") })
	loop(func() {
		var idx []CapturedFile
		if err := json.Unmarshal(fetch("/snapshots/index.json"), &idx); err != nil {
			fail("index.json: %v", err)
		}
		fetch("/snapshots/")
		for _, f := range idx {
			if b := fetch("/snapshots/"+f.Name, http.StatusNotFound); int64(len(b)) == f.Size && len(b) > 0 {
				downloads.Add(1)
			}
		}
	})
	loop(func() {
		if r := vmRSS(); r > peakRSS.Load() {
			peakRSS.Store(r)
		}
		time.Sleep(20 * time.Millisecond)
	})

	// The writer: one file per step, the oldest removed past soakWindow,
	// each kept until two rescans have completed since it was written, so
	// every bad one is seen (and must be counted) exactly once.
	scans := func() uint64 {
		snaps.mu.Lock()
		defer snaps.mu.Unlock()
		return snaps.scans
	}
	type written struct {
		name, kind string
		used       int
	}
	var live []written
	bad := map[string]int{} // kind → files written
	notRegular, goods, tampered := 0, 0, 0
	deadline := time.Now().Add(duration)
	for i := 0; time.Now().Before(deadline) && !t.Failed(); i++ {
		k := kinds[i%len(kinds)]
		w := written{kind: k.name}
		switch {
		case k.good:
			w.used = 1 + i%3
			w.name = fmt.Sprintf("good-%d__m.pickle", i)
			ooms := 0
			if k.name == "good-oom" {
				ooms = 1 + i%2
			}
			soakWrite(t, dir, w.name, genSnapshot(0, w.used, ooms))
			lastGood = w.name
			goods++
		default:
			w.name = fmt.Sprintf("bad-%s-%d.pickle", k.name, i)
			k.make(dir, w.name, i)
			bad[k.name]++
			if k.reason == ReasonNotRegular {
				notRegular++
			}
		}
		live = append(live, w)
		if len(live) > soakWindow {
			if err := os.Remove(filepath.Join(dir, live[0].name)); err != nil {
				t.Error(err)
			}
			live = live[1:]
		}
		if i%25 == 0 { // a capture replaced by a link to the secret
			if files := capture.Files(); len(files) > 0 {
				p := filepath.Join(capDir, files[0].Name)
				if os.Remove(p) == nil {
					symlink(t, secret, p)
					tampered++
				}
			}
		}
		for s0 := scans(); scans() < s0+2 && !t.Failed(); {
			time.Sleep(time.Millisecond)
		}
	}
	// Two more rescans after the last change, then the final state.
	for s0 := scans(); scans() < s0+2; {
		time.Sleep(time.Millisecond)
	}
	stopClients()
	clients.Wait()
	fams := scrape(t, base)

	nbad := 0
	for _, n := range bad {
		nbad += n
	}
	t.Logf("soak %v: %d files (%d good, %d bad: %v), %d captures tampered, %d requests (%d capture downloads), peak VmRSS %.1f MiB (bound %d MiB)",
		duration, goods+nbad, goods, nbad, bad, tampered, requests.Load(), downloads.Load(), float64(peakRSS.Load())/(1<<20), rssBound>>20)
	if f := failures.Load(); f > 0 {
		t.Errorf("%d of %d requests failed; first: %v", f, requests.Load(), firstFailures)
	}
	if requests.Load() < 10 || downloads.Load() == 0 {
		t.Errorf("only %d requests and %d capture downloads: the clients did not run", requests.Load(), downloads.Load())
	}
	if p := peakRSS.Load(); p > rssBound {
		t.Errorf("peak VmRSS %d MiB, over the bound %d MiB", p>>20, rssBound>>20)
	}
	if v, _ := value(fams, "gpufrag_source_up", "source", "snapshots"); v != 1 {
		t.Errorf("source_up = %v at the end", v)
	}
	total := 0.0
	for _, r := range snapshotReasons {
		v, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", r)
		total += v
	}
	if total != float64(nbad) {
		t.Errorf("snapshot_errors_total sums to %v over the reasons, want one per bad file: %d", total, nbad)
	}
	if v, _ := value(fams, "gpufrag_snapshot_errors_total", "reason", ReasonNotRegular); v != float64(notRegular) {
		t.Errorf("errors{not_regular} = %v, want %d (pipes and links)", v, notRegular)
	}
	if v, _ := value(fams, "gpufrag_snapshots_analyzed_total"); v != float64(goods) {
		t.Errorf("snapshots_analyzed_total = %v, want %d (each good file once)", v, goods)
	}
	for _, w := range live {
		inst := strings.TrimSuffix(w.name, "__m.pickle")
		got, ok := value(fams, "gpufrag_allocated_bytes", "instance", inst)
		switch {
		case w.used > 0 && (!ok || got != float64(w.used<<20)):
			t.Errorf("good file %s: allocated_bytes %v (%v), want %d", w.name, got, ok, w.used<<20)
		case w.used == 0 && ok:
			t.Errorf("bad file %s exported", w.name)
		}
	}
	liveGood := 0
	for _, w := range live {
		if w.used > 0 {
			liveGood++
		}
	}
	if n := len(fams["gpufrag_allocated_bytes"].GetMetric()); n != liveGood {
		t.Errorf("%d allocated_bytes series, want one per good file in the directory (%d): removed files linger", n, liveGood)
	}

	stopServer()
	client.CloseIdleConnections()
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= baseGoroutines+3 })
	if t.Failed() {
		t.Logf("logs:\n%.4000s", logs.String())
	}
}
