package progress

import (
	"bytes"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestNonTerminalIsNoOp(t *testing.T) {
	before := runtime.NumGoroutine()
	var buf bytes.Buffer
	b := New(&buf, 10, "replay")
	if b.Enabled() {
		t.Fatal("bar on a bytes.Buffer is enabled")
	}
	for range 10 {
		b.Increment()
	}
	b.Add(3)
	b.SetCurrent(5)
	b.Done()
	b.Done()
	if buf.Len() != 0 {
		t.Fatalf("no-op bar wrote %q", buf.String())
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("no-op bar left goroutines: %d -> %d", before, after)
	}
}

func TestRegularFileIsNoOp(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("regular file reported as terminal")
	}
	b := New(f, 3, "x")
	b.Increment()
	b.Done()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Fatalf("wrote %d bytes to a regular file", st.Size())
	}
}

func TestNilBar(t *testing.T) {
	var b *Bar
	b.Increment()
	b.Add(2)
	b.SetCurrent(1)
	b.Done()
	if b.Enabled() {
		t.Fatal("nil bar enabled")
	}
}

// lockedBuffer is a bytes.Buffer safe for mpb's rendering goroutine.
type lockedBuffer = testkit.LockedBuffer

func TestRenderingBar(t *testing.T) {
	for _, total := range []int64{20, 0} {
		var buf lockedBuffer
		b := newBar(&buf, total, "replay", true)
		if !b.Enabled() {
			t.Fatal("forced bar not enabled")
		}
		for range 7 {
			b.Increment()
		}
		b.Add(3)
		done := make(chan struct{})
		go func() { b.Done(); b.Done(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("total %d: Done did not return", total)
		}
		out := buf.String()
		if !strings.Contains(out, "replay") || !strings.Contains(out, "10") {
			t.Fatalf("total %d: output lacks label or count: %q", total, out)
		}
	}
}

// A negative total draws a spinner with its label and no count.
func TestRenderingStage(t *testing.T) {
	var buf lockedBuffer
	b := newBar(&buf, -1, "analyze", true)
	b.Increment()
	b.Done()
	out := buf.String()
	if !strings.Contains(out, "analyze") || strings.Contains(out, " 1 ") || strings.Contains(out, " 0 ") {
		t.Fatalf("stage bar: want its label and no count: %q", out)
	}
}

// A byte counter of unknown total draws its label, the bytes read with
// their unit and their rate since the start it was given (which may be
// before the bar), and nothing on a writer that is not a terminal.
func TestRenderingBytes(t *testing.T) {
	var buf lockedBuffer
	b := newBytesBar(&buf, "read stdin", time.Now().Add(-2*time.Second), true)
	b.Add(3 << 20)
	b.Done()
	out := buf.String()
	for _, want := range []string{"read stdin", "3.0 MiB", "1.5 MiB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("bytes bar lacks %q: %q", want, out)
		}
	}
	var plain bytes.Buffer
	nb := NewBytes(&plain, "read stdin", time.Now())
	nb.Add(3 << 20)
	nb.Done()
	if nb.Enabled() || plain.Len() != 0 {
		t.Errorf("bytes bar on a bytes.Buffer: enabled %v, wrote %q", nb.Enabled(), plain.String())
	}
}
