package alloctest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Factory builds an allocator from its spec arguments (the part after
// "name:", possibly empty) on a device.
type Factory func(dev *mem.Device, args string) (alloc.Allocator, error)

// Hook lets a package add commands of its own to the script language. It
// returns the output and true when it handled the command. Through env it
// reaches the allocator, the script's ids and the reference model.
type Hook func(t *testing.T, env *ScriptEnv, td *datadriven.TestData) (string, bool)

// ScriptEnv is the state of one script: the allocator under test, the
// script's ids and the reference model that Check compares against.
type ScriptEnv struct {
	A    alloc.Allocator
	ids  map[string]alloc.Handle
	live map[alloc.Handle]Live
}

// Handle returns the live handle a script id names.
func (e *ScriptEnv) Handle(id string) (alloc.Handle, bool) {
	h, ok := e.ids[id]
	return h, ok
}

// Track records that id now names block b holding requested bytes (after an
// Alloc, or a call that resized or moved it), replacing any earlier record.
func (e *ScriptEnv) Track(id string, b alloc.Block, requested int64) {
	if old, ok := e.ids[id]; ok {
		delete(e.live, old)
	}
	e.ids[id] = b.Handle
	e.live[b.Handle] = Live{Addr: b.Addr, Size: b.Size, Requested: requested}
}

// FormatBlock prints a block as the alloc command does.
func FormatBlock(id string, b alloc.Block) string {
	return fmt.Sprintf("%s: %s size=%s", id, mem.FormatAddr(b.Addr), mem.FormatBytesExact(b.Size))
}

// RunScripts runs every datadriven script under dir (typically
// "testdata/scripts") against allocators built by f. Rerun with -rewrite to
// regenerate the expected output, and commit the diff only if you understand
// why it changed.
//
// Commands (sizes take units, addresses are @OFFSET from the device base):
//
//	init capacity=1GiB [other=0] [spec=ARGS]   new device and allocator
//	alloc id=a size=3MiB [stream=0]            prints the block or the OOM
//	free id=a                                  prints ok or the error
//	relocate id=a to=@20MiB                    moves a live block (Relocator)
//	empty-cache                                torch.cuda.empty_cache()
//	sync                                       stream synchronisation (Syncer)
//	stats                                      Stats.String()
//	layout                                     Layout.String()
//	max-allocatable                            MaxAllocatable()
//
// After every command the reference checks of Check run; a failure stops the
// test at that line.
func RunScripts(t *testing.T, dir string, f Factory, hooks ...Hook) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		env := &ScriptEnv{ids: map[string]alloc.Handle{}, live: map[alloc.Handle]Live{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := run(t, td, f, env, hooks)
			if env.A != nil {
				if err := Check(env.A, env.live); err != nil {
					td.Fatalf(t, "after %q: %v", td.Cmd, err)
				}
			}
			return out
		})
	})
}

func sizeArg(t *testing.T, td *datadriven.TestData, key string) int64 {
	var s string
	td.ScanArgs(t, key, &s)
	n, err := mem.ParseBytes(s)
	if err != nil {
		td.Fatalf(t, "%s: %v", key, err)
	}
	return n
}

func run(t *testing.T, td *datadriven.TestData, f Factory, env *ScriptEnv, hooks []Hook) string {
	ids, live := env.ids, env.live
	if td.Cmd == "init" {
		capacity := sizeArg(t, td, "capacity")
		var other int64
		if td.HasArg("other") {
			other = sizeArg(t, td, "other")
		}
		var spec string
		td.MaybeScanArgs(t, "spec", &spec)
		dev, err := mem.NewDevice(capacity, other)
		if err != nil {
			return "error: " + err.Error()
		}
		a, err := f(dev, spec)
		if err != nil {
			return "error: " + err.Error()
		}
		env.A = a
		clear(ids)
		clear(live)
		return "ok"
	}
	a := env.A
	if a == nil {
		td.Fatalf(t, "%s before init", td.Cmd)
	}
	for _, h := range hooks {
		if out, ok := h(t, env, td); ok {
			return out
		}
	}
	switch td.Cmd {
	case "alloc":
		var id string
		td.ScanArgs(t, "id", &id)
		size := sizeArg(t, td, "size")
		stream := 0
		td.MaybeScanArgs(t, "stream", &stream)
		if _, dup := ids[id]; dup {
			td.Fatalf(t, "id %q is already live", id)
		}
		b, err := a.Alloc(size, stream)
		if err != nil {
			if e := CheckOOM(err, size); e != nil && !errors.Is(err, alloc.ErrInvalidSize) {
				td.Fatalf(t, "%v", e)
			}
			return "error: " + err.Error()
		}
		env.Track(id, b, size)
		return FormatBlock(id, b)
	case "free":
		var id string
		td.ScanArgs(t, "id", &id)
		h, ok := ids[id]
		if !ok {
			// Let scripts show the error for a stale or unknown handle.
			h = alloc.Handle(1<<63 | uint64(len(id)))
		}
		if err := a.Free(h); err != nil {
			return "error: " + err.Error()
		}
		delete(ids, id)
		delete(live, h)
		return "ok"
	case "relocate":
		var id, to string
		td.ScanArgs(t, "id", &id)
		td.ScanArgs(t, "to", &to)
		dst, err := mem.ParseAddr(to)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		r, ok := a.(alloc.Relocator)
		if !ok {
			return "error: allocator does not relocate"
		}
		h := ids[id]
		b, err := r.Relocate(h, dst)
		if err != nil {
			return "error: " + err.Error()
		}
		env.Track(id, b, live[h].Requested)
		return FormatBlock(id, b)
	case "empty-cache":
		a.EmptyCache()
		return "ok"
	case "sync":
		if s, ok := a.(alloc.Syncer); ok {
			s.Sync()
		}
		return "ok"
	case "stats":
		return a.Stats().String()
	case "layout":
		return a.Layout().String()
	case "max-allocatable":
		if err := CheckMaxAllocatable(a); err != nil {
			td.Fatalf(t, "%v", err)
		}
		return mem.FormatBytesExact(a.MaxAllocatable())
	case "live":
		// The live ids in address order, for checking placement at a glance.
		type e struct {
			id   string
			addr uint64
		}
		var es []e
		for id, h := range ids {
			es = append(es, e{id, live[h].Addr})
		}
		sort.Slice(es, func(i, j int) bool { return es[i].addr < es[j].addr })
		var sb strings.Builder
		for _, x := range es {
			fmt.Fprintf(&sb, "%s %s %s\n", x.id, mem.FormatAddr(x.addr), mem.FormatBytesExact(live[ids[x.id]].Size))
		}
		return sb.String()
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}
