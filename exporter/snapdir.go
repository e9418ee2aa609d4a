package exporter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// SnapshotDirConfig configures a SnapshotDir. Zero fields take the defaults.
type SnapshotDirConfig struct {
	Dir string
	// Name is the source name (default "snapshots").
	Name string
	// Rescan is the interval between scans (default 10s).
	Rescan time.Duration
	// MaxFiles caps the snapshot files watched (default 256): files past it,
	// in name order, are ignored and counted once each. Stale files (see
	// SnapshotDir) are not watched, so they never take a live file's place.
	MaxFiles int
	// MaxFileAge, when positive, retires as stale a file whose writer's
	// liveness is unknown (no probe lock file beside it) and that has not
	// been modified for longer (default 0: such a file is never stale).
	MaxFileAge time.Duration
	// MaxFileBytes caps one file's size (default 256 MiB). A snapshot's
	// segments and blocks take up to about 25 bytes of memory per file byte
	// while it is analysed (its trace streams: a history-dominated file
	// takes far less), and files are analysed one at a time, so this bounds
	// a rescan's peak memory.
	MaxFileBytes int64
	// MaxInstances caps the distinct instance label values exported
	// (default 256); files that would add one more are skipped.
	MaxInstances int
	// StuckAfter is how long a rescan may go without finishing a file (or
	// listing the directory) before the source is reported down, with the
	// file it is at, until it moves on (default DefaultStuckAfter). Files
	// are only ever opened when they are regular files, and never block on
	// open, so only a hung file system (a dead NFS or FUSE mount) can make
	// a rescan stall.
	StuckAfter time.Duration
	Clock      Clock        // nil: SystemClock
	Logger     *slog.Logger // nil: no logs
	// Registerer receives the directory's own metrics
	// (gpufrag_snapshot_errors_total, gpufrag_snapshots_analyzed_total,
	// gpufrag_snapshot_last_analyzed_timestamp_seconds,
	// gpufrag_snapshot_files, gpufrag_snapshot_stale_files); nil: not
	// registered.
	Registerer prometheus.Registerer
	// Capture, when set, keeps a copy of each new file version whose trace
	// holds an out-of-memory entry, unless a capture holds the same bytes
	// (Capturer.Capture). Its directory must not be Dir.
	Capture *Capturer
	// Capacity is the device memory of the GPUs whose snapshots are in Dir
	// (as `gpufrag analyze --capacity`). A snapshot does not record it, so
	// without it (0) gpufrag_device_free_bytes and
	// gpufrag_max_allocatable_bytes, which count memory outside the
	// allocator's segments, are not exported: unknown is absent, not zero.
	// A device whose reserved bytes exceed it is exported without them too.
	Capacity int64
}

// DefaultStuckAfter is SnapshotDirConfig.StuckAfter's default: a file of
// the default --max-file-bytes (256 MiB) is analysed in about 20 s on a
// 2-core machine (1 MiB: 0.07 s), so two minutes without progress is six
// times the slowest legitimate file.
const DefaultStuckAfter = 2 * time.Minute

// ErrStuck reports background work (a rescan, a poll) that has made no
// progress for longer than its deadline.
var ErrStuck = errors.New("exporter: stuck")

