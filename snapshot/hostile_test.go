package snapshot_test

import (
	"bytes"
	"errors"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Read looks at the first bytes before it reads the rest (issue 13 case
// 10): /dev/zero is refused after one small read, not after 1 GiB.
func TestReadRefusesZerosEarly(t *testing.T) {
	z := &testkit.Counter{R: testkit.Repeat("\x00")}
	_, err := snapshot.Read(z, "/dev/zero")
	want := "/dev/zero: offset 0: not a pickle or memory_stats JSON: first byte 0x00; to make a memory snapshot"
	if !errors.Is(err, snapshot.ErrNotSnapshot) || !errors.Is(err, snapshot.ErrDecode) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want ErrNotSnapshot starting %q", err, want)
	}
	if z.N > 64 {
		t.Errorf("read %d bytes of /dev/zero before refusing, want at most 64", z.N)
	}
}

// Files people mistake for snapshots are named for what they are, from
// their first bytes (issue 13 case 16).
func TestReadNamesWrongFiles(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"torch.save zip", "PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl", "a ZIP archive, as torch.save writes checkpoints"},
		{"legacy torch.save", "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.", "torch.save checkpoint in the legacy"},
		{"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip-compressed: decompress it first"},
		{"zstd", "\x28\xb5\x2f\xfd\x00", "zstd-compressed"},
		{"empty", "", "empty input"},
		{"text", "name,size,state\nfoo,512,inactive\n", "the input is text (first byte 'n')"},
		{"json array", " [1, 2]", "a JSON array"},
		{"html", "<!DOCTYPE html><html>", "an HTML or XML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := snapshot.ReadBytes([]byte(c.data), "f")
			if !errors.Is(err, snapshot.ErrNotSnapshot) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrNotSnapshot with %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "f: offset 0: ") {
				t.Errorf("%q does not name the file and offset", err)
			}
		})
	}
	// The checkpoint messages say how to make a snapshot.
	_, err := snapshot.ReadBytes([]byte("PK\x03\x04"), "model.pt")
	if err == nil || !strings.Contains(err.Error(), "torch.cuda.memory._dump_snapshot(") {
		t.Errorf("zip: %v", err)
	}
	// A pickle of Python objects (a checkpoint's data.pkl) keeps the
	// decoder's error and kind, with a hint.
	_, err = snapshot.ReadBytes([]byte("\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00."), "data.pkl")
	if !errors.Is(err, pickle.ErrForbidden) || !strings.Contains(err.Error(), "GLOBAL") ||
		!strings.Contains(err.Error(), "holds Python objects (a torch.save checkpoint's data.pkl") {
		t.Errorf("data.pkl: %v", err)
	}
	// JSON that is not memory_stats says so.
	_, err = snapshot.ReadBytes([]byte(`{"op": "alloc", "size": 512}`), "ops.json")
	if !errors.Is(err, snapshot.ErrField) || !strings.Contains(err.Error(), `field "op": want integer, got string; a memory_stats dump`) {
		t.Errorf("ops.json: %v", err)
	}
	// Tiny binary pickles are still read (the text rule needs 8 bytes).
	if _, err := snapshot.ReadBytes([]byte("]."), "empty-list"); err != nil {
		t.Errorf("empty segment list: %v", err)
	}
}

// A pickle of a protocol the decoder does not read is named as one, with
// the protocol, where it is, and the protocols that are read (issue 28
// item 8: protocol 6 was "not a pickle ... first byte 0x80").
func TestReadNamesPickleProtocol(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"\x80\x06}\x94.", "f: offset 0: PROTO (0x80): pickle protocol 6 (the byte at offset 1), which this decoder does not read: it reads protocols 2 to 5"},
		{"\x80\x09N.", "pickle protocol 9 (the byte at offset 1)"},
		{"\x80\x01N.", "pickle protocol 1 (the byte at offset 1)"},
	} {
		_, err := snapshot.ReadBytes([]byte(c.data), "f")
		var e *snapshot.Error
		if !errors.As(err, &e) || e.Offset != 0 || !errors.Is(err, snapshot.ErrDecode) || !errors.Is(err, pickle.ErrMalformed) ||
			errors.Is(err, snapshot.ErrNotSnapshot) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want a decode error at offset 0 with %q", c.data, err, c.want)
		}
	}
	// A protocol we read, later in the input, is no excuse either.
	_, err := snapshot.ReadBytes([]byte("\x80\x04N\x80\x06."), "f")
	if err == nil || !strings.Contains(err.Error(), "offset 3: PROTO (0x80): pickle protocol 6 (the byte at offset 4)") {
		t.Errorf("PROTO 6 at offset 3: %v", err)
	}
}

