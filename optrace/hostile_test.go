package optrace_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
	"github.com/gpufrag/gpufrag/optrace"
)

// TestHostileInput (issue 13, case 11): /dev/zero and compressed files
// fail at their first bytes; an endless line fails after about
// MaxLineBytes; a giant value is echoed in at most 64 bytes.
func TestHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      io.Reader
		kind   error
		want   string
		within int64
	}{
		{"dev/zero", testkit.Repeat("\x00"), optrace.ErrNotText, "z: line 1: not a text trace: byte 0 is NUL (binary data, not lines of text)", 1 << 20},
		{"endless line", testkit.Repeat("x"), optrace.ErrSyntax, "z: line 1: longer than 1 MiB (optrace.MaxLineBytes): not a text file of lines, or its line breaks are missing", 3 << 20},
		{"gzip", strings.NewReader("\x1f\x8b\x08\x00\x00"), optrace.ErrNotText, "z: line 1: not a text trace: gzip-compressed data: decompress it first (gunzip -k FILE)", 1 << 20},
		{"giant size", strings.NewReader(`{"op":"alloc","id":"a","size":` + strings.Repeat("9", 500_000) + `}`), optrace.ErrField,
			`z: line 1: field "size": must be a positive integer (got ` + strings.Repeat("9", 64) + `… (500000 bytes))`, 1 << 20},
		{"giant key", strings.NewReader(`{"` + strings.Repeat("k", 500_000) + `":1}`), optrace.ErrField,
			`z: line 1: field "` + strings.Repeat("k", 64) + `… (500000 bytes)": unknown field (known: op, id, size, stream, pool)`, 1 << 20},
	} {
		c := &testkit.Counter{R: tc.r}
		_, err := optrace.Read(c, "z")
		var e *optrace.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.kind) || err.Error() != tc.want {
			t.Errorf("%s:\n got  %.300v\n want %s", tc.name, err, tc.want)
		}
		if c.N > tc.within {
			t.Errorf("%s: read %d bytes before failing", tc.name, c.N)
		}
	}
}

// TestCROnly: old Mac line endings read like LF ones, with the same lines.
func TestCROnly(t *testing.T) {
	const lf = "{\"op\":\"alloc\",\"id\":\"a\",\"size\":16}\n\n{\"op\":\"free\",\"id\":\"a\"}\n"
	want, err := optrace.Read(strings.NewReader(lf), "lf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := optrace.Read(strings.NewReader(strings.ReplaceAll(lf, "\n", "\r")), "cr")
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] || got[1].Line != 3 {
		t.Fatalf("CR-only: %v, %+v; want %+v", err, got, want)
	}
}

// TestRandomBytes (issue 28, item 10): random bytes without NUL, bare or
// after a prefix that looks like an op, are refused within the first read
// as not text.
func TestRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, err := optrace.Read(r, name)
		if err != nil && !errors.Is(err, optrace.ErrNotText) {
			t.Errorf("%v, want ErrNotText", err)
		}
		return err
	}, `{"op":"alloc","id":"a1","size":16`)
}