// SnapshotDir is a Source over a directory of PyTorch memory snapshot
// pickles (*.pickle, *.pkl; names starting with '.' are skipped). Rescan
// lists the directory; a file that is new, or whose size, modification
// time, type or identity (or its sidecar's) changed, is read with package
// snapshot and diagnosed with analysis.Analyze (diagnosis only, no replay,
// as `gpufrag analyze --no-replay`), one file at a time. Each device with
// segments or a counted OOM becomes one sample with pool "pytorch"; its OOM
// counter counts the oom entries of the device's trace, each once across
// the file's versions (by time_us, see oomCount), so it does not fall when
// old entries leave the history ring; it starts again from the file's
// entries when the exporter restarts or the file goes away and comes back.
//
// Labels come from the sidecar NAME.labels.json next to NAME.pickle when it
// exists ({"instance": "...", "model": "...", "gpu": "..."}; unknown keys are
// an error), else from the file name <instance>__<model>[__<anything>].pickle,
// else instance is the file stem. gpu is the sidecar's when the file holds
// one device with memory, else the device index in the file.
//
// A file whose writer is gone is stale: it is not watched (not analysed,
// not exported, not counted against MaxFiles) and is counted once, with
// reason stale, each time it becomes so. gpufrag-probe holds an exclusive
// flock on .STEM.lock beside STEM.pickle for its process's life, taken
// before its first write of STEM.pickle (probe/gpufrag_probe/_files.py),
// so each rescan tries a shared lock on it (dirHandle.testLock, opened as
// the snapshots are, never created, let go at once): held, the file is
// live; free, no process holds the name and the file is stale. Without a
// usable lock file (another writer, a lock file that is a link or a pipe)
// liveness is unknown and the file is exported as before, unless
// MaxFileAge retires it. A stale name that a process takes again (a
// restarted pod of the same name) is live at the next rescan. When files
// repeat a label set, a live one (lock held) is exported before the others,
// then name order decides. The exporter never deletes a snapshot directory's
// files: a stale file, its sidecar, its lock and its .gpufrag-oom copies
// can be removed by the operator.
//
// Every file is opened through the directory's descriptor, only if it is a
// regular file (a symbolic link, named pipe, socket, device or directory is
// refused unopened, reason not_regular), with O_NOFOLLOW|O_NONBLOCK, and
// checked again on the open descriptor. A file that cannot be read or
// analysed, including one whose reader or analysis panics (reason panic),
// is logged once per version (type, size, modification time and identity)
// with the reader's error, counted in gpufrag_snapshot_errors_total{reason},
// and skipped; the other files keep being exported. Collect only copies the
// samples of the last rescan, so a scrape costs no analysis; while a rescan
// is stuck (StuckAfter) Collect fails with ErrStuck and Stuck says why.
type SnapshotDir struct {
	cfg      SnapshotDirConfig
	errs     *prometheus.CounterVec
	analyzed prometheus.Counter
	lastTS   prometheus.Gauge
	watched  prometheus.Gauge
	staleN   prometheus.Gauge
	// diagnose analyses one decoded snapshot (diagnoseAt; tests
	// inject panicking or blocking ones).
	diagnose func(name string, s *snapshot.Snapshot) (*analysis.Report, error)

	scanMu  sync.Mutex // one rescan at a time; guards files, ignored and stale
	files   map[string]*snapFile
	ignored map[string]bool // over MaxFiles, already counted
	stale   map[string]bool // stale, already counted (while it stays stale)
	dirErr  string          // last directory error logged

	mu      sync.Mutex
	samples []Sample
	err     error
	scans   uint64 // completed rescans: the samples' version
	// The rescan in progress, for Stuck: when it last made progress and
	// the file it is at ("" while listing).
	scanning bool
	progress time.Time
	scanFile string
	hooks    []func() // called after each publish (Collector.Gatherer)
}

// fileStamp is what a rescan compares to decide whether a name changed:
// its metadata (not following links), or the error of reading it.
type fileStamp struct {
	stat fileStat
	err  string // stat error other than "does not exist"
	ok   bool   // the name exists
}

type snapFile struct {
	stamp, side fileStamp
	samples     []Sample
	ooms        int64 // oom entries in this version (all devices)
	lastOOM     int64 // time_us of the last oom entry
	// counts are the OOM counters by device, carried from version to
	// version (through versions that fail) while the name exists.
	counts map[int]oomCount
	err    error
	// skipped is the reason a readable file was left out when samples were
	// assembled (max_instances, duplicate_labels), already counted.
	skipped string
	// held: a process held the file's lock at the last rescan (publish
	// prefers such a file where label sets repeat).
	held bool
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
	if cfg.StuckAfter == 0 {
		cfg.StuckAfter = DefaultStuckAfter
	}
	if cfg.Capacity < 0 {
		return nil, fmt.Errorf("exporter: negative device capacity %d", cfg.Capacity)
	}
	if cfg.Rescan < 0 || cfg.MaxFiles < 0 || cfg.MaxFileBytes < 0 || cfg.MaxInstances < 0 || cfg.StuckAfter < 0 || cfg.MaxFileAge < 0 {
		return nil, fmt.Errorf("exporter: snapshot directory limits must be positive (rescan %v, files %d, bytes %d, instances %d, stuck after %v, file age %v)",
			cfg.Rescan, cfg.MaxFiles, cfg.MaxFileBytes, cfg.MaxInstances, cfg.StuckAfter, cfg.MaxFileAge)
	}
	if cfg.Capture != nil {
		if err := DistinctDirs(cfg.Dir, cfg.Capture.cfg.Dir); err != nil {
			return nil, err
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &SnapshotDir{
		cfg:      cfg,
		diagnose: diagnoseAt(cfg.Capacity),
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
			Help: "Snapshot files watched in the snapshot directory (at most --max-files; stale files are not watched; 0 while the directory cannot be listed).",
		}),
		staleN: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "snapshot_stale_files",
			Help: "Snapshot files in the snapshot directory whose writer is gone (not exported; removable; 0 while the directory cannot be listed).",
		}),
		files:   make(map[string]*snapFile),
		ignored: make(map[string]bool),
		stale:   make(map[string]bool),
		err:     errNotPolled,
	}
	for _, r := range snapshotReasons {
		d.errs.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{d.errs, d.analyzed, d.lastTS, d.watched, d.staleN} {
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
	if err := d.stateLocked(); err != nil {
		return nil, 0, err
	}
	return slices.Clone(d.samples), d.scans, nil
}

// stateVersion is CollectVersioned without the samples (stateVersioner).
func (d *SnapshotDir) stateVersion() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.stateLocked(); err != nil {
		return 0, err
	}
	return d.scans, nil
}

