package snapshot

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// sniffLen (64 bytes) is how much of the input Read looks at before reading
// the rest: more than every magic number below (the legacy torch.save
// prefix is the longest, 15 bytes) and enough to tell text from binary.
const sniffLen = 64

// howToSnapshot says how to make a file this package reads.
const howToSnapshot = "to make a memory snapshot, call torch.cuda.memory._record_memory_history() before the workload and torch.cuda.memory._dump_snapshot(\"snapshot.pickle\") after it"

// legacyTorchSave is how torch.save files of PyTorch before 1.6 (and of
// _use_new_zipfile_serialization=False) begin: a protocol 2 pickle of the
// magic number 0x1950a86a20f9469cfc6c, then STOP.
const legacyTorchSave = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."

// magics are the beginnings of files that people mistake for snapshots,
// each with what it is and what to do. None of them begins a pickle this
// package decodes or a JSON object.
var magics = []struct{ prefix, what string }{
	{"PK\x03\x04", "a ZIP archive, as torch.save writes checkpoints (model or optimizer state), not a memory snapshot; " + howToSnapshot},
	{"PK\x05\x06", "an empty ZIP archive, not a memory snapshot; " + howToSnapshot},
	{legacyTorchSave, "a torch.save checkpoint in the legacy (pre-1.6) format, not a memory snapshot; " + howToSnapshot},
	{"\x1f\x8b", "gzip-compressed: decompress it first (gunzip -k FILE) and analyse the pickle inside"},
	{"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first (zstd -d FILE) and analyse the pickle inside"},
	{"\xfd7zXZ\x00", "xz-compressed: decompress it first (xz -dk FILE) and analyse the pickle inside"},
	{"BZh", "bzip2-compressed: decompress it first (bunzip2 -k FILE) and analyse the pickle inside"},
	{"7z\xbc\xaf\x27\x1c", "a 7-Zip archive: extract the snapshot pickle from it first"},
	{"\x93NUMPY", "a NumPy array file (.npy), not a memory snapshot; " + howToSnapshot},
	{"\x89PNG", "a PNG image, not a memory snapshot; " + howToSnapshot},
	{"%PDF", "a PDF document, not a memory snapshot; " + howToSnapshot},
	{"\x7fELF", "an executable (ELF), not a memory snapshot; " + howToSnapshot},
}

// sniff returns an error when head, the first bytes of the input (all of it
// when short), shows that the input is neither a pickle this package can
// decode nor a JSON object. It reads nothing.
func sniff(name string, head []byte) error {
	notSnapshot := func(msg string) error {
		return &Error{Name: name, Offset: 0, Msg: msg, Err: ErrNotSnapshot}
	}
	if len(head) == 0 {
		return notSnapshot("empty input: not a memory snapshot; " + howToSnapshot)
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return notSnapshot(m.what)
		}
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(text) == 0 || text[0] == '{' {
		return nil // a JSON object, or white space to read past
	}
	switch text[0] {
	case '[':
		return notSnapshot("a JSON array, not a memory snapshot (a memory_stats dump is a JSON object); " + howToSnapshot)
	case '<':
		return notSnapshot("an HTML or XML document (a web page saved instead of the raw file?), not a memory snapshot; " + howToSnapshot)
	}
	if head[0] == 0x80 || len(head) < minText || !looksLikeText(head) {
		if err := pickle.CheckStart(head); err != nil {
			if errors.Is(err, pickle.ErrMalformed) {
				return decodeErr(name, err, head) // a PROTO of a protocol we do not read
			}
			return notSnapshot(fmt.Sprintf("not a pickle or memory_stats JSON: first byte %#02x; %s", head[0], howToSnapshot))
		}
		return nil
	}
	// Text that happens to begin with a pickle opcode ('N', 'K', '(') is
	// still no pickle: those begin with PROTO (protocol 2 and later) or
	// are binary (protocol 1).
	return notSnapshot(fmt.Sprintf("not a pickle or memory_stats JSON: the input is text (first byte %q); %s", head[0], howToSnapshot))
}

// minText (8 bytes) is the shortest input that sniff calls text: a tiny
// protocol 1 pickle can be all printable ("]." is an empty list), a longer
// one has binary lengths or memo indexes within its first bytes.
const minText = 8

// looksLikeText reports whether b is printable UTF-8 with line breaks and
// tabs only (a cut multi-byte character at the end is allowed): what every
// text reader asks of its start (untrusted.CheckText).
func looksLikeText(b []byte) bool { return untrusted.CheckText(b, false) == nil }
