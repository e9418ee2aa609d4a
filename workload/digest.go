// Digests: a trace read once, with the SHA-256 of its file taken as it is
// read. See doc.go for the overview.

package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// ReadDigest is Read that also returns the SHA-256, in hex, of r's whole
// content: the one way a command reads a trace it must name by content
// (advise's inputs, simulate's plan). The digest is taken as the reader
// reads, so that an input refused at its first bytes (/dev/zero) is not
// hashed to its end first; what follows the rows the reader kept (past
// ReadOptions.MaxRows) is hashed after.
func ReadDigest(r io.Reader, name string, f Format, opts ReadOptions) (*Trace, string, error) {
	var t *Trace
	sum, err := digest(r, name, -1, func(r io.Reader) (err error) {
		t, err = Read(r, name, f, opts)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return t, sum, nil
}

// ReadBenchDigest is ReadBench that also returns the SHA-256, in hex, of
// r's whole content (calib names a benchmark file by it). What follows the
// text ReadBench reads is hashed too, bounded as ReadBench is
// (MaxBenchBytes).
func ReadBenchDigest(r io.Reader, name string) ([]*BenchResult, string, error) {
	var runs []*BenchResult
	sum, err := digest(r, name, MaxBenchBytes, func(r io.Reader) (err error) {
		runs, err = ReadBench(r, name)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return runs, sum, nil
}

// digest runs read on r through a hash, then hashes the rest of r (at most
// limit bytes; all of it when limit < 0) and returns the hex digest.
func digest(r io.Reader, name string, limit int64, read func(io.Reader) error) (string, error) {
	h := sha256.New()
	if err := read(io.TeeReader(r, h)); err != nil {
		return "", err
	}
	rest := r
	if limit >= 0 {
		rest = io.LimitReader(r, limit)
	}
	if _, err := io.Copy(h, rest); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
