// Package loctest checks, for the tests of every reader, that input which
// is not the reader's format is refused within its first kilobytes: it
// feeds a reader endless pseudo-random bytes (deterministic, with a fixed
// seed, without NUL so that the old NUL check does not catch them) after
// prefixes that make them look like the reader's format, and counts the
// bytes the reader takes before it fails.
package loctest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
)

// MaxRead is how many bytes a reader may take from the stream before it
// refuses it (68 KiB): a line reader's first fill (64 KiB) plus the 4 KiB
// a JSON reader looks at (untrusted.SniffBytes). Real readers refuse after far
// less of their first read; a reader that reads on to its size limit takes
// megabytes.
const MaxRead = 68 << 10

// Prefixes are what the stream starts with, besides a reader's own
// (a CSV header line): nothing, a JSON object or array, and a pickle's
// PROTO 4 opcode.
var Prefixes = []string{"", "{", "[", "\x80\x04"}

// Random returns an endless stream of prefix followed by pseudo-random
// bytes other than NUL, the same for the same seed.
func Random(seed uint64, prefix string) io.Reader {
	return &random{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), prefix: prefix}
}

type random struct {
	rng    *rand.Rand
	prefix string
}

func (r *random) Read(p []byte) (int, error) {
	n := copy(p, r.prefix)
	r.prefix = r.prefix[n:]
	for i := n; i < len(p); i++ {
		b := byte(r.rng.Uint32())
		for b == 0 {
			b = byte(r.rng.Uint32())
		}
		p[i] = b
	}
	return len(p), nil
}

// RefusesEarly feeds read the random stream after each of Prefixes and
// extra, for three seeds, and fails the test when read accepts it (returns
// nil) or takes more than MaxRead bytes before refusing it. read is a
// reader's entry point, given the stream and a name for its messages.
func RefusesEarly(t testing.TB, read func(r io.Reader, name string) error, extra ...string) {
	t.Helper()
	RefusesEarlyAfter(t, read, append(append([]string{}, Prefixes...), extra...)...)
}

// RefusesEarlyAfter is RefusesEarly with exactly the prefixes given, for a
// reader of several formats of which only some are the test's.
func RefusesEarlyAfter(t testing.TB, read func(r io.Reader, name string) error, prefixes ...string) {
	t.Helper()
	for _, prefix := range prefixes {
		for seed := uint64(1); seed <= 3; seed++ {
			c := &testkit.Counter{R: Random(seed, prefix)} // ends the stream at 16 MiB: a reader that reads on fails, not hangs
			name := fmt.Sprintf("random-%d-%x", seed, prefix)
			err := read(c, name)
			switch {
			case c.N > MaxRead:
				t.Errorf("prefix %q, seed %d: read %d bytes (more than %d) before returning %v", prefix, seed, c.N, MaxRead, err)
			case err == nil:
				t.Errorf("prefix %q, seed %d: random bytes accepted", prefix, seed)
			}
		}
	}
}
