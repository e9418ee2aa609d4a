package exporter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Snapshot-file error reasons (label reason of gpufrag_snapshot_errors_total).
const (
	ReasonIO              = "io"               // stat or read failed
	ReasonNotRegular      = "not_regular"      // a link, pipe, socket, device or directory
	ReasonTooLarge        = "too_large"        // over MaxFileBytes
	ReasonForbidden       = "forbidden"        // a pickle opcode that could run code
	ReasonTruncated       = "truncated"        // the pickle ends early
	ReasonLength          = "length"           // a declared length past the input
	ReasonLimit           = "limit"            // a decoder or item limit
	ReasonNotSnapshot     = "not_snapshot"     // another kind of file: a torch.save checkpoint, an archive, text...
	ReasonDecode          = "decode"           // any other malformed pickle
	ReasonField           = "field"            // a snapshot field of the wrong type
	ReasonAnalysis        = "analysis"         // the analysis refused the snapshot
	ReasonPanic           = "panic"            // the reader or the analysis panicked (a bug: report it)
	ReasonLabels          = "labels"           // unreadable NAME.labels.json
	ReasonMaxFiles        = "max_files"        // past MaxFiles
	ReasonMaxInstances    = "max_instances"    // past MaxInstances
	ReasonDuplicateLabels = "duplicate_labels" // another file already exports the labels
	ReasonStale           = "stale"            // its writer is gone: lock file free, or older than MaxFileAge
)

var snapshotReasons = []string{ReasonIO, ReasonNotRegular, ReasonTooLarge, ReasonForbidden, ReasonTruncated,
	ReasonLength, ReasonLimit, ReasonNotSnapshot, ReasonDecode, ReasonField, ReasonAnalysis, ReasonPanic, ReasonLabels,
	ReasonMaxFiles, ReasonMaxInstances, ReasonDuplicateLabels, ReasonStale}

// ErrPanic wraps a panic of the snapshot reader or analysis, recovered so
// that one file cannot take the daemon down.
var ErrPanic = errors.New("exporter: panic while analysing a snapshot (a bug in gpufrag: please report it with the file)")

// errReason classifies a reader error.
func errReason(err error) string {
	switch {
	case errors.Is(err, ErrPanic):
		return ReasonPanic
	case errors.Is(err, errGrew):
		return ReasonTooLarge
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrFileChanged):
		return ReasonNotRegular
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
	case errors.Is(err, snapshot.ErrNotSnapshot): // before ErrDecode, which it also matches
		return ReasonNotSnapshot
	case errors.Is(err, snapshot.ErrDecode):
		return ReasonDecode
	}
	return ReasonAnalysis
}

// open opens the regular file name of dir for reading, refusing it past
// MaxFileBytes. The snapshot reader streams it (never the whole file in
// memory); limitedFile stops a file that grows past the limit meanwhile.
func (d *SnapshotDir) open(dir *dirHandle, name string) (*os.File, string, error) {
	f, st, err := dir.open(name)
	if err != nil {
		if errors.Is(err, ErrNotRegular) || errors.Is(err, ErrFileChanged) {
			return nil, ReasonNotRegular, err
		}
		return nil, ReasonIO, err
	}
	if st.size > d.cfg.MaxFileBytes {
		f.Close()
		return nil, ReasonTooLarge, fmt.Errorf("%s: %d bytes, over --max-file-bytes %d", name, st.size, d.cfg.MaxFileBytes)
	}
	return f, "", nil
}

// read reads the regular file name of dir whole, up to MaxFileBytes (for
// a capture).
func (d *SnapshotDir) read(dir *dirHandle, name string) ([]byte, string, error) {
	f, reason, err := d.open(dir, name)
	if err != nil {
		return nil, reason, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, d.cfg.MaxFileBytes+1))
	if err != nil {
		return nil, ReasonIO, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > d.cfg.MaxFileBytes {
		return nil, ReasonTooLarge, fmt.Errorf("%s: grew past --max-file-bytes %d", name, d.cfg.MaxFileBytes)
	}
	return data, "", nil
}

// errGrew: a file grew past --max-file-bytes while it was read.
var errGrew = errors.New("grew past --max-file-bytes")

