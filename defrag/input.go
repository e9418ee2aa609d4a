// Inputs: a saved layout or a PyTorch snapshot, read for `gpufrag defrag`,
// and what a plan of them says beyond its figures.
// See doc.go for the overview.

package defrag

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/snapshot"
)

// Input is a layout to plan, as ReadInput read it.
type Input struct {
	// Name labels the input in messages and reports ("stdin" for "-").
	Name string
	// Source is "layout" (a file ReadLayout reads) or "snapshot" (a
	// PyTorch memory snapshot, of device Device).
	Source string
	Device int
	Layout mem.Layout
	// Allocator is the one the file names: a layout file's "allocator"
	// (nil when it names none), InputOptions.SnapshotAllocator for a
	// snapshot.
	Allocator alloc.Described
}

// InputOptions say how ReadInput reads.
type InputOptions struct {
	// Device is the device of a snapshot whose layout is planned.
	Device int
	// Capacity is the device memory a snapshot's layout is read against
	// (snapshot.Snapshot.Layout): the GPU the plan is priced on.
	Capacity int64
	// Parse parses the allocator a layout file names (alloc/registry's Parse:
	// defrag links no allocator registry).
	Parse ParseAlloc
	// SnapshotAllocator is the allocator of a snapshot's layout
	// (PyTorch's caching allocator, alloc/registry's Default).
	SnapshotAllocator alloc.Described
}

// NoDeviceError is a device that a snapshot has no segment on; it lists the
// devices the snapshot has.
type NoDeviceError struct {
	Name    string
	Device  int
	Devices []int // sorted
}

func (e *NoDeviceError) Error() string {
	have := make([]string, len(e.Devices))
	for i, d := range e.Devices {
		have[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s: no segment on device %d (the snapshot has devices %s)", e.Name, e.Device, strings.Join(have, ", "))
}

// ReadInput reads a saved layout or a PyTorch snapshot from r (name labels
// messages). It looks at the first bytes before reading on: a layout file
// and a memory_stats dump are JSON objects whose first 4 KiB must be JSON
// text (untrusted.CheckJSONStart), a snapshot a pickle (0x80), so that
// /dev/zero, a binary file or random bytes after "{" are refused at once
// instead of after a GiB. At most MaxLayoutFile bytes are read (PyTorch
// snapshots have the same limit); a pickle in a regular file (r an
// *os.File) is read by the snapshot reader from the file's start, without
// a copy here.
func ReadInput(r io.Reader, name string, o InputOptions) (Input, error) {
	in := Input{Name: name, Source: "layout"}
	data, pickle, err := readHead(r, name)
	if err != nil {
		return in, err
	}
	if data != nil && IsLayoutFile(data) {
		in.Layout, in.Allocator, err = ReadLayout(bytes.NewReader(data), name, o.Parse)
		return in, err
	}
	var s *snapshot.Snapshot
	if f, ok := r.(*os.File); ok && pickle != nil && isRegular(f) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return in, err
		}
		s, err = snapshot.Read(f, name)
	} else {
		if pickle != nil {
			if data, err = readRest(pickle, name); err != nil {
				return in, err
			}
		}
		s, err = snapshot.ReadBytes(data, name)
		if pickle == nil && errors.Is(err, snapshot.ErrField) {
			// JSON that is neither a layout nor a memory_stats dump (an op
			// trace, defrag's own --json): the memory_stats reader's
			// complaint about its first field would mislead. (JSON that is
			// not JSON keeps the reader's error, with its offset.)
			return in, fmt.Errorf("%s: a JSON document without \"gpufrag_layout\": not a layout gpufrag saved (docs/json.md); defrag plans such a layout or a PyTorch memory snapshot (the pickle of torch.cuda.memory._dump_snapshot())", name)
		}
	}
	if err != nil {
		return in, err
	}
	if len(s.Segments) == 0 {
		return in, fmt.Errorf("%s: the snapshot has no segments (a memory_stats dump has counters only)", name)
	}
	var devices []int
	for _, seg := range s.Segments {
		if !slices.Contains(devices, seg.Device) {
			devices = append(devices, seg.Device)
		}
	}
	if !slices.Contains(devices, o.Device) {
		slices.Sort(devices)
		return in, &NoDeviceError{name, o.Device, devices}
	}
	in.Source, in.Device, in.Allocator = "snapshot", o.Device, o.SnapshotAllocator
	in.Layout = s.Layout(o.Device, o.Capacity)
	return in, nil
}

