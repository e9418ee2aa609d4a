package exporter

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
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
	// MaxSeries bounds the label sets (instance, model) of
	// gpufrag_oom_snapshots_captured_total (default 256): past it, the set
	// captured least recently is deleted, so that pods coming and going
	// under new names do not grow the exporter's series without end.
	MaxSeries int
	Clock     Clock        // nil: SystemClock
	Logger    *slog.Logger // nil: no logs
	// Registerer receives gpufrag_oom_snapshots_captured_total and
	// gpufrag_oom_snapshot_capture_errors_total (nil: not registered).
	Registerer prometheus.Registerer
}

// CapturedFile is one file of the capture index.
type CapturedFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size_bytes"`
	ModTime time.Time `json:"time"`
	// id is the file's identity (device, inode) and size when it was
	// written or indexed: only that very file is ever served.
	id fileStat
	// sum is the SHA-256 of its content once known (summed): when it was
	// written, or when a capture of the same size was compared with it.
	sum    [sha256.Size]byte
	summed bool
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
//
// The directory is opened once, by NewCapturer; every file is created,
// renamed, removed and opened relative to that descriptor, and a download
// opens only a regular file (never following a link, never blocking on a
// pipe) that is still the very file the Capturer wrote or indexed (same
// device, inode and size); anything else is 404 and logged.
type Capturer struct {
	cfg      CaptureConfig
	dir      *dirHandle
	captured *prometheus.CounterVec
	errs     prometheus.Counter

	mu    sync.Mutex
	files []CapturedFile // oldest first
	bytes int64
	seq   int
	// series: the sequence number of the last capture of each label set
	// of captured (at most cfg.MaxSeries).
	series map[[2]string]int
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
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = 256
	}
	if cfg.MaxFiles < 1 || cfg.MaxBytes < 1 || cfg.MaxSeries < 1 {
		return nil, fmt.Errorf("exporter: capture limits must be positive (files %d, bytes %d, series %d)", cfg.MaxFiles, cfg.MaxBytes, cfg.MaxSeries)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Capturer{
		cfg:    cfg,
		series: make(map[[2]string]int),
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
	dir, err := openDirHandle(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("exporter: capture directory: %w", err)
	}
	c.dir = dir
	entries, err := dir.list()
	if err != nil {
		_ = dir.close()
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
			_ = dir.remove(name) // an interrupted capture
			continue
		}
		t, seq, ok := parseCaptureName(name)
		if !ok {
			continue
		}
		st, err := dir.lstat(name)
		if err != nil || !st.mode.IsRegular() {
			continue // never indexed, so never served nor deleted
		}
		found = append(found, indexed{CapturedFile{Name: name, Size: st.size, ModTime: time.Unix(0, st.mtimeNs), id: st}, t, seq})
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
	if len(name) > maxNameBytes {
		return "", 0, false
	}
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

// maxNamePart bounds the instance and model parts of a capture name: two
// of them, the time (16 bytes), the sequence (up to 20) and the separators
// and suffix (10) stay under NAME_MAX (255 bytes) whatever the labels.
const maxNamePart = 100

// safeName maps s to a file-name part of at most maxNamePart bytes: bytes
// outside [A-Za-z0-9._-] and a leading '.' become '_'.
func safeName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s[:min(len(s), maxNamePart)])
	for i, c := range b {
		if !safeNameRune(rune(c)) || i == 0 && c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Capture writes data as a new capture for instance and model, applies
// retention, and returns the file name. Data that a capture in the index
// already holds (same size and SHA-256, the captures found at start
// included) is not written again: Capture returns that capture's name. A
// restarted exporter sees its snapshot directory's files as new, so a
// crash-looping process captured the same oom snapshot at every restart and
// pushed the real captures out of MaxFiles.
func (c *Capturer) Capture(instance, model string, data []byte) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := sha256.Sum256(data)
	if name, ok := c.capturedLocked(int64(len(data)), sum); ok {
		c.cfg.Logger.Info("oom snapshot already captured", "file", name, "instance", instance, "model", model, "bytes", len(data))
		return name, nil
	}
	c.seq++
	name := fmt.Sprintf("%s-%s-%s-%d.pickle", safeName(instance), safeName(model),
		c.cfg.Clock.Now().UTC().Format(captureTimeLayout), c.seq)
	id, err := writeAtomic(c.dir, name, data)
	if err != nil {
		c.errs.Inc()
		c.cfg.Logger.Error("oom snapshot capture failed", "file", name, "err", err.Error())
		return "", err
	}
	c.files = append(c.files, CapturedFile{Name: name, Size: int64(len(data)), ModTime: c.cfg.Clock.Now(), id: id, sum: sum, summed: true})
	c.bytes += int64(len(data))
	c.countLocked(instance, model)
	c.cfg.Logger.Info("oom snapshot captured", "file", name, "instance", instance, "model", model, "bytes", len(data))
	c.enforceLocked()
	return name, nil
}

// countLocked counts a capture for instance and model in captured, and
// deletes the series of the label set captured least recently when there
// are more than MaxSeries.
func (c *Capturer) countLocked(instance, model string) {
	c.captured.WithLabelValues(instance, model).Inc()
	c.series[[2]string{instance, model}] = c.seq
	if len(c.series) <= c.cfg.MaxSeries {
		return
	}
	var oldest [2]string
	seq := -1
	for k, s := range c.series {
		if seq < 0 || s < seq {
			oldest, seq = k, s
		}
	}
	delete(c.series, oldest)
	c.captured.DeleteLabelValues(oldest[0], oldest[1])
}

// capturedLocked returns the name of the capture in the index whose
// content has size bytes and SHA-256 sum. A capture found at start is
// hashed when a capture of its size first comes (once: the sum is kept),
// and only while it is still the very file indexed; one that cannot be
// read is taken as different.
func (c *Capturer) capturedLocked(size int64, sum [sha256.Size]byte) (string, bool) {
	for i := range c.files {
		f := &c.files[i]
		if f.Size != size {
			continue
		}
		if !f.summed {
			got, err := c.hashLocked(f)
			if err != nil {
				c.cfg.Logger.Warn("oom snapshot capture: cannot compare with an earlier capture", "file", f.Name, "err", err.Error())
				continue
			}
			f.sum, f.summed = got, true
		}
		if f.sum == sum {
			return f.Name, true
		}
	}
	return "", false
}

// hashLocked returns the SHA-256 of capture f, read from the capture
// directory if it is still the file indexed (same device, inode and size).
func (c *Capturer) hashLocked(f *CapturedFile) ([sha256.Size]byte, error) {
	file, st, err := c.dir.open(f.Name)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer file.Close()
	if st.size != f.id.size || st.dev != f.id.dev || st.ino != f.id.ino {
		return [sha256.Size]byte{}, fmt.Errorf("%s: replaced since it was indexed", f.Name)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(file, 0, f.id.size)); err != nil {
		return [sha256.Size]byte{}, err
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// enforceLocked deletes the oldest captures until the limits hold, never
// the newest.
func (c *Capturer) enforceLocked() {
	for len(c.files) > 1 && (len(c.files) > c.cfg.MaxFiles || c.bytes > c.cfg.MaxBytes) {
		old := c.files[0]
		if err := c.dir.remove(old.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.errs.Inc()
			c.cfg.Logger.Error("oom snapshot retention: cannot delete", "file", old.Name, "err", err.Error())
		}
		c.files = c.files[1:]
		c.bytes -= old.Size
	}
}

// writeAtomic writes data to dir/name through a synced temporary file and a
// rename, then syncs dir; it returns the identity of the file written.
func writeAtomic(dir *dirHandle, name string, data []byte) (id fileStat, err error) {
	f, tmp, err := dir.createTemp(captureTempPrefix)
	if err != nil {
		return fileStat{}, fmt.Errorf("create temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = dir.remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fileStat{}, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fileStat{}, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if id, err = dir.lstat(tmp); err != nil {
		return fileStat{}, err
	}
	if err = f.Close(); err != nil {
		return fileStat{}, fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = dir.rename(tmp, name); err != nil {
		return fileStat{}, fmt.Errorf("rename to %s: %w", name, err)
	}
	if err := dir.sync(); err != nil {
		return id, fmt.Errorf("sync directory: %w", err)
	}
	return id, nil
}

// Close releases the capture directory's descriptor; the Capturer must not
// be used after.
func (c *Capturer) Close() error { return c.dir.close() }

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
	if i < 0 || checkName(r.URL.Path) != nil {
		http.NotFound(w, r)
		return
	}
	want := files[i]
	f, st, err := c.dir.open(want.Name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // deleted by retention since: not worth a line
			c.cfg.Logger.Warn("oom snapshot not served", "file", want.Name, "err", err.Error())
		}
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	if st.size != want.id.size || st.dev != want.id.dev || st.ino != want.id.ino {
		c.cfg.Logger.Warn("oom snapshot not served: replaced since it was captured", "file", want.Name,
			"size", st.size, "captured_size", want.id.size)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+want.Name+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// At most the captured size, even if the file grew meanwhile.
	http.ServeContent(w, r, want.Name, want.ModTime, io.NewSectionReader(f, 0, want.id.size))
}

// IsCaptureName reports whether name has the form of a capture file name
// (INSTANCE-MODEL-YYYYMMDDTHHMMSSZ-SEQ.pickle).
func IsCaptureName(name string) bool {
	_, _, ok := parseCaptureName(name)
	return ok
}

// ErrSameDir: the snapshot and capture directories are the same directory
// or one is inside the other, so captures would be read as snapshots.
var ErrSameDir = errors.New("the snapshot and capture directories overlap")

// DistinctDirs checks that the snapshot directory and the capture
// directory are neither the same directory nor one inside the other, after
// resolving symbolic links and comparing device and inode (so the same
// directory reached through a bind mount is caught too). A directory that
// does not exist yet is compared by its path.
func DistinctDirs(snapshots, capture string) error {
	s, serr := os.Stat(snapshots)
	c, cerr := os.Stat(capture)
	switch {
	case serr == nil && cerr == nil && os.SameFile(s, c), cleanPath(snapshots) == cleanPath(capture):
		return fmt.Errorf("%w: %s and %s are the same directory", ErrSameDir, capture, snapshots)
	case inside(capture, snapshots, s, serr == nil):
		return fmt.Errorf("%w: %s is inside %s", ErrSameDir, capture, snapshots)
	case inside(snapshots, capture, c, cerr == nil):
		return fmt.Errorf("%w: %s is inside %s", ErrSameDir, snapshots, capture)
	}
	return nil
}

// cleanPath is path absolute, with links resolved where it exists.
func cleanPath(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	return filepath.Clean(path)
}

// inside reports whether a parent of dir is anc (by identity when haveInfo,
// else by path).
func inside(dir, anc string, ancInfo os.FileInfo, haveInfo bool) bool {
	p, ap := cleanPath(dir), cleanPath(anc)
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
		if p == ap {
			return true
		}
		if haveInfo {
			if info, err := os.Stat(p); err == nil && os.SameFile(info, ancInfo) {
				return true
			}
		}
	}
}
