package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// SnapshotDirConfig configures a SnapshotDir. Zero fields take the defaults.
type SnapshotDirConfig struct {
	Dir string
	// Name is the source name (default "snapshots").
	Name string
	// Rescan is the interval between scans (default 10s).
	Rescan time.Duration
	// MaxFiles caps the snapshot files watched (default 256): files past it,
	// in name order, are ignored and counted once each.
	MaxFiles int
	// MaxFileBytes caps one file's size (default 256 MiB). Reading a
	// snapshot takes about 25 bytes of memory per file byte while it is
	// analysed, so this bounds a rescan's peak memory.
	MaxFileBytes int64
	// MaxInstances caps the distinct instance label values exported
	// (default 256); files that would add one more are skipped.
	MaxInstances int
	Clock        Clock        // nil: SystemClock
	Logger       *slog.Logger // nil: no logs
	// Registerer receives the directory's own metrics
	// (gpufrag_snapshot_errors_total, gpufrag_snapshots_analyzed_total,
	// gpufrag_snapshot_last_analyzed_timestamp_seconds,
	// gpufrag_snapshot_files); nil: not registered.
	Registerer prometheus.Registerer
	// Capture, when set, keeps a copy of each new file version whose trace
	// holds an out-of-memory entry.
	Capture *Capturer
}

// Snapshot-file error reasons (label reason of gpufrag_snapshot_errors_total).
const (
	ReasonIO              = "io"               // stat or read failed
	ReasonTooLarge        = "too_large"        // over MaxFileBytes
	ReasonForbidden       = "forbidden"        // a pickle opcode that could run code
	ReasonTruncated       = "truncated"        // the pickle ends early
	ReasonLength          = "length"           // a declared length past the input
	ReasonLimit           = "limit"            // a decoder or item limit
	ReasonDecode          = "decode"           // any other malformed pickle
	ReasonField           = "field"            // a snapshot field of the wrong type
	ReasonAnalysis        = "analysis"         // the analysis refused the snapshot
	ReasonLabels          = "labels"           // unreadable NAME.labels.json
	ReasonMaxFiles        = "max_files"        // past MaxFiles
	ReasonMaxInstances    = "max_instances"    // past MaxInstances
	ReasonDuplicateLabels = "duplicate_labels" // another file already exports the labels
)

var snapshotReasons = []string{ReasonIO, ReasonTooLarge, ReasonForbidden, ReasonTruncated, ReasonLength,
	ReasonLimit, ReasonDecode, ReasonField, ReasonAnalysis, ReasonLabels, ReasonMaxFiles,
	ReasonMaxInstances, ReasonDuplicateLabels}

// errReason classifies a reader error.
func errReason(err error) string {
	switch {
	case errors.Is(err, pickle.ErrForbidden):
		return ReasonForbidden
	case errors.Is(err, pickle.ErrTruncated):
		return ReasonTruncated
	case errors.Is(err, pickle.ErrLength):
		return ReasonLength
	case errors.Is(err, snapshot.ErrLimit), errors.Is(err, pickle.ErrLimit):
		return ReasonLimit
	case errors.Is(err, snapshot.ErrField):
		return ReasonField
	case errors.Is(err, snapshot.ErrDecode):
		return ReasonDecode
	}
	return ReasonAnalysis
}

// SnapshotDir is a Source over a directory of PyTorch memory snapshot
// pickles (*.pickle, *.pkl; names starting with '.' are skipped). Rescan
// lists the directory; a file that is new, or whose size or modification
// time (or its sidecar's) changed, is read with package snapshot and
// diagnosed with analysis.Analyze (diagnosis only, no replay, as `gpufrag
// analyze --no-replay`). Each device with segments or oom entries becomes
// one sample with pool "pytorch"; its OOM counter is the number of oom
// entries in the device's trace (it can go down when a file is replaced,
// which Prometheus treats as a counter reset).
//
// Labels come from the sidecar NAME.labels.json next to NAME.pickle when it
// exists ({"instance": "...", "model": "...", "gpu": "..."}; unknown keys are
// an error), else from the file name <instance>__<model>[__<anything>].pickle,
// else instance is the file stem. gpu is the sidecar's when the file holds
// one device with memory, else the device index in the file.
//
// A file that cannot be read or analysed is logged once per version (size
// and modification time) with the reader's error, counted in
// gpufrag_snapshot_errors_total{reason}, and skipped; the other files keep
// being exported. Collect only copies the samples of the last rescan, so a
// scrape costs no analysis.
type SnapshotDir struct {
	cfg      SnapshotDirConfig
	errs     *prometheus.CounterVec
	analyzed prometheus.Counter
	lastTS   prometheus.Gauge
	watched  prometheus.Gauge

	scanMu  sync.Mutex // one rescan at a time; guards files and ignored
	files   map[string]*snapFile
	ignored map[string]bool // over MaxFiles, already counted
	dirErr  string          // last directory error logged

	mu      sync.Mutex
	samples []Sample
	err     error
	scans   uint64 // completed rescans: the samples' version
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ok    bool // the file exists
}

