package pickle_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"io"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Decode looks at the first bytes before reading the rest: /dev/zero is
// refused after two bytes, not after MaxInputBytes.
func TestDecodeRefusesNonPickleEarly(t *testing.T) {
	z := &testkit.Counter{R: testkit.Repeat("\x00")}
	_, err := pickle.Decode(z, nil)
	wantErr(t, err, pickle.ErrOpcode, 0, "not a pickle: first byte 0x00")
	if z.N > 2 {
		t.Errorf("read %d bytes of /dev/zero, want at most 2", z.N)
	}
	// PROTO of an unknown protocol is refused as early.
	_, err = pickle.Decode(io.MultiReader(strings.NewReader("\x80\x00"), z), nil)
	wantErr(t, err, pickle.ErrMalformed, 0, "pickle protocol 0 (the byte at offset 1), which this decoder does not read: it reads protocols 2 to 5")
	// A ZIP archive (torch.save) starts with 'P', PERSID.
	_, err = pickle.Decode(strings.NewReader("PK\x03\x04"), nil)
	wantErr(t, err, pickle.ErrForbidden, 0, "PERSID")
}

// CheckStart agrees with the decoder: every byte it refuses as a first
// opcode also fails to decode, and every byte it accepts is an opcode the
// decoder runs (no "opcode not supported").
func TestCheckStartAgreesWithDecoder(t *testing.T) {
	for b := 0; b < 256; b++ {
		data := []byte{byte(b), '.'}
		startErr := pickle.CheckStart(data)
		_, err := pickle.DecodeBytes(data, nil)
		if startErr != nil {
			if err == nil {
				t.Errorf("byte %#02x: CheckStart refuses (%v) but %q decodes", b, startErr, data)
			}
			continue
		}
		if errors.Is(err, pickle.ErrOpcode) && strings.Contains(err.Error(), "offset 0:") {
			t.Errorf("byte %#02x: CheckStart accepts an opcode the decoder does not run: %v", b, err)
		}
	}
	if err := pickle.CheckStart(nil); err != nil {
		t.Errorf("empty head: %v", err)
	}
	if err := pickle.CheckStart([]byte{0x80}); err != nil {
		t.Errorf("PROTO alone: %v", err)
	}
}

// A file of MEMOIZE opcodes (one memo entry per input byte) stops at one
// entry per 2 input bytes instead of building a memo of 32 bytes per byte.
func TestMemoBoundedByInput(t *testing.T) {
	const n = 200_000
	data := []byte("\x80\x04N" + strings.Repeat("\x94", n) + ".")
	_, err := pickle.DecodeBytes(data, nil)
	limit := len(data)/2 + 1024
	// The entry past the limit is the MEMOIZE at offset 3 + limit.
	wantErr(t, err, pickle.ErrLimit, int64(3+limit), "memo entries (Options.MaxMemo")
	// An explicit MaxMemo still wins.
	if _, err := pickle.DecodeBytes(data, &pickle.Options{MaxMemo: n}); err != nil {
		t.Errorf("MaxMemo %d: %v", n, err)
	}
}

// The memo grows in chunks: values on both sides of a chunk boundary are
// found again.
func TestMemoAcrossChunks(t *testing.T) {
	const n = 10_000
	var b bytes.Buffer
	b.WriteString("\x80\x04](")
	for i := 0; i < n; i++ {
		b.WriteByte('J')
		binary.Write(&b, binary.LittleEndian, int32(i))
		b.WriteByte(0x94)
	}
	idx := []uint32{0, 4095, 4096, 8191, 8192, n - 1}
	for _, i := range idx {
		b.WriteByte('j')
		binary.Write(&b, binary.LittleEndian, i)
	}
	b.WriteString("e.")
	v, err := pickle.DecodeBytes(b.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := v.([]any)
	if len(l) != n+len(idx) {
		t.Fatalf("%d items, want %d", len(l), n+len(idx))
	}
	for k, i := range idx {
		if got := l[n+k]; got != int64(i) {
			t.Errorf("memo[%d] = %v, want %d", i, got, i)
		}
	}
}