// readHead reads a layout file or a memory_stats dump whole (at most
// MaxLayoutFile bytes), or returns a reader of the whole input for a
// pickle, which the snapshot reader reads itself.
func readHead(r io.Reader, name string) ([]byte, io.Reader, error) {
	head, atEOF, br, err := untrusted.Head(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(t) == 0 && atEOF:
		return nil, nil, fmt.Errorf("%s: empty file: want a gpufrag layout file (JSON) or a PyTorch memory snapshot (pickle)", name)
	case len(t) == 0, t[0] == '{':
		if err := untrusted.CheckJSONStart(head, atEOF); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	case t[0] == 0x80:
		return nil, br, nil
	default:
		return nil, nil, fmt.Errorf("%s: byte %d: 0x%02x: not a gpufrag layout file (a JSON object) or a PyTorch memory snapshot (a pickle, first byte 0x80)", name, len(head)-len(t), t[0])
	}
	data, err := readRest(br, name)
	return data, nil, err
}

// isRegular reports whether f is a regular file.
func isRegular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// readRest reads the rest of an input (a JSON document, or a pickle not in
// a regular file), at most MaxLayoutFile bytes.
func readRest(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxLayoutFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxLayoutFile {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most a layout file or snapshot may have", name, MaxLayoutFile)
	}
	return data, nil
}

// CheckGPU refuses an input whose segments (and, for a saved layout, other
// use) take more memory than gpu has: a snapshot read against it cannot add
// up, and a plan priced on it prices a GPU the layout was not on. The
// error names the smallest GPU preset that holds it (to give as --gpu).
func (in Input) CheckGPU(gpu model.GPU) error {
	l := in.Layout
	need := l.Classes().Reserved() + l.OtherUse
	if need <= gpu.Capacity {
		return nil
	}
	what := "its segments reserve"
	if l.OtherUse > 0 {
		what = "its segments and other use take"
	}
	var fit *model.GPU
	for _, n := range model.GPUNames() {
		if g, err := model.LookupGPU(n); err == nil && g.Capacity >= need && (fit == nil || g.Capacity < fit.Capacity) {
			fit = &g
		}
	}
	hint := ": no GPU preset holds it (" + strings.Join(model.GPUNames(), ", ") + ")"
	if fit != nil {
		hint = fmt.Sprintf(": give --gpu %s (%s), the smallest preset that holds it", fit.Name, human.Bytes(fit.Capacity))
	}
	return fmt.Errorf("%s (%s) is larger than the GPU: %s %s, more than its %s%s",
		in.Name, in.Source, what, human.Bytes(need), human.Bytes(gpu.Capacity), hint)
}

// analyzeCapacity is the device memory `gpufrag analyze` assumes without
// --capacity (snapshot/analysis.DefaultCapacity; a test holds them equal).
const analyzeCapacity = 80 * mem.GiB

// verdict says in words what plan p of in gains: frag.Judge's weighing of
// the layout and, when there is nothing to move, why nothing can be gained,
// instead of a bare "reached" with 0 moves; for a snapshot, why its max
// allocatable differs from analyze's. width is the terminal's (0: no
// limit), as in WriteTextWidth.
func verdict(in Input, p Plan, gpu model.GPU, width int) string {
	// The sentences wrap at 80 columns, or at a narrower terminal's width.
	wrapAt := 80
	if width > 0 {
		wrapAt = min(width, 80)
	}
	m := p.Before
	v := frag.Judge(frag.Stake{Health: m.Health, CachedFree: m.CachedFree, Reserved: m.Reserved, Capacity: m.Capacity})
	var sb strings.Builder
	sb.WriteString(human.WrapLong(fmt.Sprintf("fragmentation: %s (%s)\n", v.Label, v.Why), width))
	if why := nothingToGain(in.Layout, p); why != "" {
		sb.WriteString(human.Wrap("nothing to gain: "+why, wrapAt) + "\n")
	}
	if in.Source == "snapshot" {
		sb.WriteString(human.Wrap(fmt.Sprintf("max allocatable assumes the %s's usable %s (--gpu); gpufrag analyze takes --capacity, else the capacity an oom entry of the trace records, else %s, so its figure can differ.",
			gpu.Name, human.Bytes(gpu.Capacity), human.Bytes(analyzeCapacity)), wrapAt) + "\n")
	}
	return sb.String()
}