// A top-level key that is not a str is refused, naming it and its type,
// with its value's offset (issue 28 item 5: {1: [], "segments": []} and
// {b"segments": ...} read as snapshots of 0 devices, exit 0).
func TestReadRefusesNonStrTopLevelKeys(t *testing.T) {
	for _, c := range []struct {
		key  any
		want string
	}{
		{1, "top-level key 1 (int), not a str"},
		{int64(-7), "top-level key -7 (int), not a str"},
		{nil, "top-level key None, not a str"},
		{true, "top-level key true (bool), not a str"},
		{2.5, "top-level key 2.5 (float), not a str"},
		{tup{1, 2}, "top-level key of type tuple, not a str"},
	} {
		doc := append(od{{c.key, []any{}}}, base()...)
		data := encode(doc)
		_, err := snapshot.ReadBytes(data, "keys.pickle")
		var e *snapshot.Error
		if !errors.As(err, &e) || !errors.Is(err, snapshot.ErrField) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key %v: got %v, want ErrField with %q", c.key, err, c.want)
			continue
		}
		// The empty list, the key's value, is the first "](" after the key.
		if want := int64(bytes.Index(data[4:], []byte("]("))) + 4; e.Offset != want {
			t.Errorf("key %v: offset %d, want %d (its value)", c.key, e.Offset, want)
		}
	}
	// pickle.dumps({b"segments": []}, protocol=4), less its FRAME.
	_, err := snapshot.ReadBytes([]byte("\x80\x04}\x94C\x08segments\x94]\x94s."), "bytes-key.pickle")
	if want := `bytes-key.pickle: offset 15: top-level key b"segments" (bytes), not a str`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("bytes key: got %v, want %q", err, want)
	}
}

// A frame whose file name Python could not decode (os.fsdecode keeps each
// byte that is not UTF-8 as a lone surrogate, pickled as ED B2 80 to
// ED B3 BF) reads, with the surrogate as Python's backslashreplace writes
// it (issue 28 item 9: the whole snapshot was unreadable).
func TestReadLoneSurrogateFileName(t *testing.T) {
	doc := with("segments.0.blocks.0.frames", []any{od{{"filename", "/home/caf\xed\xb3\xa9/model.py"}, {"line", 7}, {"name", "forward"}}})
	s, err := snapshot.ReadBytes(encode(doc), "surrogate.pickle")
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Segments[0].Blocks[0].Frames[0].Filename; f != `/home/caf\udce9/model.py` {
		t.Errorf("file name %q, want %q", f, `/home/caf\udce9/model.py`)
	}
}

// Random bytes that begin like a pickle are refused within the first
// pickle.PrefixLen bytes, not after reading up to the 1 GiB cap (issue 28
// item 10: `(printf '\x80\x04'; cat /dev/urandom) | gpufrag analyze -` read
// 1 GiB in 36 s at 2.8 GB of memory).
func TestReadRefusesRandomAfterProtoEarly(t *testing.T) {
	for seed := range uint64(500) {
		// PROTO 4, random bytes up to PrefixLen+1 (the prefix and the
		// byte that says the input goes on), then zeros, which must not
		// be read; as from a pipe (no size). A 4 MiB cap makes the test
		// fail fast without the check.
		z := &testkit.Counter{R: testkit.Repeat("\x00")}
		in := io.MultiReader(strings.NewReader("\x80\x04"), io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}), pickle.PrefixLen-1), z)
		_, err := snapshot.ReadOptions(in, "stdin", &snapshot.Options{Pickle: pickle.Options{MaxInputBytes: 4 << 20}})
		var e *snapshot.Error
		if !errors.As(err, &e) || !errors.Is(err, snapshot.ErrDecode) {
			t.Fatalf("seed %d: got %v, want a decode error", seed, err)
		}
		if z.N > 0 || e.Offset > pickle.PrefixLen {
			t.Fatalf("seed %d: read %d bytes past the prefix, refused at offset %d (%v)", seed, z.N, e.Offset, err)
		}
	}
	// A BINBYTES of 16 MiB: no snapshot holds one, so its length decides.
	_, err := snapshot.ReadBytes(append([]byte("\x80\x04B\x00\x00\x00\x01"), make([]byte, 1<<24)...), "f")
	if !errors.Is(err, pickle.ErrLimit) || !strings.Contains(err.Error(), "offset 2: BINBYTES (0x42): a bytes object of 16777216 bytes, more than 1048576") {
		t.Errorf("16 MiB of bytes: %v", err)
	}
}

// sharedRefs is a snapshot whose segments list refers to one segment n
// times, and that segment's blocks list to one block k times, all through
// the memo: a few bytes per reference, a segment or block built for each
// (issue 13 case 4).
func sharedRefs(n, k int) []byte {
	blk := &snaptest.Shared{V: od{{"size", 512}, {"state", "inactive"}}}
	blocks := make([]any, k)
	for i := range blocks {
		blocks[i] = blk
	}
	seg := &snaptest.Shared{V: od{{"device", 0}, {"address", 1 << 40}, {"total_size", 512 * k},
		{"segment_type", "large"}, {"blocks", blocks}}}
	segs := make([]any, n)
	for i := range segs {
		segs[i] = seg
	}
	return encode(od{{"segments", segs}})
}

