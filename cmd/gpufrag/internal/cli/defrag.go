package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// defragFlags are the flags of `gpufrag defrag`.
type defragFlags struct {
	gpu       string // --gpu
	goal      string // --goal
	json      bool   // --json
	device    int    // --device
	allocator string // --allocator
	moves     int    // --moves
}

func newDefragCmd() *cobra.Command {
	f := defragFlags{gpu: "h100-80g", goal: "compact", moves: 10}
	cmd := &cobra.Command{
		Use:   "defrag FILE",
		Short: "Plan and price the compaction of a snapshot or saved layout",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "defrag takes one file (a snapshot or a saved layout), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDefrag(cmd, f, args[0])
		},
	}
	withHelp(cmd, "defrag")
	fl := cmd.Flags()
	fl.StringVar(&f.gpu, "gpu", f.gpu, "GPU `NAME` whose bandwidth prices the copies and whose capacity a snapshot is read against ("+strings.Join(model.GPUNames(), ", ")+")")
	fl.StringVar(&f.goal, "goal", f.goal, "`GOAL`: compact, or fit:SIZE (e.g. fit:2GiB)")
	fl.BoolVar(&f.json, "json", false, "print the plan as JSON (schema in docs/json.md)")
	fl.IntVar(&f.device, "device", 0, "device `N` of a snapshot")
	fl.StringVar(&f.allocator, "allocator", "", "allocator `SPEC` whose relocation rules apply: "+relocationHelp()+" (default: the file's, else inferred from pool names)")
	fl.IntVar(&f.moves, "moves", f.moves, "print the first `N` moves (-1: all)")
	return cmd
}

// relocationHelp lists the allocators by whether defrag can move their
// blocks (alloc.Caps.Relocates): "caching, sizeclass, arena (async, direct
// and vmm move nothing)".
func relocationHelp() string {
	var moves, fixed []string
	for _, k := range spec.Kinds {
		if k.Caps.Relocates {
			moves = append(moves, k.Name)
		} else {
			fixed = append(fixed, k.Name)
		}
	}
	if len(fixed) == 0 {
		return strings.Join(moves, ", ")
	}
	last := fixed[len(fixed)-1]
	if len(fixed) > 1 {
		last = strings.Join(fixed[:len(fixed)-1], ", ") + " and " + last
	}
	return strings.Join(moves, ", ") + " (" + last + " move nothing)"
}

// runDefrag checks the flags, reads the layout, plans and prints.
func runDefrag(cmd *cobra.Command, f defragFlags, path string) error {
	gpu, err := checkGPUFlag(cmd, "--gpu", f.gpu)
	if err != nil {
		return err
	}
	goal, err := defrag.ParseGoal(f.goal)
	if err != nil {
		return usageErrorf(cmd, "--goal: %v", err)
	}
	if f.device < 0 {
		return usageErrorf(cmd, "--device %d: must be 0 or more", f.device)
	}
	if f.moves < -1 {
		return usageErrorf(cmd, "--moves %d: want -1 (every move), 0 or a positive number", f.moves)
	}
	var flagAlloc spec.Spec
	if f.allocator != "" {
		if flagAlloc, err = spec.Parse(f.allocator); err != nil {
			return usageErrorf(cmd, "--allocator: %v", err)
		}
	}
	l, source, allocator, name, err := readDefragInput(cmd.InOrStdin(), path, f.device, gpu.Capacity)
	var noDevice *noDeviceError
	if errors.As(err, &noDevice) {
		return usageErrorf(cmd, "--device %d: %v", f.device, err)
	}
	if err != nil {
		return err
	}
	if err := checkFitsGPU(cmd, l, source, name, gpu); err != nil {
		return err
	}
	if f.allocator != "" {
		allocator = flagAlloc
	}
	p, err := defrag.PlanLayout(l, goal, defrag.Options{Allocator: allocator})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	cm := defrag.DefaultCostModel
	out := cmd.OutOrStdout()
	if f.json {
		doc := defrag.NewReport(name, source, f.device, gpu, cm, &p, f.moves)
		return writeJSON(out, doc, true)
	}
	var sb strings.Builder
	if err := defrag.WriteText(&sb, name, source, f.device, gpu, cm, p, f.moves); err != nil {
		return err
	}
	_, err = io.WriteString(out, insertVerdict(sb.String(), defragVerdict(l, p, gpu, source)))
	return err
}