func (d *SnapshotDir) stateLocked() error {
	if err := d.stuckLocked(); err != nil {
		return err
	}
	return d.err
}

// Stuck returns an error wrapping ErrStuck while a rescan has made no
// progress for longer than StuckAfter (naming the file it is at), else nil.
func (d *SnapshotDir) Stuck() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stuckLocked()
}

func (d *SnapshotDir) stuckLocked() error {
	if !d.scanning {
		return nil
	}
	idle := d.cfg.Clock.Now().Sub(d.progress)
	if idle <= d.cfg.StuckAfter {
		return nil
	}
	at := "listing " + d.cfg.Dir
	if d.scanFile != "" {
		at = "reading " + d.scanFile
	}
	return fmt.Errorf("%w: source %q: the rescan has been %s for %v (since %s), longer than %v",
		ErrStuck, d.cfg.Name, at, idle.Round(time.Second), d.progress.UTC().Format(time.RFC3339), d.cfg.StuckAfter)
}

// at records the rescan's progress: it is now at file ("" for listing).
func (d *SnapshotDir) at(file string) {
	d.mu.Lock()
	d.progress, d.scanFile = d.cfg.Clock.Now(), file
	d.mu.Unlock()
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

// FirstScan rescans, waiting at most StuckAfter on the clock for the
// rescan to finish: a stuck first scan goes on in the background (Stuck
// reports it) rather than keeping the daemon from serving. It returns the
// rescan's error, or ErrStuck after the wait.
func (d *SnapshotDir) FirstScan(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- d.Rescan(ctx) }()
	tick, stop := d.cfg.Clock.NewTicker(d.cfg.StuckAfter)
	defer stop()
	select {
	case err := <-done:
		return err
	case <-tick:
		return fmt.Errorf("%w: source %q: the first rescan did not finish within %v; serving meanwhile", ErrStuck, d.cfg.Name, d.cfg.StuckAfter)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isSnapshotName(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".pickle") || strings.HasSuffix(name, ".pkl"))
}

func stem(name string) string { return strings.TrimSuffix(name, filepath.Ext(name)) }

// stampOf returns name's stamp in dir; ok false when it does not exist.
func stampOf(dir *dirHandle, name string) fileStamp {
	st, err := dir.lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileStamp{}
	case err != nil:
		return fileStamp{err: err.Error(), ok: true}
	}
	return fileStamp{stat: st, ok: true}
}