// References to one value are charged each time they are built, so a small
// file that names a huge snapshot is refused before it is built.
func TestSharedReferencesBounded(t *testing.T) {
	for _, c := range []struct {
		n, k  int
		field string
	}{
		{200_000, 1, `field "segments"`},                       // 200k segments: 35 MB for a 400 kB file
		{300, 1000, `.blocks": the snapshot builds more than`}, // 300k blocks: 31 MB for a 3 kB file
	} {
		data := sharedRefs(c.n, c.k)
		_, err := snapshot.ReadBytes(data, "shared.pickle")
		var e *snapshot.Error
		if !errors.As(err, &e) || !errors.Is(err, snapshot.ErrLimit) || !strings.Contains(err.Error(), c.field) ||
			!strings.Contains(err.Error(), "Options.MaxBuiltBytes: 24 per input byte") {
			t.Errorf("%d×%d: got %v, want ErrLimit at %s", c.n, c.k, err, c.field)
			continue
		}
		if e.Offset < 0 || e.Offset >= int64(len(data)) {
			t.Errorf("%d×%d: offset %d outside the %d-byte file", c.n, c.k, e.Offset, len(data))
		}
	}
	// The same structure, small enough, reads; with the legacy layout
	// (blocks without addresses) the shared block even tiles its segment.
	s, err := snapshot.ReadBytes(sharedRefs(1, 1000), "shared.pickle")
	if err != nil || len(s.Segments[0].Blocks) != 1000 || s.Segments[0].Blocks[999].Address != 1<<40+999*512 {
		t.Errorf("one segment of 1000 shared blocks: %v", err)
	}
	// A caller's budget is honoured exactly: one segment of 1000 blocks
	// fits in the size of a segment and 1000 blocks, not in a byte less.
	exact := int64(unsafe.Sizeof(snapshot.Segment{})) + 1000*int64(unsafe.Sizeof(snapshot.Block{}))
	data := sharedRefs(1, 1000)
	if _, err := snapshot.ReadOptions(bytes.NewReader(data), "x", &snapshot.Options{MaxBuiltBytes: exact}); err != nil {
		t.Errorf("budget %d: %v", exact, err)
	}
	_, err = snapshot.ReadOptions(bytes.NewReader(data), "x", &snapshot.Options{MaxBuiltBytes: exact - 1})
	if !errors.Is(err, snapshot.ErrLimit) || !strings.Contains(err.Error(), `field "segments[0].blocks"`) {
		t.Errorf("budget %d: %v", exact-1, err)
	}
}

// The real snapshots build at most half the default budget per input byte
// (the margin DefaultBuiltFactor promises).
func TestSharedBuiltRatio(t *testing.T) {
	for file := range sharedSnapshots(t) {
		data, err := os.ReadFile(sharedDir + "/" + file)
		if err != nil {
			t.Fatal(err)
		}
		opts := &snapshot.Options{MaxBuiltBytes: snapshot.DefaultBuiltFactor / 2 * int64(len(data))}
		if _, err := snapshot.ReadOptions(bytes.NewReader(data), file, opts); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

// A run of MEMOIZE opcodes stops at the memo's bound, at its byte offset
// (issue 13 case 10).
func TestMemoizeRunBounded(t *testing.T) {
	const n = 100_000
	data := []byte("\x80\x04N" + strings.Repeat("\x94", n) + ".")
	_, err := snapshot.ReadBytes(data, "memo.pickle")
	if !errors.Is(err, pickle.ErrLimit) || !strings.Contains(err.Error(), "memo.pickle: offset ") ||
		!strings.Contains(err.Error(), "memo entries") {
		t.Errorf("got %v", err)
	}
}

// MaxInputBytes still applies when the input is shorter than what Read
// looks at first, and a file of exactly the limit reads.
func TestReadLimitAroundHead(t *testing.T) {
	data := encode(base())
	for _, limit := range []int64{10, int64(len(data)) - 1} {
		_, err := snapshot.ReadOptions(bytes.NewReader(data), "x", &snapshot.Options{Pickle: pickle.Options{MaxInputBytes: limit}})
		if !errors.Is(err, pickle.ErrLimit) {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	if _, err := snapshot.ReadOptions(bytes.NewReader(data), "x", &snapshot.Options{Pickle: pickle.Options{MaxInputBytes: int64(len(data))}}); err != nil {
		t.Errorf("limit = size: %v", err)
	}
	// A regular file is read the same way (its size sizes the buffer).
	f, err := os.CreateTemp(t.TempDir(), "snap")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	f.Seek(0, 0)
	defer f.Close()
	if _, err := snapshot.Read(f, "file"); err != nil {
		t.Errorf("from a file: %v", err)
	}
}
