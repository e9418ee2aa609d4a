package analysis

import (
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// TestStackTable: a value is computed once per distinct stack, whether
// two blocks share one frames list or hold equal lists of their own (as
// PyTorch writes them: one list per allocation), and again for a stack
// that differs in any field of any frame.
func TestStackTable(t *testing.T) {
	calls := 0
	tab := newStackTable(func(frames []snapshot.Frame) int { calls++; return len(frames) })
	stack := []snapshot.Frame{{Filename: "/srv/app/model.py", Line: 12, Name: "forward"}, {Filename: "/srv/app/main.py", Line: 3, Name: "main"}}
	copyOf := func(f []snapshot.Frame) []snapshot.Frame { return append([]snapshot.Frame(nil), f...) }
	tab.get(stack)
	tab.get(stack)
	tab.get(copyOf(stack))
	if calls != 1 {
		t.Fatalf("one stack, three lookups (one list shared, one equal copy): %d computations, want 1", calls)
	}
	for i, change := range []func(f []snapshot.Frame){
		func(f []snapshot.Frame) { f[1].Line = 4 },
		func(f []snapshot.Frame) { f[0].Name = "backward" },
		func(f []snapshot.Frame) { f[1].Filename = "/srv/app/other.py" },
	} {
		f := copyOf(stack)
		change(f)
		tab.get(f)
		if calls != i+2 {
			t.Fatalf("change %d: %d computations, want %d", i, calls, i+2)
		}
	}
	if got := tab.get(stack[:1]); got != 1 || calls != 5 {
		t.Fatalf("a prefix of a known list: got %d after %d computations, want 1 after 5", got, calls)
	}
}