type snapFile struct {
	stamp, side fileStamp
	samples     []Sample
	ooms        int64
	lastOOM     int64 // time_us of the last oom entry
	err         error
	// skipped is the reason a readable file was left out when samples were
	// assembled (max_instances, duplicate_labels), already counted.
	skipped string
}

// NewSnapshotDir returns the source; it does not scan yet (Run or Rescan do).
func NewSnapshotDir(cfg SnapshotDirConfig) (*SnapshotDir, error) {
	if cfg.Dir == "" {
		return nil, errors.New("exporter: snapshot directory is empty")
	}
	if cfg.Name == "" {
		cfg.Name = "snapshots"
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = 10 * time.Second
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = 256
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = 256 << 20
	}
	if cfg.MaxInstances == 0 {
		cfg.MaxInstances = 256
	}
	if cfg.Rescan < 0 || cfg.MaxFiles < 0 || cfg.MaxFileBytes < 0 || cfg.MaxInstances < 0 {
		return nil, fmt.Errorf("exporter: snapshot directory limits must be positive (rescan %v, files %d, bytes %d, instances %d)",
			cfg.Rescan, cfg.MaxFiles, cfg.MaxFileBytes, cfg.MaxInstances)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &SnapshotDir{
		cfg: cfg,
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "snapshot_errors_total",
			Help: "Snapshot files skipped, by reason (each file version counted once).",
		}, []string{"reason"}),
		analyzed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "snapshots_analyzed_total",
			Help: "Snapshot file versions read and analysed successfully.",
		}),
		lastTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "snapshot_last_analyzed_timestamp_seconds",
			Help: "Unix time of the last successful snapshot analysis (0: none yet).",
		}),
		watched: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "snapshot_files",
			Help: "Snapshot files watched in the snapshot directory (at most --max-files).",
		}),
		files:   make(map[string]*snapFile),
		ignored: make(map[string]bool),
		err:     errNotPolled,
	}
	for _, r := range snapshotReasons {
		d.errs.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{d.errs, d.analyzed, d.lastTS, d.watched} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("exporter: register snapshot metrics: %w", err)
			}
		}
	}
	return d, nil
}

// Name returns the source name.
func (d *SnapshotDir) Name() string { return d.cfg.Name }

// Collect returns the samples of the last rescan.
func (d *SnapshotDir) Collect() ([]Sample, error) {
	s, _, err := d.CollectVersioned()
	return s, err
}

// CollectVersioned is Collect with the rescan's number (VersionedSource).
func (d *SnapshotDir) CollectVersioned() ([]Sample, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, 0, d.err
	}
	return slices.Clone(d.samples), d.scans, nil
}

// versionState is CollectVersioned without the samples (versionPeeker).
func (d *SnapshotDir) versionState() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return 0, d.err
	}
	return d.scans, nil
}

// Run rescans at once and then on every tick of the clock until ctx ends.
func (d *SnapshotDir) Run(ctx context.Context) error {
	tick, stop := d.cfg.Clock.NewTicker(d.cfg.Rescan)
	defer stop()
	for {
		_ = d.Rescan(ctx) // errors are logged and exported
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}

func isSnapshotName(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".pickle") || strings.HasSuffix(name, ".pkl"))
}

func stem(name string) string { return strings.TrimSuffix(name, filepath.Ext(name)) }

func stampOf(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	if !info.Mode().IsRegular() {
		return fileStamp{}, fmt.Errorf("%s: not a regular file", path)
	}
	return fileStamp{info.Size(), info.ModTime(), true}, nil
}

// Rescan lists the directory, analyses new and changed files and publishes
// the samples for Collect. It returns the directory's error, if any (file
// errors are logged and counted, not returned).
func (d *SnapshotDir) Rescan(ctx context.Context) error {
	d.scanMu.Lock()
	defer d.scanMu.Unlock()
	entries, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		err = fmt.Errorf("exporter: snapshot directory: %w", err)
		if msg := err.Error(); msg != d.dirErr {
			d.dirErr = msg
			d.cfg.Logger.Error("cannot list snapshot directory", "dir", d.cfg.Dir, "err", msg)
		}
		d.mu.Lock()
		d.samples, d.err = nil, err
		d.mu.Unlock()
		return err
	}
	if d.dirErr != "" {
		d.cfg.Logger.Info("snapshot directory readable again", "dir", d.cfg.Dir)
		d.dirErr = ""
	}
	var names []string
	for _, e := range entries { // sorted by name
		if isSnapshotName(e.Name()) && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) > d.cfg.MaxFiles {
		for _, n := range names[d.cfg.MaxFiles:] {
			if !d.ignored[n] {
				d.ignored[n] = true
				d.errs.WithLabelValues(ReasonMaxFiles).Inc()
				d.cfg.Logger.Warn("snapshot file ignored: over --max-files", "file", n, "max_files", d.cfg.MaxFiles)
			}
		}
		names = names[:d.cfg.MaxFiles]
	}
	keep := make(map[string]bool, len(names))
	for _, n := range names {
		keep[n] = true
		delete(d.ignored, n)
	}
	for n := range d.ignored {
		if _, err := os.Lstat(filepath.Join(d.cfg.Dir, n)); err != nil {
			delete(d.ignored, n)
		}
	}
	for n := range d.files {
		if !keep[n] {
			delete(d.files, n)
		}
	}
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		d.refresh(n)
	}
	d.watched.Set(float64(len(d.files)))
	d.publish()
	return nil
}

