package testkit

import (
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
