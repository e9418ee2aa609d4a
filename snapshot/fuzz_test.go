package snapshot_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
)

// FuzzRead checks that Read never panics and that every failure is a
// *snapshot.Error, and that what it accepts converts to a layout.
//
//	go test ./snapshot -run '^$' -fuzz FuzzRead -fuzztime 60s
func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.pickle"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(encode(base()))
	// Issue 13: small structured snapshots (every field an 8-byte integer
	// for the fuzzer to flip), a negative device, shared references, a
	// torch.save ZIP header and zeros.
	for _, spec := range snaptest.Seeds {
		f.Add(snaptest.Encode(snaptest.FromSpec(spec)))
	}
	f.Add(encode(with("segments.0.device", -1)))
	f.Add(sharedRefs(50, 20))
	f.Add([]byte("PK\x03\x04\x14\x00\x00\x00"))
	f.Add(make([]byte, 16))
	// Issue 28: a pickle protocol we do not read.
	f.Add([]byte("\x80\x06}\x94."))
	f.Add([]byte("\x80\x04\xe4\x1c\x9a\x07\x51\xd2\x33\x8e\x01\x7f\x00\xc1"))        // PROTO, random bytes
	f.Add(append([]byte("\x80\x04B\x00\x00\x00\x01"), make([]byte, 300)...))         // a 16 MiB BINBYTES
	f.Add(encode(atTop(math.MaxUint64 - 2*mib + 1)))                                 // a segment ending at 2^64
	f.Add(encode(withTrace(ev("alloc", 1<<40, 4<<60, 5))))                           // a 4 EiB alloc
	f.Add(encode(withTrace(ev("alloc", 1<<40, 512, 9), ev("alloc", 1<<40, 512, 5)))) // time steps back
	f.Add(encode(withTrace(ev("free_completed", 0x7f20c386ba00, 512, 5))))           // a free in no segment
	f.Add(encode(append(od{{1, []any{}}}, base()...)))                               // a key that is not a str
	f.Add(encode(with("segments.0.blocks.0.frames", []any{od{{"filename", "/home/caf\xed\xb3\xa9/m.py"}, {"line", 7}, {"name", "f"}}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data)
	})
}

// FuzzReadSpec is FuzzRead over the structured inputs of snaptest.FromSpec:
// every input is a snapshot-shaped pickle, so mutations reach the
// validation of values rather than the pickle decoder.
//
//	go test ./snapshot -run '^$' -fuzz FuzzReadSpec -fuzztime 60s
func FuzzReadSpec(f *testing.F) {
	for _, spec := range snaptest.Seeds {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		checkRead(t, snaptest.Encode(snaptest.FromSpec(spec)))
	})
}

func checkRead(t *testing.T, data []byte) {
	s, err := snapshot.ReadBytes(data, "fuzz")
	if err != nil {
		var e *snapshot.Error
		if !errors.As(err, &e) || e.Err == nil {
			t.Fatalf("error %v (%T) is not a *snapshot.Error with a kind", err, err)
		}
		// A pickle's bad field, of the wrong type or refused by
		// Validate, is named with its offset in the file.
		if errors.Is(err, snapshot.ErrField) && len(data) > 0 && data[0] != '{' && (e.Offset < 0 || e.Offset >= int64(len(data))) {
			t.Fatalf("field error without an offset in the file's %d bytes: %v", len(data), err)
		}
		return
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Read returned a snapshot that fails Validate: %v", err)
	}
	for d := 0; d < 2; d++ {
		_ = s.Layout(d, 1<<40).String()
	}
}