// refresh re-reads name if it or its sidecar changed since the last scan.
func (d *SnapshotDir) refresh(name string) {
	path := filepath.Join(d.cfg.Dir, name)
	sidePath := filepath.Join(d.cfg.Dir, stem(name)+".labels.json")
	prev := d.files[name]
	stamp, err := stampOf(path)
	side, serr := stampOf(sidePath)
	if serr != nil && !errors.Is(serr, fs.ErrNotExist) {
		side = fileStamp{size: -1, ok: true} // unreadable sidecar: an error below
	}
	if prev != nil && err == nil && prev.stamp == stamp && prev.side == side {
		return
	}
	f := &snapFile{stamp: stamp, side: side}
	switch {
	case err != nil:
		if errors.Is(err, fs.ErrNotExist) { // removed since the listing
			delete(d.files, name)
			return
		}
		f.err = d.fail(name, ReasonIO, err)
	case stamp.size > d.cfg.MaxFileBytes:
		f.err = d.fail(name, ReasonTooLarge, fmt.Errorf("%s: %d bytes, over --max-file-bytes %d", name, stamp.size, d.cfg.MaxFileBytes))
	default:
		labels, lerr := d.labels(name, sidePath, side)
		if lerr != nil {
			f.err = d.fail(name, ReasonLabels, lerr)
			break
		}
		data, reason, rerr := d.read(path)
		if rerr != nil {
			f.err = d.fail(name, reason, rerr)
			break
		}
		if aerr := d.analyse(name, data, labels, f); aerr != nil {
			f.err = d.fail(name, errReason(aerr), aerr)
			break
		}
		d.analyzed.Inc()
		d.lastTS.Set(float64(d.cfg.Clock.Now().UnixNano()) / 1e9)
		if prev != nil && prev.err != nil {
			d.cfg.Logger.Info("snapshot file readable again", "file", name)
		}
		if f.ooms > 0 && d.cfg.Capture != nil && (prev == nil || prev.ooms != f.ooms || prev.lastOOM != f.lastOOM) {
			_, _ = d.cfg.Capture.Capture(labels.Instance, labels.Model, data) // logged and counted there
		}
	}
	d.files[name] = f
}

// fail logs and counts one file version's error and returns it.
func (d *SnapshotDir) fail(name, reason string, err error) error {
	d.errs.WithLabelValues(reason).Inc()
	d.cfg.Logger.Warn("snapshot file skipped", "file", name, "reason", reason, "err", err.Error())
	return err
}

// read reads path whole, up to MaxFileBytes.
func (d *SnapshotDir) read(path string) ([]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ReasonIO, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, d.cfg.MaxFileBytes+1))
	if err != nil {
		return nil, ReasonIO, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > d.cfg.MaxFileBytes {
		return nil, ReasonTooLarge, fmt.Errorf("%s: grew past --max-file-bytes %d", path, d.cfg.MaxFileBytes)
	}
	return data, "", nil
}

// sidecar is the NAME.labels.json document.
type sidecar struct {
	Instance string `json:"instance"`
	Model    string `json:"model"`
	GPU      string `json:"gpu"`
}

const maxSidecarBytes = 64 << 10

// labels resolves a file's instance, model and gpu (see SnapshotDir).
func (d *SnapshotDir) labels(name, sidePath string, side fileStamp) (sidecar, error) {
	if side.ok {
		l, err := readSidecar(sidePath)
		if err != nil {
			return sidecar{}, err
		}
		if l.Instance == "" {
			l.Instance = stem(name)
		}
		return l, nil
	}
	return labelsFromName(name), nil
}

func readSidecar(path string) (sidecar, error) {
	f, err := os.Open(path)
	if err != nil {
		return sidecar{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSidecarBytes+1))
	if err != nil {
		return sidecar{}, fmt.Errorf("%s: %w", path, err)
	}
	return parseSidecar(path, data)
}