// checkFitsGPU refuses, as a bad --gpu, a layout whose segments (and, for
// a saved layout, other use) take more memory than the GPU has: a snapshot
// read against it cannot add up, and a plan priced on it prices a GPU the
// layout was not on. It names the smallest GPU preset that holds it.
func checkFitsGPU(cmd *cobra.Command, l mem.Layout, source, name string, gpu model.GPU) error {
	need := l.Classes().Reserved() + l.OtherUse
	if need <= gpu.Capacity {
		return nil
	}
	what := "its segments reserve"
	if l.OtherUse > 0 {
		what = "its segments and other use take"
	}
	hint := ""
	var fit *model.GPU
	for _, n := range model.GPUNames() {
		if g, err := model.LookupGPU(n); err == nil && g.Capacity >= need && (fit == nil || g.Capacity < fit.Capacity) {
			fit = &g
		}
	}
	if fit != nil {
		hint = fmt.Sprintf(": give --gpu %s (%s), the smallest preset that holds it", fit.Name, human.Bytes(fit.Capacity))
	} else {
		hint = ": no GPU preset holds it (" + strings.Join(model.GPUNames(), ", ") + ")"
	}
	return usageErrorf(cmd, "--gpu %s: %s (%s) is larger than the GPU: %s %s, more than its %s%s",
		gpu.Name, name, source, what, human.Bytes(need), human.Bytes(gpu.Capacity), hint)
}

// insertVerdict puts verdict after the report's first paragraph (the file
// and "goal ...: reached" lines), where a reader looks first.
func insertVerdict(text, verdict string) string {
	i := strings.Index(text, "\n\n")
	if i < 0 {
		return text + "\n" + verdict
	}
	return text[:i+1] + verdict + text[i+1:]
}

// defragVerdict says in words what a plan gains: frag.Judge's weighing of
// the layout, and when there is nothing to move, why nothing can be
// gained, instead of a bare "reached" with 0 moves.
func defragVerdict(l mem.Layout, p defrag.Plan, gpu model.GPU, source string) string {
	m := p.Before
	v := frag.Judge(frag.Stake{Health: m.Health, CachedFree: m.CachedFree, Reserved: m.Reserved, Capacity: m.Capacity})
	var sb strings.Builder
	fmt.Fprintf(&sb, "fragmentation: %s (%s)\n", v.Label, v.Why)
	if len(p.Moves) == 0 && p.UnmapPages == 0 {
		sb.WriteString(human.Wrap("nothing to gain: "+defrag.NothingToGain(l, m), 80) + "\n")
	}
	if source == "snapshot" {
		sb.WriteString(human.Wrap(fmt.Sprintf("max allocatable assumes the %s's usable %s (--gpu); gpufrag analyze assumes %s unless --capacity, so its figure differs.",
			gpu.Name, human.Bytes(gpu.Capacity), human.Bytes(analysis.DefaultCapacity)), 80) + "\n")
	}
	return sb.String()
}

