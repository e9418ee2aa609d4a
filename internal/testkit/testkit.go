// Package testkit holds helpers that tests in several packages share, so
// that each is written once (issue 26: a locked buffer was written in five
// test files, an endless reader and a counting one in four): LockedBuffer,
// Repeat (an endless stream, /dev/zero among them) and Counter (the bytes a
// reader under test took, its input ended at 16 MiB). Tests only: no
// package outside a _test.go file imports it, but internal/untrusted/loctest,
// itself a helper of tests.
package testkit

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe for concurrent use: a daemon's or a
// subprocess's log written by one goroutine and read by the test's.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
