package testkit

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLockedBuffer: writes from several goroutines all arrive, whole
// (run it with -race: an unlocked buffer fails there).
func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*2 || strings.Count(got, "ab") != 800 {
		t.Errorf("got %d bytes, %d whole writes; want 1600 and 800", len(got), strings.Count(got, "ab"))
	}
}

// TestRepeat: the stream is s over and over, whatever the sizes of the
// reads, and never ends.
func TestRepeat(t *testing.T) {
	r := Repeat("abc")
	var got []byte
	for _, n := range []int{1, 2, 4, 7, 0, 3, 1 << 16} {
		p := make([]byte, n)
		k, err := r.Read(p)
		if k != n || err != nil {
			t.Fatalf("Read of %d bytes: %d, %v", n, k, err)
		}
		got = append(got, p...)
	}
	if want := strings.Repeat("abc", len(got)/3+1)[:len(got)]; string(got) != want {
		t.Errorf("the stream is not abc repeated: starts %q", got[:20])
	}
	if n, err := Repeat("").Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Repeat(\"\"): %d, %v; want 0, EOF", n, err)
	}
}

// TestCounter: it counts what the reader gives and ends the input at
// StopAt, cutting the read that crosses it.
func TestCounter(t *testing.T) {
	c := &Counter{R: strings.NewReader("hello")}
	if b, err := io.ReadAll(c); string(b) != "hello" || err != nil || c.N != 5 {
		t.Errorf("got %q, %v, N = %d; want hello, nil, 5", b, err, c.N)
	}
	c = &Counter{R: Repeat("\x00")}
	p := make([]byte, 1<<20)
	if n, err := c.Read(p[:10]); n != 10 || err != nil || c.N != 10 {
		t.Fatalf("first read: %d, %v, N = %d", n, err, c.N)
	}
	total := int64(10)
	for {
		n, err := c.Read(p)
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil || total > StopAt {
			t.Fatalf("after %d bytes: %v", total, err)
		}
	}
	if total != StopAt || c.N != StopAt {
		t.Errorf("the input ended after %d bytes (N = %d), want %d", total, c.N, StopAt)
	}
}

// TestModuleRoot: the folder found holds this module's go.mod.
func TestModuleRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(ModuleRoot(t), "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module github.com/gpufrag/gpufrag") {
		t.Errorf("ModuleRoot's go.mod: %.40q, %v", b, err)
	}
}