// Rescan lists the directory, analyses new and changed files and publishes
// the samples for Collect. It returns the directory's error, if any (file
// errors are logged and counted, not returned).
func (d *SnapshotDir) Rescan(ctx context.Context) error {
	d.scanMu.Lock()
	defer d.scanMu.Unlock()
	d.mu.Lock()
	d.scanning, d.progress, d.scanFile = true, d.cfg.Clock.Now(), ""
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.scanning = false
		d.mu.Unlock()
	}()
	dir, err := openDirHandle(d.cfg.Dir)
	var entries []fs.DirEntry
	if err == nil {
		defer dir.close()
		entries, err = dir.list()
	}
	if err != nil {
		err = fmt.Errorf("exporter: snapshot directory: %w", err)
		if msg := err.Error(); msg != d.dirErr {
			d.dirErr = msg
			d.cfg.Logger.Error("cannot list snapshot directory", "dir", d.cfg.Dir, "err", msg)
		}
		// Nothing is watched while the directory cannot be listed (its
		// files are kept, so that they are not read again when it can).
		d.watched.Set(0)
		d.staleN.Set(0)
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
	held := make(map[string]bool)
	staleNow := make(map[string]bool)
	for _, e := range entries { // sorted by name
		// Every kind is looked at, so that a link, pipe or directory named
		// like a snapshot is reported (once) rather than skipped silently.
		if !isSnapshotName(e.Name()) {
			continue
		}
		n := e.Name()
		switch lk, why := d.liveness(dir, n); {
		case why != "":
			staleNow[n] = true
			delete(d.ignored, n)
			if !d.stale[n] {
				d.stale[n] = true
				d.errs.WithLabelValues(ReasonStale).Inc()
				d.cfg.Logger.Info("snapshot file stale: not exported", "file", n, "reason", ReasonStale, "why", why)
			}
			continue
		case lk == lockHeld:
			held[n] = true
		}
		if d.stale[n] {
			delete(d.stale, n)
			d.cfg.Logger.Info("snapshot file live again", "file", n)
		}
		names = append(names, n)
	}
	for n := range d.stale {
		if !staleNow[n] {
			delete(d.stale, n) // gone (live again was handled above)
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
		if !stampOf(dir, n).ok {
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
		d.at(n)
		d.refresh(dir, n)
		if f := d.files[n]; f != nil {
			f.held = held[n]
		}
	}
	d.watched.Set(float64(len(d.files)))
	d.staleN.Set(float64(len(d.stale)))
	d.publish()
	return nil
}

// liveness says whether name's writer lives: its probe lock's state and,
// when the file is stale, why (else "").
func (d *SnapshotDir) liveness(dir *dirHandle, name string) (lockState, string) {
	lockName := "." + stem(name) + ".lock"
	lk := dir.testLock(lockName)
	switch {
	case lk == lockFree:
		return lk, "no process holds its lock " + lockName
	case lk == lockUnknown && d.cfg.MaxFileAge > 0:
		st, err := dir.lstat(name)
		if err != nil {
			return lk, ""
		}
		if age := d.cfg.Clock.Now().Sub(time.Unix(0, st.mtimeNs)); age > d.cfg.MaxFileAge {
			return lk, fmt.Sprintf("not modified for %v, over --max-file-age %v", age.Round(time.Second), d.cfg.MaxFileAge)
		}
	}
	return lk, ""
}

// refresh re-reads name if it or its sidecar changed since the last scan.
// A version that failed is not retried, nor reported again, until its
// stamp or its sidecar's changes.
func (d *SnapshotDir) refresh(dir *dirHandle, name string) {
	sideName := stem(name) + ".labels.json"
	prev := d.files[name]
	stamp := stampOf(dir, name)
	side := stampOf(dir, sideName)
	if !stamp.ok { // removed since the listing
		delete(d.files, name)
		return
	}
	if prev != nil && prev.stamp == stamp && prev.side == side {
		return
	}
	f := &snapFile{stamp: stamp, side: side}
	if prev != nil {
		f.counts = prev.counts // replaced by analyse on success
	}
	switch {
	case stamp.err != "":
		f.err = d.fail(name, ReasonIO, errors.New(stamp.err))
	case !stamp.stat.mode.IsRegular():
		f.err = d.fail(name, ReasonNotRegular, notRegular(name, stamp.stat.mode))
	case stamp.stat.size > d.cfg.MaxFileBytes:
		f.err = d.fail(name, ReasonTooLarge, fmt.Errorf("%s: %d bytes, over --max-file-bytes %d", name, stamp.stat.size, d.cfg.MaxFileBytes))
	default:
		labels, lerr := d.labels(dir, name, sideName, side)
		if lerr != nil {
			f.err = d.fail(name, ReasonLabels, lerr)
			break
		}
		file, reason, rerr := d.open(dir, name)
		if rerr != nil {
			f.err = d.fail(name, reason, rerr)
			break
		}
		aerr := d.analyseRecovered(name, file, labels, f)
		file.Close()
		if aerr != nil {
			f.err = d.fail(name, errReason(aerr), aerr)
			break
		}
		d.analyzed.Inc()
		d.lastTS.Set(float64(d.cfg.Clock.Now().UnixNano()) / 1e9)
		if prev != nil && prev.err != nil {
			d.cfg.Logger.Info("snapshot file readable again", "file", name)
		}
		// A capture is never captured again (a directory shared with the
		// capture directory through a mount that DistinctDirs cannot see).
		if f.ooms > 0 && d.cfg.Capture != nil && !IsCaptureName(name) &&
			(prev == nil || prev.ooms != f.ooms || prev.lastOOM != f.lastOOM) {
			// Read again, whole, for the copy: the analysis streamed it.
			if data, _, err := d.read(dir, name); err == nil {
				_, _ = d.cfg.Capture.Capture(labels.Instance, labels.Model, data) // logged and counted there
			} else {
				d.cfg.Logger.Warn("snapshot file not captured: reading it again failed", "file", name, "err", err.Error())
			}
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

// publish assembles the samples of every good file, those whose lock is
// held first, then in name order, skipping files that would repeat a label
// set or pass MaxInstances.
func (d *SnapshotDir) publish() {
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ha, hb := d.files[a].held, d.files[b].held; ha != hb {
			if ha {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
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
	hooks := d.hooks
	d.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// onChange adds a hook called after each rescan publishes (notifier).
func (d *SnapshotDir) onChange(f func()) {
	d.mu.Lock()
	d.hooks = append(d.hooks, f)
	d.mu.Unlock()
}
