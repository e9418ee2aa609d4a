package pickle_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// FuzzDecode checks that no input panics, hangs or escapes the error type:
// every failure is a *pickle.Error with a kind, at an offset inside the
// input, and never the recover() of last resort.
//
//	go test ./snapshot/pickle -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.pickle"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x80\x04]\x94(K\x01K\x02e]h\x00a."))
	// Issue 13: a run of MEMOIZE opcodes, a ZIP header (torch.save), zeros.
	f.Add([]byte("\x80\x04N" + strings.Repeat("\x94", 64) + "."))
	f.Add([]byte("PK\x03\x04\x14\x00\x00\x00"))
	f.Add(make([]byte, 16))
	// Issue 28: a protocol we do not read.
	f.Add([]byte("\x80\x06}\x94."))
	// A lone surrogate (a file name os.fsdecode made).
	f.Add([]byte("\x80\x04\x95\x15\x00\x00\x00\x00\x00\x00\x00\x8c\x11/home/caf\xed\xb3\xa9/x.py\x94."))
	// PROTO, then random bytes (CheckPrefix), and a BINBYTES declaring
	// more than MaxBytesObject.
	f.Add([]byte("\x80\x04\xe4\x1c\x9a\x07\x51\xd2\x33\x8e\x01\x7f\x00\xc1"))
	f.Add([]byte("\x80\x04B\x00\x00\x10\x00\x9c\x42\x17"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := &pickle.Options{MaxDepth: 200, MaxBytesObject: 1 << 10}
		// What CheckPrefix refuses in the first half, the whole input
		// fails with, the same error.
		perr := pickle.CheckPrefix(data[:len(data)/2], int64(len(data)), opts)
		if _, derr := pickle.DecodeBytes(data, opts); perr != nil && (derr == nil || derr.Error() != perr.Error()) {
			t.Fatalf("CheckPrefix of %d bytes: %v; DecodeBytes: %v", len(data)/2, perr, derr)
		}
		_, err := pickle.DecodeBytes(data, &pickle.Options{MaxDepth: 200})
		// Streamed from a reader of unknown size, read a few bytes at a
		// time, with a Stream on "a" (so that lists of lists under a
		// top-level key stream): a pickle that decodes whole decodes
		// streamed, and one that fails, fails (a truncation may show at
		// another offset, since the stream's end is not known before).
		stream := &pickle.Stream{Key: "a", ForgetLists: true, Items: func(*pickle.Streamed, []pickle.Item) error { return nil }}
		_, serr := pickle.Decode(iotest.HalfReader(bytes.NewReader(data)), &pickle.Options{MaxDepth: 200, Stream: stream})
		if (err == nil) != (serr == nil) {
			t.Fatalf("decoded whole: %v; streamed: %v", err, serr)
		}
		if err == nil {
			if serr := pickle.CheckStart(data); serr != nil {
				t.Fatalf("decodes, but CheckStart refuses it: %v", serr)
			}
			return
		}
		var e *pickle.Error
		if !errors.As(err, &e) || e.Err == nil {
			t.Fatalf("error %v (%T) is not a *pickle.Error with a kind", err, err)
		}
		if e.Offset < 0 || e.Offset > int64(len(data)) {
			t.Fatalf("offset %d outside the %d-byte input: %v", e.Offset, len(data), err)
		}
		if strings.Contains(e.Msg, "internal error") {
			t.Fatalf("recovered panic: %v", err)
		}
	})
}
