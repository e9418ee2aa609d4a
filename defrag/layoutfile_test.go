package defrag_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

func TestLayoutFileRoundTrip(t *testing.T) {
	l := benchLayout(t, "caching", 500, 3)
	var buf bytes.Buffer
	if err := defrag.WriteLayout(&buf, l, "caching"); err != nil {
		t.Fatal(err)
	}
	if !defrag.IsLayoutFile(buf.Bytes()) {
		t.Fatal("a written layout is not recognised as one")
	}
	got, name, err := defrag.ReadLayout(&buf, "l.json", parseAlloc)
	if err != nil {
		t.Fatal(err)
	}
	l.Sort()
	if name.String() != "caching" || !reflect.DeepEqual(got, l) {
		t.Fatalf("round trip changed the layout (allocator %v)", name)
	}
}

func TestLayoutFileErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"gpufrag_layout":1,"capacity_bytes":"x"}`, `offset 40: field "capacity_bytes"`},
		{`{"gpufrag_layout":1,"capacity_bytes":1`, `offset`},
		{`{"gpufrag_layout":2}`, `version 2`},
		{`{"gpufrag_layout":1,"bogus":1}`, `offset 20: field "bogus": unknown field`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"segments":[{"addr":0,"size":4096,"pool":"large","blocks":[{"addr":0,"size":4096,"state":"busy"}]}]}`,
			`segments[0].blocks[0].state`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"segments":[{"addr":0,"size":4096,"pool":"large","blocks":[{"addr":0,"size":2048,"state":"free"}]}]}`,
			`bad layout file`},
		// Issue 28: a capacity of 2^63 − 1 reported "memory classes ... add
		// up to -9223372036833804289" and no field; each byte count is now
		// checked before it is added, naming its field.
		{`{"gpufrag_layout":1,"capacity_bytes":9223372036854775807,"device_free_bytes":9223372036854775807}`,
			`l.json: field "capacity_bytes": 9223372036854775807: want 0 to 1125899906842624 (mem.MaxCapacity, 1 PiB)`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"other_use_bytes":-4611686018427387904}`, `field "other_use_bytes": -4611686018427387904: want 0 to capacity_bytes (4096)`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"max_allocatable_bytes":8192}`, `field "max_allocatable_bytes"`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"device_free_bytes":4000}`,
			`field "device_free_bytes": 4000, but capacity_bytes 4096 − other_use_bytes 0 − the segments' 0 is 4096`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"other_use_bytes":4096,"segments":[{"addr":0,"size":4096,"pool":"large","blocks":[{"addr":0,"size":4096,"state":"free"}]}]}`,
			`field "other_use_bytes": 4096, but capacity_bytes (4096) less the segments (4096) leaves 0`},
		{`{"gpufrag_layout":1,"capacity_bytes":8192,"segments":[{"addr":0,"size":4096,"pool":"large","blocks":[{"addr":0,"size":4096,"state":"free"}]},` +
			`{"addr":8192,"size":8192,"pool":"large","blocks":[{"addr":8192,"size":8192,"state":"free"}]}]}`,
			`field "segments[1].size": 8192: want 1 to the 4096 bytes of capacity_bytes (8192) the segments before it leave`},
		{`{"gpufrag_layout":1,"capacity_bytes":8192,"segments":[{"addr":18446744073709549568,"size":4096,"pool":"large","blocks":[{"addr":18446744073709549568,"size":4096,"state":"free"}]}]}`,
			`field "segments[0].addr": 0xfffffffffffff800 + size 4096 runs past the end of the address space`},
		{`{"gpufrag_layout":1,"capacity_bytes":4096,"segments":[{"addr":0,"size":4096,"pool":"large","blocks":[{"addr":0,"size":4096,"requested":8192,"state":"active"}]}]}`,
			`field "segments[0].blocks[0]": size 4096, requested 8192`},
		// Issue 28, item 5: an allocator spec replay --alloc refuses was
		// accepted, read by its name alone.
		{`{"gpufrag_layout":1,"allocator":"caching:bogus:1","capacity_bytes":4096}`, `field "allocator": allocator "caching:bogus:1": `},
		{`{"gpufrag_layout":1,"allocator":"cudamalloc","capacity_bytes":4096}`, `field "allocator": bad allocator spec: unknown allocator "cudamalloc"`},
	} {
		_, _, err := defrag.ReadLayout(strings.NewReader(c.in), "l.json", parseAlloc)
		if err == nil || !errors.Is(err, defrag.ErrLayoutFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an ErrLayoutFile naming %q", c.in, err, c.want)
		}
	}
}

// FuzzReadLayout: any input gives a layout that passes mem.Layout.Check and
// can be planned, or an ErrLayoutFile error; never a panic.
func FuzzReadLayout(f *testing.F) {
	var buf bytes.Buffer
	_ = defrag.WriteLayout(&buf, benchLayout(f, "caching", 50, 5), "caching")
	f.Add(buf.Bytes())
	f.Add([]byte(`{"gpufrag_layout":1,"capacity_bytes":4096,"segments":[{"addr":0,"size":4096,"pool":"arena","blocks":[{"addr":0,"size":4096,"state":"free"}]}]}`))
	f.Add([]byte(`{"gpufrag_layout":1}`))
	f.Add([]byte(`{"gpufrag_layout":1,"capacity_bytes":9223372036854775807,"device_free_bytes":9223372036854775807}`))
	f.Add([]byte(`{"gpufrag_layout":1,"allocator":"caching:bogus:1","capacity_bytes":4096}`))
	f.Add([]byte(`{"gpufrag_layout":1,"capacity_bytes":8192,"segments":[{"addr":18446744073709549568,"size":4096,"pool":"large","blocks":[{"addr":18446744073709549568,"size":4096,"state":"free"}]}]}`))
	// Issue 28: random bytes after "{", a syntax error in the first kilobytes.
	f.Add([]byte("{\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte(`{"gpufrag_layout":1,"segments":[{hello`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, allocator, err := defrag.ReadLayout(bytes.NewReader(data), "fuzz", parseAlloc)
		if err != nil {
			if !errors.Is(err, defrag.ErrLayoutFile) {
				t.Fatalf("error not wrapping ErrLayoutFile: %v", err)
			}
			return
		}
		if err := l.Check(); err != nil {
			t.Fatalf("accepted a layout that fails Check: %v", err)
		}
		for _, g := range []defrag.Goal{{Kind: defrag.GoalCompact}, {Kind: defrag.GoalFit, Size: 4096}} {
			if _, err := defrag.PlanLayout(l, g, defrag.Options{Allocator: allocator}); err != nil &&
				!errors.Is(err, defrag.ErrGoal) && !errors.Is(err, defrag.ErrLayout) {
				t.Fatalf("plan %v: %v", g, err)
			}
		}
	})
}

// TestLayoutFileDocExample reads the example of docs/json.md's "saved-layout
// format" section: it failed its own validation (its device_free_bytes did
// not add up to the capacity), so a user copying it got an error.
func TestLayoutFileDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### The saved-layout format")
	if !ok {
		t.Fatal(`docs/json.md has no "### The saved-layout format" section`)
	}
	_, example, ok := strings.Cut(section, "```json\n")
	example, _, ok2 := strings.Cut(example, "```")
	if !ok || !ok2 {
		t.Fatal("the saved-layout section has no ```json example")
	}
	l, alloc, err := defrag.ReadLayout(strings.NewReader(example), "docs/json.md example", parseAlloc)
	if err != nil {
		t.Fatal(err)
	}
	if alloc == nil || alloc.Name() != "caching" || len(l.Segments) != 1 || len(l.Segments[0].Blocks) != 3 {
		t.Errorf("example read as allocator %v, %d segments", alloc, len(l.Segments))
	}
}

// TestReadLayoutRandomBytes (issue 28, item 10): random bytes, bare or
// after the start of a layout file, are refused within the first 4 KiB,
// not read to MaxLayoutFile (1 GiB).
func TestReadLayoutRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, _, err := defrag.ReadLayout(r, name, parseAlloc)
		if err != nil && !errors.Is(err, defrag.ErrLayoutFile) {
			t.Errorf("%v does not wrap ErrLayoutFile", err)
		}
		return err
	}, `{"gpufrag_layout": 1, "capacity_bytes": 4096, "segments": [{"`)
}

// parseAlloc is the registry's Parse, as the command line passes it.
func parseAlloc(s string) (alloc.Described, error) { return registry.Parse(s) }
