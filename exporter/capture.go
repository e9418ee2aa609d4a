package exporter

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CaptureConfig configures a Capturer.
type CaptureConfig struct {
	Dir string
	// MaxFiles and MaxBytes bound the captured files kept (defaults 20 and
	// 2 GiB). The oldest go first; the newest is never deleted, even when
	// it alone passes MaxBytes.
	MaxFiles int
	MaxBytes int64
	Clock    Clock        // nil: SystemClock
	Logger   *slog.Logger // nil: no logs
	// Registerer receives gpufrag_oom_snapshots_captured_total and
	// gpufrag_oom_snapshot_capture_errors_total (nil: not registered).
	Registerer prometheus.Registerer
}

// CapturedFile is one file of the capture index.
type CapturedFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size_bytes"`
	ModTime time.Time `json:"time"`
}

// Capturer keeps copies of snapshot files taken at an out-of-memory error
// in a directory, under a retention limit, and serves them read-only over
// HTTP (ServeHTTP, mounted at /snapshots/). File names are
//
//	<instance>-<model>-<UTC time, 20060102T150405Z>-<seq>.pickle
//
// with every byte of instance and model outside [A-Za-z0-9._-] (and a
// leading '.') replaced by '_'; the time and sequence are the last two
// '-'-separated parts. Each file is written atomically: a temporary file in the same
// directory, written, fsynced, renamed to its final name, then the
// directory fsynced, so a reader never sees a partial file under a final
// name. Files already in the directory that match the name pattern are
// indexed at start (oldest first by name time and sequence), so retention
// survives restarts; leftover temporary files are removed.
type Capturer struct {
	cfg      CaptureConfig
	captured *prometheus.CounterVec
	errs     prometheus.Counter

	mu    sync.Mutex
	files []CapturedFile // oldest first
	bytes int64
	seq   int
}

const captureTempPrefix = ".capture-"

// NewCapturer creates cfg.Dir if needed and indexes the captures in it.
func NewCapturer(cfg CaptureConfig) (*Capturer, error) {
	if cfg.Dir == "" {
		return nil, errors.New("exporter: capture directory is empty")
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = 20
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 2 << 30
	}
	if cfg.MaxFiles < 1 || cfg.MaxBytes < 1 {
		return nil, fmt.Errorf("exporter: capture limits must be positive (files %d, bytes %d)", cfg.MaxFiles, cfg.MaxBytes)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Capturer{
		cfg: cfg,
		captured: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "oom_snapshots_captured_total",
			Help: "Snapshot files taken at an out-of-memory error copied to the capture directory.",
		}, []string{"instance", "model"}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "oom_snapshot_capture_errors_total",
			Help: "Failed captures of out-of-memory snapshot files (write, sync, rename or retention).",
		}),
	}
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{c.captured, c.errs} {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, fmt.Errorf("exporter: register capture metrics: %w", err)
			}
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("exporter: capture directory: %w", err)
	}
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("exporter: capture directory: %w", err)
	}
	type indexed struct {
		f   CapturedFile
		t   string
		seq int
	}
	var found []indexed
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, captureTempPrefix) {
			_ = os.Remove(filepath.Join(cfg.Dir, name)) // an interrupted capture
			continue
		}
		t, seq, ok := parseCaptureName(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		found = append(found, indexed{CapturedFile{name, info.Size(), info.ModTime()}, t, seq})
		c.seq = max(c.seq, seq)
	}
	slices.SortFunc(found, func(a, b indexed) int {
		return cmp.Or(strings.Compare(a.t, b.t), cmp.Compare(a.seq, b.seq), strings.Compare(a.f.Name, b.f.Name))
	})
	for _, f := range found {
		c.files = append(c.files, f.f)
		c.bytes += f.f.Size
	}
	c.mu.Lock()
	c.enforceLocked()
	c.mu.Unlock()
	return c, nil
}

const captureTimeLayout = "20060102T150405Z"

