package untrusted

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

// readAll returns every line of in read through a LineReader, and the error
// that ended reading (nil at a clean end).
func readAll(r io.Reader, maxLine int, maxTotal int64) ([]string, error) {
	lr := NewLineReader(r, limits(maxLine, maxTotal))
	var lines []string
	for {
		b, err := lr.Next()
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, string(b))
		if lr.Line() != len(lines) {
			return lines, errors.New("Line() does not count the lines returned")
		}
	}
}

func limits(line int, total int64) Limits {
	return Limits{Line: line, LineName: "MaxLine", Total: total, TotalName: "MaxTotal", TotalHint: "read less"}
}

func TestLineEndings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\rb\r", []string{"a", "b"}},                 // old Mac
		{"a\rb\r\nc\nd", []string{"a", "b", "c", "d"}}, // mixed
		{"\n\r\n\r", []string{"", "", ""}},
		{"a\r\r\nb", []string{"a", "", "b"}},
		{"\uFEFFa\n\uFEFFb\n", []string{"a", "\uFEFFb"}}, // a BOM only at the start
	} {
		// One byte at a time too: a "\r" at the end of one read and "\n" at
		// the start of the next are one line ending.
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(tc.in), "bytewise": iotest.OneByteReader(strings.NewReader(tc.in))} {
			got, err := readAll(r, 100, 1000)
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("%s %q: got %q, %v; want %q", name, tc.in, got, err, tc.want)
			}
		}
	}
}

// TestLineLimit: a line of exactly the limit is returned, with any ending;
// one byte more is an ErrLineTooLong naming the line and its offset, at
// once (the rest of an endless line is never read).
func TestLineLimit(t *testing.T) {
	const max = 100 << 10 // several buffer fills
	line := strings.Repeat("x", max)
	for _, end := range []string{"", "\n", "\r\n", "\r"} {
		in, n := "a\n"+line+end+"b", 3
		if end == "" { // the last line
			in, n = "a\n"+line, 2
		}
		got, err := readAll(strings.NewReader(in), max, 1<<30)
		if err != nil || len(got) != n || got[1] != line {
			t.Errorf("line of the limit ending %q: %d lines, %v", end, len(got), err)
		}
	}
	for _, end := range []string{"", "\n", "\r\n"} {
		_, err := readAll(strings.NewReader("a\n"+line+"y"+end+"b\n"), max, 1<<30)
		var e *InputError
		if !errors.As(err, &e) || !errors.Is(err, ErrLineTooLong) || e.Line != 2 || e.Offset != 2 || !strings.Contains(e.Msg, "100 KiB (MaxLine)") {
			t.Errorf("line over the limit ending %q: %v", end, err)
		}
	}
	// An endless line: the error comes after reading about the limit.
	cr := &testkit.Counter{R: testkit.Repeat("x")}
	_, err := readAll(cr, max, 1<<40)
	if !errors.Is(err, ErrLineTooLong) || cr.N > 2*max {
		t.Errorf("endless line: %v after %d bytes", err, cr.N)
	}
	if _, err := NewLineReader(strings.NewReader(""), limits(1, 1)).Next(); err != io.EOF {
		t.Errorf("empty input: %v", err)
	}
}

// TestTotalLimit: input longer than the total limit fails even when every
// line is short (an endless stream of blank lines), with the limit named.
func TestTotalLimit(t *testing.T) {
	cr := &testkit.Counter{R: testkit.Repeat("\n")}
	lines, err := readAll(cr, 100, 1<<20)
	var e *InputError
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Offset != 1<<20 || e.Msg != "the input goes on past 1 MiB (MaxTotal); read less" {
		t.Fatalf("endless blank lines: %v", err)
	}
	if len(lines) > 1<<20 || cr.N > 1<<20+initialBuf {
		t.Errorf("read %d lines, %d bytes past a 1 MiB limit", len(lines), cr.N)
	}
	// Exactly the limit is fine.
	if got, err := readAll(strings.NewReader("ab\ncd"), 100, 5); err != nil || len(got) != 2 {
		t.Errorf("input of the limit: %q, %v", got, err)
	}
	if _, err := readAll(strings.NewReader("ab\ncde"), 100, 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("input one byte over the limit: %v", err)
	}
}

