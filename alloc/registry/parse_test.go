package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
)

// TestParse: good specs give their name, arguments and text as written;
// bad ones an ErrBadSpec naming the bad part, the same error New gives, so
// checking a spec without a device and building it cannot disagree.
func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, name, args, text string }{
		{"caching", "caching", "", "caching"},
		{"  Caching:expandable_segments:True ", "caching", "expandable_segments:True", "Caching:expandable_segments:True"},
		{"caching:max_split_size_mb:128,roundup_power2_divisions:4", "caching", "max_split_size_mb:128,roundup_power2_divisions:4",
			"caching:max_split_size_mb:128,roundup_power2_divisions:4"},
		{"vmm:64KiB", "vmm", "64KiB", "vmm:64KiB"},
		{"SIZECLASS:8MiB/64MiB", "sizeclass", "8MiB/64MiB", "SIZECLASS:8MiB/64MiB"},
		{"direct", "direct", "", "direct"},
	} {
		s, err := registry.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if s.Name() != tc.name || s.Args() != tc.args || s.String() != tc.text || s.Kind().Name != tc.name {
			t.Errorf("Parse(%q) = name %q args %q text %q kind %q; want %q %q %q", tc.in, s.Name(), s.Args(), s.String(),
				s.Kind().Name, tc.name, tc.args, tc.text)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `unknown allocator "" (known: ` + strings.Join(registry.Names(), ", ") + ")"},
		{"tlsf:4", `unknown allocator "tlsf"`},
		{"caching:bogus:1", `allocator "caching:bogus:1": `},
		{"vmm:3", `allocator "vmm:3": `},
		{"vmm:100KiB", "multiple of 64KiB"},
		{"sizeclass:big", `allocator "sizeclass:big"`},
		{"direct:x", `allocator "direct:x"`},
		{"arena:2", `allocator "arena:2"`},
		{"async:release_threshold:lots", `allocator "async:release_threshold:lots"`},
	} {
		_, err := registry.Parse(tc.in)
		if !errors.Is(err, alloc.ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v; want an ErrBadSpec containing %q", tc.in, err, tc.want)
			continue
		}
		_, nerr := registry.New(tc.in, mem.MustDevice(mem.GiB, 0))
		if nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("New(%q): %v; want Parse's error %v", tc.in, nerr, err)
		}
	}
}

// TestKindOf looks at the name only, so a spec with bad arguments still
// names its kind, and an unknown name gets Parse's message.
func TestKindOf(t *testing.T) {
	k, err := registry.KindOf(" Arena:not-a-size")
	if err != nil || k.Name != "arena" {
		t.Errorf("KindOf(arena with bad args) = %q, %v", k.Name, err)
	}
	_, err = registry.KindOf("nope:1")
	_, perr := registry.Parse("nope:1")
	if !errors.Is(err, alloc.ErrBadSpec) || perr == nil || err.Error() != perr.Error() {
		t.Errorf("KindOf(nope) = %v; want Parse's error %v", err, perr)
	}
}

// TestCapsDeclared builds every Kind with its defaults, its example and a
// few other settings on a small device and compares the declared
// capabilities (Spec.Caps) with the optional interfaces the allocator
// really implements (CapsOf), so a declaration cannot drift from the code.
// Declared GrowUnits are 0 (they come from the arguments).
func TestCapsDeclared(t *testing.T) {
	specs := []string{"vmm:64KiB", "vmm:page:1GiB,max_range:4GiB", "caching:expandable_segments:True", "async:release_threshold:max"}
	for _, k := range registry.Kinds {
		specs = append(specs, k.Name, k.Example)
		if k.Caps.GrowUnit != 0 {
			t.Errorf("%s: declared GrowUnit %d; it comes from the arguments", k.Name, k.Caps.GrowUnit)
		}
	}
	seen := alloc.Caps{}
	for _, s := range specs {
		sp, err := registry.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		a, err := sp.New(mem.MustDevice(8*mem.GiB, 0))
		if err != nil {
			t.Fatalf("New(%q): %v", s, err)
		}
		if got, want := sp.Caps(), alloc.CapsOf(a); got != want {
			t.Errorf("%s: declared %+v, the allocator implements %+v", s, got, want)
		}
		c := sp.Caps()
		seen.Relocates = seen.Relocates || c.Relocates
		seen.GrowsInPlace = seen.GrowsInPlace || c.GrowsInPlace
		seen.Stamps = seen.Stamps || c.Stamps
		seen.RecordsTrips = seen.RecordsTrips || c.RecordsTrips
		seen.Syncs = seen.Syncs || c.Syncs
	}
	// Each capability is declared by some kind, so the comparison above
	// tested it both ways.
	if want := (alloc.Caps{Relocates: true, GrowsInPlace: true, Stamps: true, RecordsTrips: true, Syncs: true}); seen != want {
		t.Errorf("capabilities declared by some kind: %+v, want every one", seen)
	}
	if c := mustParse(t, "vmm:64KiB").Caps(); c.GrowUnit != 64*mem.KiB {
		t.Errorf("vmm:64KiB grows by %d", c.GrowUnit)
	}
}