// parseCaptureName returns the time and sequence of a capture file name.
func parseCaptureName(name string) (string, int, bool) {
	stem, ok := strings.CutSuffix(name, ".pickle")
	if !ok {
		return "", 0, false
	}
	parts := strings.Split(stem, "-")
	if len(parts) < 4 {
		return "", 0, false
	}
	seq, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || seq < 0 {
		return "", 0, false
	}
	t := parts[len(parts)-2]
	if _, err := time.Parse(captureTimeLayout, t); err != nil {
		return "", 0, false
	}
	for _, r := range stem {
		if !safeNameRune(r) {
			return "", 0, false
		}
	}
	return t, seq, true
}

func safeNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// safeName maps s to a file-name part: bytes outside [A-Za-z0-9._-] and a
// leading '.' become '_'.
func safeName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !safeNameRune(rune(c)) || i == 0 && c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Capture writes data as a new capture for instance and model, applies
// retention, and returns the file name.
func (c *Capturer) Capture(instance, model string, data []byte) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	name := fmt.Sprintf("%s-%s-%s-%d.pickle", safeName(instance), safeName(model),
		c.cfg.Clock.Now().UTC().Format(captureTimeLayout), c.seq)
	if err := writeAtomic(c.cfg.Dir, name, data); err != nil {
		c.errs.Inc()
		c.cfg.Logger.Error("oom snapshot capture failed", "file", name, "err", err.Error())
		return "", err
	}
	c.files = append(c.files, CapturedFile{name, int64(len(data)), c.cfg.Clock.Now()})
	c.bytes += int64(len(data))
	c.captured.WithLabelValues(instance, model).Inc()
	c.cfg.Logger.Info("oom snapshot captured", "file", name, "instance", instance, "model", model, "bytes", len(data))
	c.enforceLocked()
	return name, nil
}

// enforceLocked deletes the oldest captures until the limits hold, never
// the newest.
func (c *Capturer) enforceLocked() {
	for len(c.files) > 1 && (len(c.files) > c.cfg.MaxFiles || c.bytes > c.cfg.MaxBytes) {
		old := c.files[0]
		if err := os.Remove(filepath.Join(c.cfg.Dir, old.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.errs.Inc()
			c.cfg.Logger.Error("oom snapshot retention: cannot delete", "file", old.Name, "err", err.Error())
		}
		c.files = c.files[1:]
		c.bytes -= old.Size
	}
}

// writeAtomic writes data to dir/name through a synced temporary file and a
// rename, then syncs dir.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, captureTempPrefix+"*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename to %s: %w", name, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// Files returns the capture index, oldest first.
func (c *Capturer) Files() []CapturedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.files)
}

var listingTmpl = template.Must(template.New("l").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpufrag OOM snapshots</title></head><body>
<h1>OOM snapshots</h1>
<table><tr><th>file</th><th>bytes</th><th>captured (UTC)</th></tr>
{{range .}}<tr><td><a href="{{.Name}}">{{.Name}}</a></td><td>{{.Size}}</td><td>{{.ModTime.UTC.Format "2006-01-02 15:04:05"}}</td></tr>
{{end}}</table></body></html>
`))

// ServeHTTP serves the capture index, with the /snapshots/ prefix already
// stripped: "" lists the files (HTML, newest first), "index.json" lists them
// as JSON, and a capture's name downloads it. Any other path is 404: only
// names in the index are opened, so no path can leave the directory.
func (c *Capturer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	files := c.Files()
	slices.Reverse(files)
	switch r.URL.Path {
	case "":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = listingTmpl.Execute(w, files)
		return
	case "index.json":
		w.Header().Set("Content-Type", "application/json")
		if files == nil {
			files = []CapturedFile{}
		}
		_ = json.NewEncoder(w).Encode(files)
		return
	}
	i := slices.IndexFunc(files, func(f CapturedFile) bool { return f.Name == r.URL.Path })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(filepath.Join(c.cfg.Dir, files[i].Name))
	if err != nil {
		http.NotFound(w, r) // deleted by retention since
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+files[i].Name+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, files[i].Name, info.ModTime(), f)
}
