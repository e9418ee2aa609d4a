package loctest

import (
	"bufio"
	"flag"
	"io"
	"os"
	"testing"
)

// The flags of TestWriteRandom.
var (
	out    = flag.String("out", "", "write the random stream to this file (TestWriteRandom)")
	prefix = flag.String("prefix", "", "the stream's prefix")
	size   = flag.Int64("size", 100_000_000, "bytes of random data after the prefix")
	seed   = flag.Uint64("seed", 1, "the stream's seed")
)

// TestWriteRandom writes a file of Random's stream, for measuring a
// command on it by hand (issue 28 measured every command on 100 MB):
//
//	go test ./internal/untrusted/loctest -run TestWriteRandom -out /tmp/rj.bin -prefix '{'
//	/usr/bin/time -v gpufrag defrag /tmp/rj.bin
//
// Without -out it does nothing.
func TestWriteRandom(t *testing.T) {
	if *out == "" {
		t.Skip("no -out")
	}
	f, err := os.Create(*out)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := io.Copy(w, io.LimitReader(Random(*seed, *prefix), int64(len(*prefix))+*size)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
