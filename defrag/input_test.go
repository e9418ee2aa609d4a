package defrag

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestAnalyzeCapacity: the verdict names the capacity analyze assumes.
func TestAnalyzeCapacity(t *testing.T) {
	if analyzeCapacity != analysis.DefaultCapacity {
		t.Errorf("analyzeCapacity %d, analysis.DefaultCapacity %d", analyzeCapacity, analysis.DefaultCapacity)
	}
}

func parseSpec(s string) (alloc.Described, error) { return registry.Parse(s) }

// TestReadInput: what ReadInput refuses from the first bytes, a layout
// file with the allocator it names, a snapshot's device that it lacks, and
// a snapshot read from a regular file and from a stream alike.
func TestReadInput(t *testing.T) {
	o := InputOptions{Capacity: 80 * mem.GiB, Parse: parseSpec, SnapshotAllocator: registry.Default()}
	for _, c := range []struct{ in, want string }{
		{"", "x: empty file: want a gpufrag layout file"},
		{"  \n", "x: empty file"},
		{"GIF89a", "x: byte 0: 0x47: not a gpufrag layout file (a JSON object) or a PyTorch memory snapshot"},
		{"{\x00\x00", "x: "},
		// JSON that is not a layout: an op trace line, defrag's own --json.
		{`{"op": "alloc", "id": 1, "size": 512}`, `x: a JSON document without "gpufrag_layout": not a layout gpufrag saved`},
		{`{"file": "s.pickle", "moves": []}`, `x: a JSON document without "gpufrag_layout"`},
		// Broken JSON keeps the reader's offset; a memory_stats dump has no segments.
		{`{"a":`, `x: offset 5: field "a": memory_stats JSON: `},
		{`{"allocated_bytes.all.current": 5}`, "x: the snapshot has no segments (a memory_stats dump has counters only)"},
	} {
		if _, err := ReadInput(strings.NewReader(c.in), "x", o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.in, err, c.want)
		}
	}
	layout := `{"gpufrag_layout": 1, "allocator": "arena:0.9", "capacity_bytes": 1048576,
	 "segments": [{"addr": 0, "size": 1048576, "pool": "arena", "blocks": [{"addr": 0, "size": 1048576, "state": "free"}]}]}`
	in, err := ReadInput(strings.NewReader(layout), "l.json", o)
	if err != nil {
		t.Fatal(err)
	}
	if in.Source != "layout" || in.Allocator == nil || in.Allocator.Name() != "arena" || len(in.Layout.Segments) != 1 {
		t.Errorf("layout file: %+v", in)
	}
	data, err := os.ReadFile(filepath.Join("..", "examples", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	fromStream, err := ReadInput(bytes.NewReader(data), "s", o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("..", "examples", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromFile, err := ReadInput(f, "s", o)
	if err != nil {
		t.Fatal(err)
	}
	if fromStream.Source != "snapshot" || fromStream.Allocator.Name() != "caching" ||
		len(fromFile.Layout.Segments) == 0 || len(fromFile.Layout.Segments) != len(fromStream.Layout.Segments) {
		t.Errorf("snapshot: %d segments from the file, %d from a stream", len(fromFile.Layout.Segments), len(fromStream.Layout.Segments))
	}
	o.Device = 7
	_, err = ReadInput(bytes.NewReader(data), "s", o)
	var nd *NoDeviceError
	if !errors.As(err, &nd) || err.Error() != "s: no segment on device 7 (the snapshot has devices 0)" {
		t.Errorf("device 7: %v", err)
	}
}

// TestCheckGPU: an input larger than the GPU names the smallest preset
// that holds it, or says that none does (issue 28, item 8). A snapshot is
// read against the GPU: its segments alone must fit.
func TestCheckGPU(t *testing.T) {
	t4, _ := model.LookupGPU("t4-16g")
	l := mem.Layout{Capacity: t4.Capacity, Segments: []mem.Segment{{Addr: 0, Size: 20 << 30, Pool: "large",
		Blocks: []mem.Block{{Addr: 0, Size: 20 << 30, State: mem.Active, Requested: 20 << 30}}}}}
	if err := (Input{Name: "snap.pickle", Source: "snapshot", Layout: l}).CheckGPU(t4); err == nil ||
		err.Error() != "snap.pickle (snapshot) is larger than the GPU: its segments reserve 20.00GiB, more than its 15.00GiB: give --gpu a10g-24g (22.49GiB), the smallest preset that holds it" {
		t.Errorf("snapshot: %v", err)
	}
	big, _ := model.LookupGPU("h200-141g")
	if err := (Input{Name: "snap.pickle", Source: "snapshot", Layout: l}).CheckGPU(big); err != nil {
		t.Errorf("on h200-141g: %v", err)
	}
	l.OtherUse = 600 << 30
	if err := (Input{Name: "l.json", Source: "layout", Layout: l}).CheckGPU(t4); err == nil || !strings.Contains(err.Error(), "its segments and other use take 620.00GiB, more than its 15.00GiB: no GPU preset holds it") {
		t.Errorf("no preset: %v", err)
	}
}

// TestDefragFileRandomBytes (issue 28, item 10): random bytes that start
// like a layout file or a memory_stats dump are refused within the first
// 4 KiB; before, the CLI read them all (100 MB after "{": 0.53 s
// and 380 MB), and a copy for the layout reader. The pickle branch is the
// snapshot decoder's.
func TestDefragFileRandomBytes(t *testing.T) {
	loctest.RefusesEarlyAfter(t, func(r io.Reader, name string) error {
		_, _, err := readHead(r, name)
		return err
	}, "{", "[", " \n{", `{"gpufrag_layout": 1, "segments": [{"`)
}
