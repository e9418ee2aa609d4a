package strategy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	allocspec "github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
)

// TestParseSpec: what a spec is, read without an allocator, and the
// errors of bad specs (the texts Parse gave before ParseSpec existed).
func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in     string
		name   string
		family Family
		block  int
		page   int64
		move   bool
		whole  bool
	}{
		{"contiguous-max", "contiguous-max", Contiguous, 0, 0, true, true},
		{" Contiguous-Max:POW2 ", "contiguous-max:pow2", Contiguous, 0, 0, true, true},
		{"contiguous-max:oracle", "contiguous-max:oracle", Contiguous, 0, 0, true, true},
		{"contiguous-grow", "contiguous-grow", Contiguous, 0, 0, true, false},
		{"paged:16", "paged:16", Paged, 16, 0, false, false},
		{"PAGED: 32", "paged:32", Paged, 32, 0, false, false},
		{"vmm:2MiB", "vmm:2MiB", VMM, 0, 2 * mem.MiB, false, false},
		{"vmm:65536", "vmm:64KiB", VMM, 0, 64 * mem.KiB, false, false},
	} {
		s, err := ParseSpec(tc.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tc.in, err)
			continue
		}
		if s.String() != tc.name || s.Family() != tc.family || s.BlockTokens() != tc.block || s.Page() != tc.page ||
			s.Movable() != tc.move || s.Reserves() != tc.whole {
			t.Errorf("ParseSpec(%q) = %s %s block %d page %d movable %v reserves %v; want %s %s %d %d %v %v", tc.in,
				s, s.Family(), s.BlockTokens(), s.Page(), s.Movable(), s.Reserves(),
				tc.name, tc.family, tc.block, tc.page, tc.move, tc.whole)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `unknown strategy "" (known: contiguous-max, `},
		{"ring:4", `unknown strategy "ring"`},
		{"contiguous", `unknown strategy "contiguous"`},
		{"contiguous-max:", `"contiguous-max:": variant "" (want pow2 or oracle)`},
		{"contiguous-max:best", `variant "best"`},
		{"contiguous-grow:2", `contiguous-grow takes no arguments, got "2"`},
		{"paged", `"paged": block size "" (want paged:B, B tokens in 1..65536, e.g. paged:16)`},
		{"paged:0", `block size "0"`},
		{"paged:-1", `block size "-1"`},
		{"paged:65537", `block size "65537"`},
		{"vmm", `"vmm": page size missing (want vmm:P, e.g. vmm:2MiB)`},
		{"vmm:abc", `"vmm:abc": page size "abc" (want bytes such as 2MiB)`},
		{"vmm:0", `page size "0"`},
	} {
		_, err := ParseSpec(tc.in)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q): %v; want an ErrBadSpec containing %q", tc.in, err, tc.want)
		}
		// Parse on a valid Env gives the same error.
		if _, perr := Parse(tc.in, newEnv(t, "vmm:2MiB", mem.GiB, 64*mem.MiB)); perr == nil || err == nil || perr.Error() != err.Error() {
			t.Errorf("Parse(%q): %v; want ParseSpec's %v", tc.in, perr, err)
		}
	}
}