// limitedFile reads a file, failing with errGrew past max bytes. It hides
// the file's Stat, so the reader does not take the size it had when opened
// for the size it has.
type limitedFile struct {
	r    io.Reader
	left int64
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errGrew
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errGrew
	}
	return n, err
}

// sidecar is the NAME.labels.json document.
type sidecar struct {
	Instance string `json:"instance"`
	Model    string `json:"model"`
	GPU      string `json:"gpu"`
}

// maxSidecarBytes bounds a labels file: three short strings need well
// under 1 KiB; 64 KiB leaves room for long values and whitespace.
const maxSidecarBytes = 64 << 10

// labels resolves a file's instance, model and gpu (see SnapshotDir).
func (d *SnapshotDir) labels(dir *dirHandle, name, sideName string, side fileStamp) (sidecar, error) {
	if side.ok {
		l, err := readSidecar(dir, sideName)
		if err != nil {
			return sidecar{}, err
		}
		if l.Instance == "" {
			l.Instance = nameLabel(stem(name))
		}
		return l, nil
	}
	return labelsFromName(name), nil
}

func readSidecar(dir *dirHandle, name string) (sidecar, error) {
	f, _, err := dir.open(name)
	if err != nil {
		return sidecar{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSidecarBytes+1))
	if err != nil {
		return sidecar{}, fmt.Errorf("%s: %w", name, err)
	}
	return parseSidecar(filepath.Join(dir.path, name), data)
}

// sidecarKeys are the keys of a labels file, spelled as they must be.
var sidecarKeys = []string{"instance", "model", "gpu"}

// parseSidecar decodes a labels file strictly: one JSON object whose keys
// are instance, model and gpu, in lower case and each once, with string
// values that CheckLabelValue accepts, in a document untrusted.CheckJSON accepts
// (valid UTF-8, no escaped lone surrogate: encoding/json would read either
// as U+FFFD). A file that is not is refused whole, with the byte offset or
// the field.
func parseSidecar(path string, data []byte) (sidecar, error) {
	if len(data) > maxSidecarBytes {
		return sidecar{}, fmt.Errorf("%s: longer than %d bytes", path, maxSidecarBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l sidecar
	if err := dec.Decode(&l); err != nil {
		switch off, field := untrusted.LocateDecodeError(data, err); {
		case off >= 0 && field != "":
			return sidecar{}, fmt.Errorf("%s: byte offset %d: field %q: %s", path, off, field, untrusted.DecodeMessage(err))
		case off >= 0:
			return sidecar{}, fmt.Errorf("%s: byte offset %d: %s", path, off, untrusted.DecodeMessage(err))
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return sidecar{}, fmt.Errorf("%s: byte offset %d: unexpected end of the JSON object: %w", path, len(data), err)
		}
		return sidecar{}, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return sidecar{}, fmt.Errorf("%s: byte offset %d: data after the JSON object", path, dec.InputOffset())
	}
	// What the decoder accepted silently: invalid UTF-8, a key twice, keys
	// that differ only in case ("instance" and "INSTANCE").
	if err := untrusted.CheckJSON(data); err != nil {
		return sidecar{}, fmt.Errorf("%s: %w", path, err)
	}
	// The decoder also matches a key to a field whatever its case: a lone
	// "INSTANCE" would be read as instance.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return sidecar{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(sidecarKeys, k) {
			return sidecar{}, fmt.Errorf("%s: field %s: unknown key (the keys are \"instance\", \"model\" and \"gpu\", in lower case)", path, untrusted.Quote(k))
		}
	}
	for i, v := range []string{l.Instance, l.Model, l.GPU} {
		if err := CheckLabelValue(v); err != nil {
			return sidecar{}, fmt.Errorf("%s: field %q: value %s: %w", path, sidecarKeys[i], untrusted.Quote(v), err)
		}
	}
	return l, nil
}

// nameLabel makes (part of) a file name a label value: invalid UTF-8 and
// control characters become '_'. A name is at most 255 bytes on the file
// systems the exporter runs on, well under MaxLabelBytes.
func nameLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(s, "_"))
}