// parseSidecar decodes a labels file strictly: one JSON object of strings
// with the keys instance, model and gpu, valid UTF-8.
func parseSidecar(path string, data []byte) (sidecar, error) {
	if len(data) > maxSidecarBytes {
		return sidecar{}, fmt.Errorf("%s: longer than %d bytes", path, maxSidecarBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l sidecar
	if err := dec.Decode(&l); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return sidecar{}, fmt.Errorf("%s: byte offset %d: %w", path, se.Offset, err)
		case errors.As(err, &te):
			return sidecar{}, fmt.Errorf("%s: byte offset %d: field %q: %w", path, te.Offset, te.Field, err)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return sidecar{}, fmt.Errorf("%s: byte offset %d: unexpected end of the JSON object: %w", path, len(data), err)
		}
		return sidecar{}, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return sidecar{}, fmt.Errorf("%s: byte offset %d: data after the JSON object", path, dec.InputOffset())
	}
	for field, v := range map[string]string{"instance": l.Instance, "model": l.Model, "gpu": l.GPU} {
		if err := (Labels{Instance: v}).valid(); err != nil {
			return sidecar{}, fmt.Errorf("%s: field %q: %w", path, field, err)
		}
	}
	return l, nil
}

// labelsFromName reads <instance>__<model>[__<anything>].pickle; otherwise
// instance is the stem.
func labelsFromName(name string) sidecar {
	s := strings.ToValidUTF8(stem(name), "_")
	parts := strings.SplitN(s, "__", 3)
	if len(parts) >= 2 && parts[0] != "" && parts[1] != "" {
		return sidecar{Instance: parts[0], Model: parts[1]}
	}
	return sidecar{Instance: s}
}

// readOpts: the diagnosis needs no trace stacks.
var snapshotReadOpts = snapshot.Options{SkipTraceFrames: true}

// analyse reads and diagnoses one file into f.
func (d *SnapshotDir) analyse(name string, data []byte, l sidecar, f *snapFile) error {
	opts := snapshotReadOpts
	opts.Pickle.MaxInputBytes = d.cfg.MaxFileBytes
	s, err := snapshot.ReadOptions(bytes.NewReader(data), name, &opts)
	if err != nil {
		return err
	}
	rep, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	type dev struct {
		d    *analysis.Device
		ooms int64
	}
	var devs []dev
	for i := range rep.Devices {
		dv := &rep.Devices[i]
		var ooms int64
		if dv.Device >= 0 && dv.Device < len(s.DeviceTraces) {
			for _, e := range s.DeviceTraces[dv.Device] {
				if e.Action == "oom" {
					ooms++
					f.lastOOM = max(f.lastOOM, e.TimeUS)
				}
			}
		}
		f.ooms += ooms
		if dv.Segments > 0 || ooms > 0 {
			devs = append(devs, dev{dv, ooms})
		}
	}
	for _, dv := range devs {
		gpu := strconv.Itoa(dv.d.Device)
		if l.GPU != "" && len(devs) == 1 {
			gpu = l.GPU
		}
		f.samples = append(f.samples, Sample{
			Labels: Labels{GPU: gpu, Instance: l.Instance, Model: l.Model, Pool: "pytorch"},
			Memory: &Memory{Metrics: dv.d.Metrics, OOMs: dv.ooms},
		})
	}
	return nil
}

// publish assembles the samples of every good file, in name order,
// skipping files that would repeat a label set or pass MaxInstances.
func (d *SnapshotDir) publish() {
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Sample
	used := make(map[Labels]string)
	instances := make(map[string]bool)
	for _, n := range names {
		f := d.files[n]
		if f.err != nil {
			continue
		}
		reason, detail := "", ""
		var newInst []string
		for _, s := range f.samples {
			if other, ok := used[s.Labels]; ok {
				reason, detail = ReasonDuplicateLabels, "labels already exported from "+other
				break
			}
			if !instances[s.Labels.Instance] && !slices.Contains(newInst, s.Labels.Instance) {
				newInst = append(newInst, s.Labels.Instance)
			}
		}
		if reason == "" && len(instances)+len(newInst) > d.cfg.MaxInstances {
			reason, detail = ReasonMaxInstances, fmt.Sprintf("over --max-instances %d", d.cfg.MaxInstances)
		}
		if reason != "" {
			if f.skipped != reason {
				f.skipped = reason
				d.errs.WithLabelValues(reason).Inc()
				d.cfg.Logger.Warn("snapshot file skipped", "file", n, "reason", reason, "err", detail)
			}
			continue
		}
		f.skipped = ""
		for _, s := range f.samples {
			used[s.Labels] = n
			instances[s.Labels.Instance] = true
		}
		out = append(out, f.samples...)
	}
	d.mu.Lock()
	d.samples, d.err = out, nil
	d.scans++
	d.mu.Unlock()
}