// TestSpecDeclarations builds every strategy and checks what its Spec
// says against what the built strategy is: the canonical name, Movable,
// Reserving's whole flag, the prefix cache of the paged family, so the
// queries callers use instead of the name cannot drift from the code.
func TestSpecDeclarations(t *testing.T) {
	for _, in := range []string{"contiguous-max", "contiguous-max:pow2", "contiguous-max:oracle", "contiguous-grow",
		"paged:16", "paged:1", "vmm:2MiB", "vmm:64KiB"} {
		s, err := ParseSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		a := "caching"
		if d := s.DefaultAlloc(); d != "" {
			a = d
		}
		st, err := Parse(in, newEnv(t, a, mem.GiB, 64*mem.MiB))
		if err != nil {
			t.Fatalf("Parse(%q) on %s: %v", in, a, err)
		}
		_, movable := st.(Movable)
		_, prefix := st.(PrefixCaching)
		whole := false
		if r, ok := st.(Reserving); ok {
			_, whole = r.ReservedTokens(Request{Prompt: 10, MaxOutput: 10, TrueOutput: 5, N: 1})
		}
		if st.Name() != s.String() || movable != s.Movable() || whole != s.Reserves() || prefix != (s.Family() == Paged) {
			t.Errorf("%s: built %s movable %v whole %v prefix %v; Spec says %s %v %v family %s",
				in, st.Name(), movable, whole, prefix, s, s.Movable(), s.Reserves(), s.Family())
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// pairAllocs are allocator specs whose text is their canonical Spec(), so
// CheckPair's message and Parse's name the allocator alike.
var pairAllocs = []string{"caching", "caching:expandable_segments:True", "sizeclass:8MiB/64MiB/512MiB", "arena:0.5",
	"async", "direct", "vmm:2MiB", "vmm:64KiB", "vmm:1GiB"}

// TestCheckPair crosses strategies with allocators: every impossible pair
// gets the one message from CheckPair and the same from Parse on the built
// allocator (judged by what it implements), and every possible pair builds.
func TestCheckPair(t *testing.T) {
	bad := 0
	for _, kv := range []string{"contiguous-max", "contiguous-grow", "paged:16", "vmm:2MiB", "vmm:64KiB", "vmm:4MiB"} {
		ks, err := ParseSpec(kv)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pairAllocs {
			as, err := allocspec.Parse(a)
			if err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, a, 4*mem.GiB, 64*mem.MiB)
			if env.Alloc.Spec() != a {
				t.Fatalf("%s: built allocator's Spec() is %q", a, env.Alloc.Spec())
			}
			cerr := CheckPair(ks, as)
			_, perr := Parse(kv, env)
			vmmPage := ks.Family() == VMM && strings.HasPrefix(a, "vmm:") && a[len("vmm:"):] == mem.FormatBytesExact(ks.Page())
			switch {
			case ks.Family() != VMM || vmmPage:
				if cerr != nil || perr != nil {
					t.Errorf("%s on %s: CheckPair %v, Parse %v; want both nil", kv, a, cerr, perr)
				}
			default:
				bad++
				want := "bad strategy spec: kv " + kv + " maps its own pages and needs an allocator that grows blocks in place by " +
					kv[len("vmm:"):] + ", such as " + kv + "; alloc " + a + " "
				if !errors.Is(cerr, ErrBadSpec) || !strings.HasPrefix(cerr.Error(), want) {
					t.Errorf("%s on %s: CheckPair %v; want %q...", kv, a, cerr, want)
				}
				if perr == nil || cerr == nil || perr.Error() != cerr.Error() {
					t.Errorf("%s on %s: Parse %v; want CheckPair's %v", kv, a, perr, cerr)
				}
			}
		}
	}
	if bad != 3*len(pairAllocs)-2 {
		t.Errorf("%d impossible pairs, want %d", bad, 3*len(pairAllocs)-2)
	}
	c := CheckPair(mustSpec(t, "vmm:2MiB"), mustAlloc(t, "vmm:64KiB"))
	if c == nil || !strings.HasSuffix(c.Error(), "; alloc vmm:64KiB grows them by 64KiB") {
		t.Errorf("page mismatch: %v", c)
	}
	c = CheckPair(mustSpec(t, "vmm:2MiB"), mustAlloc(t, "direct"))
	if c == nil || !strings.HasSuffix(c.Error(), "; alloc direct does not grow blocks in place") {
		t.Errorf("no grower: %v", c)
	}
}

// TestAllocsFor: the pairing rule of simulate's and advise's sweeps, over
// parsed specs (none when no allocator fits: the caller picks the
// strategy's DefaultAlloc).
func TestAllocsFor(t *testing.T) {
	for _, tc := range []struct {
		kv     string
		allocs []string
		want   []string
	}{
		{"paged:16", []string{"caching", "vmm:2MiB", "direct"}, []string{"caching", "vmm:2MiB", "direct"}},
		{"contiguous-grow", []string{"caching"}, []string{"caching"}},
		{"vmm:2MiB", []string{"caching", "sizeclass"}, nil},
		{"vmm:2MiB", []string{"caching", "vmm:2MiB", "async"}, []string{"vmm:2MiB"}},
		// Every allocator that grows by the page, whatever its spelling.
		{"vmm:2MiB", []string{"vmm", "vmm:2048KiB", "vmm:64KiB", "VMM:2MiB,max_range:16GiB"}, []string{"vmm", "vmm:2048KiB", "VMM:2MiB,max_range:16GiB"}},
		// A page no listed allocator has.
		{"vmm:64KiB", []string{"vmm:2MiB"}, nil},
	} {
		allocs := make([]allocspec.Spec, len(tc.allocs))
		for i, a := range tc.allocs {
			allocs[i] = mustAlloc(t, a)
		}
		var got []string
		for _, a := range AllocsFor(mustSpec(t, tc.kv), allocs) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("AllocsFor(%q, %q) = %q, want %q", tc.kv, tc.allocs, got, tc.want)
		}
	}
}

// TestSpecText: a Spec reads and writes its canonical text in documents
// (encoding.TextMarshaler), so a plan round-trips through YAML and JSON.
func TestSpecText(t *testing.T) {
	for in, want := range map[string]string{"paged:16": "paged:16", " PAGED:32 ": "paged:32", "vmm:2097152": "vmm:2MiB",
		"contiguous-max:POW2": "contiguous-max:pow2", "contiguous-grow": "contiguous-grow"} {
		var s Spec
		if err := s.UnmarshalText([]byte(in)); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		b, err := s.MarshalText()
		if err != nil || string(b) != want {
			t.Errorf("%q: MarshalText %q, %v; want %q", in, b, err, want)
		}
		if s != MustParseSpec(want) {
			t.Errorf("%q and %q parse to different Specs", in, want)
		}
	}
	var s Spec
	if err := s.UnmarshalText([]byte("paged:0")); !errors.Is(err, ErrBadSpec) || !s.IsZero() {
		t.Errorf("paged:0: %v, %v; want ErrBadSpec and the zero Spec", err, s)
	}
	if PagedSpec(16) != MustParseSpec("paged:16") {
		t.Error("PagedSpec(16) is not paged:16")
	}
}

func mustSpec(t *testing.T, s string) Spec {
	t.Helper()
	sp, err := ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func mustAlloc(t *testing.T, s string) allocspec.Spec {
	t.Helper()
	sp, err := allocspec.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