// labelsFromName reads <instance>__<model>[__<anything>].pickle; otherwise
// instance is the stem. Both pass through nameLabel.
func labelsFromName(name string) sidecar {
	s := nameLabel(stem(name))
	parts := strings.SplitN(s, "__", 3)
	if len(parts) >= 2 && parts[0] != "" && parts[1] != "" {
		return sidecar{Instance: parts[0], Model: parts[1]}
	}
	return sidecar{Instance: s}
}

// snapshotReadOpts: the diagnosis replays nothing, so it needs no trace
// stacks and no trace entry but the oom ones (counted, and their time_us).
var snapshotReadOpts = snapshot.Options{SkipTraceFrames: true, TraceOOMsOnly: true}

// diagnoseSnapshot is the analysis of a snapshot file on a device of
// unknown capacity.
func diagnoseSnapshot(name string, s *snapshot.Snapshot) (*analysis.Report, error) {
	return diagnoseAt(0)(name, s)
}

// diagnoseAt returns the analysis of a snapshot file on a device of
// capacity bytes, 0 if unknown (SnapshotDir.diagnose unless a test
// replaces it).
func diagnoseAt(capacity int64) func(string, *snapshot.Snapshot) (*analysis.Report, error) {
	return func(_ string, s *snapshot.Snapshot) (*analysis.Report, error) {
		rep, err := analysis.Analyze(s, analysis.Options{NoReplay: true, Capacity: capacity})
		if ce := (*analysis.CapacityError)(nil); errors.As(err, &ce) {
			// --capacity is below what this file's live blocks hold, so it is
			// not this file's device: its capacity is unknown, and the series
			// that depend on it are left out, as without --capacity.
			return analysis.Analyze(s, analysis.Options{NoReplay: true})
		}
		return rep, err
	}
}

// analyseRecovered is analyse with any panic of the reader or the analysis
// turned into an error wrapping ErrPanic (with the panic value and the
// first frames of its stack), so that one file cannot crash the daemon.
func (d *SnapshotDir) analyseRecovered(name string, data io.Reader, l sidecar, f *snapFile) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f.samples, f.ooms, f.lastOOM = nil, 0, 0
			err = fmt.Errorf("%s: %w: %v\n%s", name, ErrPanic, r, stackHead(debug.Stack()))
		}
	}()
	return d.analyse(name, data, l, f)
}