// readDefragFile reads a layout file or a memory_stats dump, at most
// defrag.MaxLayoutFile bytes (1 GiB; PyTorch snapshots have the same
// limit), or returns a reader of the whole input for a pickle, which the
// snapshot reader reads itself (a copy here doubled the memory). It looks
// at the first bytes before reading on: a layout file and a memory_stats
// dump are JSON objects whose first 4 KiB must be JSON text
// (loc.CheckJSONStart), a snapshot a pickle (0x80), so that /dev/zero, a
// binary file or random bytes after "{" are refused at once instead of
// after a GiB.
func readDefragFile(r io.Reader, name string) ([]byte, io.Reader, error) {
	head, atEOF, br, err := loc.Head(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(t) == 0 && atEOF:
		return nil, nil, fmt.Errorf("%s: empty file: want a gpufrag layout file (JSON) or a PyTorch memory snapshot (pickle)", name)
	case len(t) == 0, t[0] == '{':
		if err := loc.CheckJSONStart(head, atEOF); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	case t[0] == 0x80:
		return nil, br, nil
	default:
		return nil, nil, fmt.Errorf("%s: byte %d: 0x%02x: not a gpufrag layout file (a JSON object) or a PyTorch memory snapshot (a pickle, first byte 0x80)", name, len(head)-len(t), t[0])
	}
	data, err := readDefragRest(br, name)
	return data, nil, err
}

// isRegular reports whether f is a regular file.
func isRegular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// readDefragRest reads the rest of a defrag input (a JSON document, or a
// pickle not in a regular file), at most defrag.MaxLayoutFile bytes.
func readDefragRest(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, defrag.MaxLayoutFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > defrag.MaxLayoutFile {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most a layout file or snapshot may have", name, defrag.MaxLayoutFile)
	}
	return data, nil
}

// noDeviceError is a --device that a snapshot has no segment on: a usage
// error that lists the devices it has.
type noDeviceError struct {
	name    string
	device  int
	devices []int
}

func (e *noDeviceError) Error() string {
	slices.Sort(e.devices)
	have := make([]string, len(e.devices))
	for i, d := range e.devices {
		have[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s: no segment on device %d (the snapshot has devices %s)", e.name, e.device, strings.Join(have, ", "))
}

// readDefragInput reads a saved layout or a snapshot from path ("-": stdin).
// It returns the layout, the source kind, the allocator the file names, and
// the name used in messages.
func readDefragInput(stdin io.Reader, path string, device int, capacity int64) (mem.Layout, string, alloc.Described, string, error) {
	name := path
	r := stdin
	if path == "-" {
		name = "stdin"
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return mem.Layout{}, "", nil, name, err
		}
		defer fh.Close()
		r = fh
	}
	data, pickle, err := readDefragFile(r, name)
	if err != nil {
		return mem.Layout{}, "", nil, name, err
	}
	if data != nil && defrag.IsLayoutFile(data) {
		l, allocator, err := defrag.ReadLayout(bytes.NewReader(data), name, parseAlloc)
		return l, "layout", allocator, name, err
	}
	var s *snapshot.Snapshot
	if f, ok := r.(*os.File); ok && pickle != nil && isRegular(f) {
		// The snapshot reader reads a regular file from its start itself,
		// into a buffer of the file's size: no copy here.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return mem.Layout{}, "", nil, name, err
		}
		s, err = snapshot.Read(f, name)
	} else {
		if pickle != nil {
			if data, err = readDefragRest(pickle, name); err != nil {
				return mem.Layout{}, "", nil, name, err
			}
		}
		s, err = snapshot.ReadBytes(data, name)
	}
	if err != nil {
		return mem.Layout{}, "", nil, name, err
	}
	if len(s.Segments) == 0 {
		return mem.Layout{}, "", nil, name, fmt.Errorf("%s: the snapshot has no segments (a memory_stats dump has counters only)", name)
	}
	var devices []int
	for _, seg := range s.Segments {
		if !slices.Contains(devices, seg.Device) {
			devices = append(devices, seg.Device)
		}
	}
	if !slices.Contains(devices, device) {
		return mem.Layout{}, "", nil, name, &noDeviceError{name, device, devices}
	}
	return s.Layout(device, capacity), "snapshot", spec.Default(), name, nil
}

// parseAlloc is the registry's Parse for an allocator a layout file names.
func parseAlloc(s string) (alloc.Described, error) { return spec.Parse(s) }
