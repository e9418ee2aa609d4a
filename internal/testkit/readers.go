package testkit

import "io"

// Repeat returns an endless stream of s, repeated (Repeat("\x00") is
// /dev/zero; Repeat("x") a line that never ends): the input of tests that
// hold a reader to refusing early or stopping at a limit. Every Read fills
// p whole and goes on where the last one stopped; Repeat("") is empty.
func Repeat(s string) io.Reader {
	if s == "" {
		return eof{}
	}
	return &repeat{s: s}
}

type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }

type repeat struct {
	s  string
	at int // the offset in s where the next Read starts
}

func (r *repeat) Read(p []byte) (int, error) {
	for n := 0; n < len(p); {
		c := copy(p[n:], r.s[r.at:])
		n += c
		r.at = (r.at + c) % len(r.s)
	}
	return len(p), nil
}

// StopAt is where a Counter ends its input (16 MiB): far above what any
// reader under test may take, so that one that reads on to a size limit
// (or for ever) fails its test in well under a second instead of hanging.
const StopAt = 16 << 20

// Counter counts the bytes read through it (N), and ends the input with
// io.EOF after StopAt bytes.
type Counter struct {
	R io.Reader
	N int64
}

func (c *Counter) Read(p []byte) (int, error) {
	if c.N >= StopAt {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), StopAt-c.N)]
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