// stackHead keeps the first 4 KiB of a stack: enough for the panicking
// frames, bounded for the log.
func stackHead(b []byte) string {
	const n = 4 << 10
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// analyse reads and diagnoses one file, streamed from r, into f.
func (d *SnapshotDir) analyse(name string, r io.Reader, l sidecar, f *snapFile) error {
	opts := snapshotReadOpts
	s, err := snapshot.ReadOptions(&limitedFile{r: r, left: d.cfg.MaxFileBytes}, name, &opts)
	if errors.Is(err, errGrew) {
		return fmt.Errorf("%s: %w %d", name, errGrew, d.cfg.MaxFileBytes)
	}
	if err != nil {
		return err
	}
	rep, err := d.diagnose(name, s)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	type dev struct {
		d    *analysis.Device
		ooms oomCount
	}
	var devs []dev
	// Every device's counter carries over, those of devices this version
	// lacks too: one that comes back must not come back lower.
	counts := make(map[int]oomCount, max(len(rep.Devices), len(f.counts)))
	maps.Copy(counts, f.counts)
	for i := range rep.Devices {
		dv := &rep.Devices[i]
		var times []int64
		if dv.Device >= 0 && dv.Device < len(s.DeviceTraces) {
			for _, e := range s.DeviceTraces[dv.Device] {
				if e.Action == "oom" {
					times = append(times, e.TimeUS)
					f.lastOOM = max(f.lastOOM, e.TimeUS)
				}
			}
		}
		f.ooms += int64(len(times))
		c := f.counts[dv.Device].next(times, d.cfg.Clock.Now().UnixMicro())
		if !c.zero() {
			counts[dv.Device] = c
		}
		if dv.Segments > 0 || c.total > 0 {
			devs = append(devs, dev{dv, c})
		}
	}
	for _, dv := range devs {
		gpu := strconv.Itoa(dv.d.Device)
		if l.GPU != "" && len(devs) == 1 {
			gpu = l.GPU
		}
		f.samples = append(f.samples, Sample{
			Labels: Labels{GPU: gpu, Instance: l.Instance, Model: l.Model, Pool: "pytorch"},
			Memory: snapshotMemory(dv.d, dv.ooms),
		})
	}
	f.counts = counts // only a version that succeeds moves the counters
	return nil
}

// oomCount is gpufrag_ooms_total of one device of one file, across the
// file's versions. The file holds the allocator's recent history (a ring
// of max_entries events), so an oom entry stays in it for several versions
// and then scrolls out: counting the entries of each version would make the
// counter fall, which Prometheus reads as a reset, counting the entries
// still there again (a false GPUOOMsIncreasing). Memory.OOMs must never
// decrease, so a version adds the oom entries not counted before, told
// apart by PyTorch's time_us (microseconds since the epoch): those not
// among the times already counted (seen), whatever their order, so that an
// OOM stamped earlier than one counted before (a restarted process whose
// clock was stepped back) still counts. Entries without a time (PyTorch
// 2.0) cannot be told apart: the counter is then the most that one version
// held.
type oomCount struct {
	total int64 // the counter; never decreases while the file is watched
	// seen holds the time_us of the newest timed entries counted, at most
	// maxSeenOOMs, ascending (a time twice for two entries of the same
	// microsecond); floor is the newest time seen let go (0: none), an entry
	// at or before it being taken as counted.
	seen  []int64
	floor int64
	// last is when the OOM counted last happened (unix microseconds; 0:
	// none counted): the newest entry a version added, or, for untimed
	// entries, when the exporter counted them (gpufrag_last_oom_timestamp_seconds).
	last int64
}

// maxSeenOOMs bounds oomCount.seen: 2 KiB per device of a file. An entry
// older than the newest maxSeenOOMs counted is taken as counted; a ring
// holding more OOMs than that (gpufrag-probe's keeps 20,000 events by
// default, and a server failing that often is down) is the only case
// where the bound decides.
const maxSeenOOMs = 256

// zero reports whether c is the count of a device that has had no OOM.
func (c oomCount) zero() bool { return c.total == 0 && c.last == 0 && len(c.seen) == 0 }

// next is the count after a version whose oom entries have times (time_us,
// 0 where absent), in any order; nowUS is the exporter's clock, the time of
// untimed entries that raise the counter.
func (c oomCount) next(times []int64, nowUS int64) oomCount {
	if len(times) == 0 {
		return c
	}
	if slices.ContainsFunc(times, func(us int64) bool { return us <= 0 }) {
		if n := int64(len(times)); n > c.total {
			c.total, c.last = n, nowUS
		}
		return c
	}
	ts := slices.Sorted(slices.Values(times))
	merged := make([]int64, 0, len(ts)+len(c.seen))
	i := 0
	for _, us := range ts {
		for i < len(c.seen) && c.seen[i] < us {
			merged = append(merged, c.seen[i])
			i++
		}
		if i < len(c.seen) && c.seen[i] == us {
			i++ // counted before
		} else if us > c.floor {
			c.total++
			c.last = us
		}
		merged = append(merged, us)
	}
	merged = append(merged, c.seen[i:]...)
	if n := len(merged) - maxSeenOOMs; n > 0 {
		c.floor = max(c.floor, merged[n-1])
		merged = merged[n:]
	}
	c.seen = merged
	return c
}

// snapshotMemory is the Memory of one analysed device: package frag's
// ratios, and the byte figures as `gpufrag analyze` reports them
// (analysis.Device.Sizes, the one definition both use); without a known
// capacity, no device-free or max-allocatable figure.
func snapshotMemory(d *analysis.Device, ooms oomCount) *Memory {
	m, sz := d.Metrics, d.Sizes()
	m.Reserved, m.Allocated, m.Requested, m.CachedFree = sz.Reserved, sz.Allocated, sz.Requested, sz.CachedFree
	m.LargestFreeBlock, m.DeviceFree, m.MaxAllocatable = sz.LargestFreeBlock, sz.DeviceFree, sz.MaxAllocatable
	mem := &Memory{Metrics: m, OOMs: ooms.total, CapacityUnknown: !sz.CapacityKnown, HasLastOOM: true}
	if ooms.last > 0 {
		mem.LastOOM = time.UnixMicro(ooms.last)
	}
	return mem
}
