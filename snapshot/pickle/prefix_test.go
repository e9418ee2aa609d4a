package pickle_test

import (
	"bytes"
	"errors"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Random bytes after a PROTO are refused within PrefixLen (issue 28 item
// 10: the whole input, up to 1 GiB, was read first). Seeds that reach a
// BINBYTES of a plausible length need MaxBytesObject, which the snapshot
// reader sets; without it they may read on, so the check is with it.
func TestDecodeRefusesRandomAfterProtoEarly(t *testing.T) {
	for seed := range uint64(1000) {
		// PROTO 4, random bytes up to PrefixLen+1 (the prefix and the
		// byte that says the input goes on), then zeros, which must not
		// be read. A 4 MiB cap makes the test fail fast without the check.
		z := &testkit.Counter{R: testkit.Repeat("\x00")}
		in := io.MultiReader(strings.NewReader("\x80\x04"), io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 28}), pickle.PrefixLen-1), z)
		_, err := pickle.Decode(in, &pickle.Options{MaxBytesObject: 1 << 20, MaxInputBytes: 4 << 20})
		var e *pickle.Error
		if !errors.As(err, &e) {
			t.Fatalf("seed %d: got %v, want a *pickle.Error", seed, err)
		}
		if z.N > 0 || e.Offset > pickle.PrefixLen {
			t.Fatalf("seed %d: read %d bytes past the prefix, refused at offset %d (%v)", seed, z.N, e.Offset, err)
		}
	}
}

// What CheckPrefix refuses in a prefix, DecodeBytes refuses in the whole
// input with the same error; what it lets pass it passes for every length
// of the same prefix.
func TestCheckPrefixAgreesWithDecoder(t *testing.T) {
	opts := &pickle.Options{MaxBytesObject: 64}
	for _, c := range []struct {
		in   string
		kind error
		frag string
	}{
		{"\x80\x04\xff", pickle.ErrOpcode, "unknown (0xff)"},
		{"\x80\x04\x80\x06", pickle.ErrMalformed, "pickle protocol 6"},
		{"\x80\x04h\x05", pickle.ErrMalformed, "memo index 5"},
		{"\x80\x04a", pickle.ErrMalformed, "stack underflow"},
		// The part of a string that is there is not UTF-8.
		{"\x80\x04X\x00\x01\x00\x00ab\xff", pickle.ErrMalformed, "UTF-8"},
		// A bytes object longer than MaxBytesObject.
		{"\x80\x04B\x00\x01\x00\x00", pickle.ErrLimit, "MaxBytesObject"},
		// An integer past 64 bits in its first bytes.
		{"\x80\x04\x8b\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07", pickle.ErrUnsupported, "integer too large"},
		// A declared length longer than the whole input.
		{"\x80\x04X\x00\x00\x01\x00", pickle.ErrLength, "exceeds remaining input"},
		{"\x80\x04N.N", pickle.ErrMalformed, "data after STOP"},
	} {
		total := int64(len(c.in) + 1000)
		full := append([]byte(c.in), bytes.Repeat([]byte{'N'}, 1000)...)
		err := pickle.CheckPrefix([]byte(c.in), total, opts)
		if err == nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("CheckPrefix(%q): got %v, want %v with %q", c.in, err, c.kind, c.frag)
			continue
		}
		_, derr := pickle.DecodeBytes(full, opts)
		if derr == nil || derr.Error() != err.Error() {
			t.Errorf("%q: DecodeBytes says %v, CheckPrefix %v", c.in, derr, err)
		}
	}
	// Prefixes of valid pickles pass: every one of the fixtures', one in
	// 1021 of the real snapshots' first PrefixLen bytes.
	files, _ := filepath.Glob(filepath.Join("testdata", "plain_p*.pickle"))
	shared, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "data", "snapshots", "*.pickle"))
	for _, f := range append(files, shared...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, step := filepath.Base(f), 1
		if strings.Contains(f, "shared") {
			step = 1021
		}
		for k := 0; k <= min(len(data)-1, pickle.PrefixLen); k += step {
			if err := pickle.CheckPrefix(data[:k], int64(len(data)), nil); err != nil {
				t.Fatalf("%s: prefix of %d bytes: %v", name, k, err)
			}
			if err := pickle.CheckPrefix(data[:k], -1, nil); err != nil {
				t.Fatalf("%s: prefix of %d bytes, size unknown: %v", name, k, err)
			}
		}
	}
	// A string cut inside a character (é, a surrogate) is no error.
	for _, in := range []string{"\x80\x04X\x10\x00\x00\x00ab\xc3", "\x80\x04X\x10\x00\x00\x00ab\xed", "\x80\x04X\x10\x00\x00\x00ab\xed\xb3"} {
		if err := pickle.CheckPrefix([]byte(in), -1, nil); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// Decode reads a valid pickle longer than PrefixLen, and one exactly that
// long (whose STOP is the last byte of the prefix).
func TestDecodeAroundPrefixLen(t *testing.T) {
	for _, n := range []int{pickle.PrefixLen - 1, pickle.PrefixLen, pickle.PrefixLen + 1, 3 * pickle.PrefixLen} {
		// PROTO 4, a BINUNICODE of n-8 bytes, STOP: n bytes in all.
		in := make([]byte, 0, n)
		in = append(in, 0x80, 4, 'X', 0, 0, 0, 0)
		in = append(in, bytes.Repeat([]byte{'a'}, n-8)...)
		in = append(in, '.')
		in[3], in[4], in[5] = byte(n-8), byte((n-8)>>8), byte((n-8)>>16)
		v, err := pickle.Decode(io.MultiReader(bytes.NewReader(in)), nil)
		if s, ok := v.(string); err != nil || !ok || len(s) != n-8 {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}