// TestPyTorchConf: the caching allocator is selected by its arguments,
// async by the backend switch, the others not at all.
func TestPyTorchConf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		conf string
		ok   bool
	}{
		{"caching", "", true},
		{"caching:expandable_segments:True,max_split_size_mb:128", "expandable_segments:True,max_split_size_mb:128", true},
		{"async", "backend:cudaMallocAsync", true},
		{"async:release_threshold:1GiB", "backend:cudaMallocAsync", true},
		{"sizeclass", "", false},
		{"arena:0.5", "", false},
		{"direct", "", false},
		{"vmm:2MiB", "", false},
	} {
		conf, ok := mustParse(t, tc.in).PyTorchConf()
		if conf != tc.conf || ok != tc.ok {
			t.Errorf("%s: PyTorchConf = %q, %v; want %q, %v", tc.in, conf, ok, tc.conf, tc.ok)
		}
	}
}

// TestZeroSpec: the zero Spec names nothing, can do nothing and builds
// nothing, with an error instead of a panic.
func TestZeroSpec(t *testing.T) {
	var s registry.Spec
	if s.Name() != "" || s.String() != "" || s.Caps() != (alloc.Caps{}) || s.Kind().Name != "" {
		t.Errorf("zero Spec: %q %q %+v", s.Name(), s.String(), s.Caps())
	}
	if _, ok := s.PyTorchConf(); ok {
		t.Error("zero Spec: PyTorch selects it")
	}
	if _, err := s.New(mem.MustDevice(mem.GiB, 0)); !errors.Is(err, alloc.ErrBadSpec) {
		t.Errorf("zero Spec New: %v", err)
	}
}

func mustParse(t *testing.T, s string) registry.Spec {
	t.Helper()
	sp, err := registry.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestMapsPages holds MapsPages to the layouts the allocators produce:
// every segment expandable (VMM-backed) exactly when MapsPages says so.
func TestMapsPages(t *testing.T) {
	specs := []string{"caching:expandable_segments:True", "caching:expandable_segments:False", "vmm:64KiB"}
	for _, k := range registry.Kinds {
		specs = append(specs, k.Name, k.Example)
	}
	both := map[bool]bool{}
	for _, s := range specs {
		sp, err := registry.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		a, err := sp.New(mem.MustDevice(8*mem.GiB, 0))
		if err != nil {
			t.Fatalf("New(%q): %v", s, err)
		}
		for _, size := range []int64{4 * mem.KiB, 3 * mem.MiB, 64 * mem.MiB} {
			if _, err := a.Alloc(size, 0); err != nil {
				t.Fatalf("%s: Alloc(%d): %v", s, size, err)
			}
		}
		l := a.Layout()
		if len(l.Segments) == 0 {
			t.Fatalf("%s: no segments after three allocations", s)
		}
		all := true
		for _, seg := range l.Segments {
			all = all && seg.Expandable
		}
		if all != sp.MapsPages() {
			t.Errorf("%s: MapsPages %v, but every segment expandable: %v", s, sp.MapsPages(), all)
		}
		both[all] = true
	}
	if !both[true] || !both[false] {
		t.Errorf("specs tested only one answer: %v", both)
	}
}