func TestBinary(t *testing.T) {
	for _, tc := range []struct {
		name, in, msg string
		line          int
	}{
		{"dev/zero", strings.Repeat("\x00", 4096), "byte 0 is NUL", 1},
		{"nul later", "abc\n\x00", "byte 4 is NUL", 2}, // was reported on line 1 (issue 28)
		{"nul after CRLF and CR", "a\r\nb\rc\x00", "byte 6 is NUL", 3},
		{"gzip", "\x1f\x8b\x08\x00rest", "gunzip", 1},
		{"zip", "PK\x03\x04rest", "ZIP", 1},
		{"zstd", "\x28\xb5\x2f\xfd", "zstd", 1},
		{"utf16", "\xff\xfeT\x00I\x00", "UTF-16", 1},
		{"latin-1", "ts,name\n1,caf\xe9\n", "byte 13 (0xe9) is not UTF-8", 2},
		{"escape", "a,b\n\x1b]0;title\x07\n", "byte 4 is the control character 0x1b", 2},
		{"cut character at the end", "caf\xc3", "byte 3 (0xc3) is not UTF-8", 1},
	} {
		lr := NewLineReader(strings.NewReader(tc.in), limits(100, 1<<20))
		_, err := lr.Next()
		var e *InputError
		if !errors.As(err, &e) || !errors.Is(err, ErrBinary) || e.Line != tc.line || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: %v; want line %d, %q", tc.name, err, tc.line, tc.msg)
		}
		if _, err2 := lr.Next(); err2 == nil || err2 == io.EOF {
			t.Errorf("%s: a second Next after the error returned %v", tc.name, err2)
		}
	}
	// A NUL past the first SniffBytes is the parser's business, and so is a
	// character cut by the end of the head.
	in := strings.Repeat("a\n", SniffBytes/2) + "\x00\n"
	if got, err := readAll(strings.NewReader(in), 100, 1<<20); err != nil || len(got) != SniffBytes/2+1 {
		t.Errorf("late NUL: %d lines, %v", len(got), err)
	}
	in = strings.Repeat("a", SniffBytes-1) + "é\n"
	if got, err := readAll(strings.NewReader(in), 2*SniffBytes, 1<<20); err != nil || len(got) != 1 {
		t.Errorf("character across the end of the head: %d lines, %v", len(got), err)
	}
}

// TestRandomBytes: endless random bytes without NUL, bare or after a
// prefix that looks like text, are refused within the first read (before,
// a line reader with a large line limit read them up to it).
func TestRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, _ string) error {
		_, err := readAll(r, 256<<20, 1<<40)
		if err != nil && !errors.Is(err, ErrBinary) {
			t.Errorf("random bytes: %v, want ErrBinary", err)
		}
		return err
	}, "timestamp,instance\n")
}

func TestReadErrors(t *testing.T) {
	boom := errors.New("boom")
	got, err := readAll(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 100, 1000)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Errorf("got %q, %v; want one line then boom", got, err)
	}
	// A reader stuck returning 0, nil.
	if _, err := readAll(stuck{}, 100, 1000); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("stuck reader: %v", err)
	}
	// Offsets count endings.
	lr := NewLineReader(strings.NewReader("ab\r\ncd\re\n"), limits(100, 1000))
	var offs []int64
	for {
		if _, err := lr.Next(); err != nil {
			break
		}
		offs = append(offs, lr.Offset())
	}
	if len(offs) != 3 || offs[0] != 4 || offs[1] != 7 || offs[2] != 9 {
		t.Errorf("offsets %v, want [4 7 9]", offs)
	}
}

type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }

// BenchmarkLineReader reads 10 MB of Azure-like rows.
func BenchmarkLineReader(b *testing.B) {
	row := "2023-11-16 18:15:46.6805900,374,44\r\n"
	data := bytes.Repeat([]byte(row), 10<<20/len(row))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		lr := NewLineReader(bytes.NewReader(data), limits(1<<20, 1<<40))
		for {
			if _, err := lr.Next(); err != nil {
				break
			}
		}
	}
}
