package workload_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
	"github.com/gpufrag/gpufrag/workload"
)

// Hostile and careless input (issue 13, cases 11, 14 and 16): each fails
// at once with a message that says what is wrong, or reads with a warning;
// nothing is dropped silently.

// TestEndlessInput: /dev/zero is refused at its first bytes as binary; an
// endless line without a break fails after about MaxLineBytes, not at the
// end of the stream (there is none). Both under SkipBadRows too.
func TestEndlessInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      string // repeated for ever
		format workload.Format
		kind   error
		msg    string
		within int64 // bytes read at most
	}{
		{"dev/zero", "\x00", workload.Auto, workload.ErrNotText, "not a text trace: byte 0 is NUL", 1 << 20},
		{"dev/zero as jsonl", "\x00", workload.JSONL, workload.ErrNotText, "not a text trace", 1 << 20},
		{"no line break", "x", workload.Auto, workload.ErrSyntax, "longer than 1 MiB (workload.MaxLineBytes)", 3 << 20},
		{"digits without a break", "9", workload.Vidur, workload.ErrSyntax, "longer than 1 MiB", 3 << 20},
	} {
		for _, skip := range []bool{false, true} {
			c := &testkit.Counter{R: testkit.Repeat(tc.r)}
			_, err := workload.Read(c, "/dev/zero", tc.format, workload.ReadOptions{SkipBadRows: skip})
			var e *workload.Error
			if !errors.As(err, &e) || !errors.Is(err, tc.kind) || e.Line != 1 || !strings.Contains(err.Error(), tc.msg) ||
				!strings.HasPrefix(err.Error(), "/dev/zero: line 1: ") {
				t.Errorf("%s (skip %v): %v", tc.name, skip, err)
			}
			if c.N > tc.within {
				t.Errorf("%s: read %d bytes before failing", tc.name, c.N)
			}
		}
	}
}

func TestBinaryInput(t *testing.T) {
	for _, tc := range []struct{ name, in, msg string }{
		{"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip-compressed data: decompress it first (gunzip -k FILE)"},
		{"zip", "PK\x03\x04\x14\x00", "ZIP archive"},
		{"utf-16", "\xff\xfeT\x00I\x00M\x00", "UTF-16 text: convert it to UTF-8 first"},
		{"nul in the header", "TIMESTAMP,Context\x00Tokens,GeneratedTokens\n", "byte 17 is NUL"},
	} {
		_, err := readString(t, tc.in, workload.Auto, workload.ReadOptions{})
		if !errors.Is(err, workload.ErrNotText) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestAllRowsBad: with SkipBadRows and every row bad the trace has no
// requests; the error says so and names the first bad row (it used to end
// in an untimed empty trace, which the simulator answered with "give a
// rate").
func TestAllRowsBad(t *testing.T) {
	const in = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,-5,20\n\nx,1,1\n"
	_, err := workload.Read(strings.NewReader(in), "bad.csv", workload.Auto, workload.ReadOptions{SkipBadRows: true})
	const want = `bad.csv: line 2: field "ContextTokens": must be a positive integer (got "-5"); every row is bad (all 2 skipped), so the trace has no requests`
	var e *workload.Error
	if !errors.As(err, &e) || !errors.Is(err, workload.ErrNoRows) || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// A header without rows, and an empty JSONL file, are no requests too.
	for _, tc := range []struct {
		in     string
		format workload.Format
		line   int
		msg    string
	}{
		{"num_prefill_tokens,num_decode_tokens\n\n", workload.Auto, 1, "no requests: the file has a CSV header and no rows"},
		{"", workload.JSONL, 1, "no requests: the file is empty or blank"},
		{"\n \n", workload.Mooncake, 2, "no requests"},
	} {
		_, err := readString(t, tc.in, tc.format, workload.ReadOptions{})
		if !errors.As(err, &e) || !errors.Is(err, workload.ErrNoRows) || e.Line != tc.line || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q as %v: %v", tc.in, tc.format, err)
		}
	}
}

// TestHeaderMessages: a duplicate column, CR-only line endings and an
// unknown header each say what is wrong instead of "cannot tell the
// format".
func TestHeaderMessages(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     error
		want     string
	}{
		{"duplicate column", "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:15:46.68,5,20,5\n", workload.ErrColumn,
			`t.csv: line 1: field "ContextTokens": duplicate column: columns 2 and 4 of the azure header both hold it (remove or rename one)`},
		{"near miss", "TIMESTAMP,ContextTokens,Generated\n", workload.ErrFormat,
			`t.csv: line 1: cannot tell the format from the first line "TIMESTAMP,ContextTokens,Generated": it looks like azure but lacks GeneratedTokens; ` +
				`a header needs the columns of one format (azure: TIMESTAMP,ContextTokens,GeneratedTokens; vidur: num_prefill_tokens,num_decode_tokens; ` +
				`fineserve: input_length,output_length; burstgpt: Timestamp,Request tokens,Response tokens), ` +
				`or a JSONL line is an object with "prompt_tokens" (jsonl) or "input_length" (mooncake); or give the format with --format`},
		{"unknown", "a,b,c\n1,2,3\n", workload.ErrFormat, `t.csv: line 1: cannot tell the format from the first line "a,b,c"; a header needs the columns of one format (azure: `},
	} {
		_, err := readString(t, tc.in, workload.Auto, workload.ReadOptions{})
		if !errors.Is(err, tc.kind) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got  %v\n want %s", tc.name, err, tc.want)
		}
	}
	// CR-only endings read like LF ones (TestBOMAndCRLF checks every
	// fixture); here, the line numbers of an error count CR lines.
	_, err := readString(t, "TIMESTAMP,ContextTokens,GeneratedTokens\r2023-11-16 18:15:46.68,5,20\r2023-11-16 18:15:47,-1,20\r", workload.Auto, workload.ReadOptions{})
	var e *workload.Error
	if !errors.As(err, &e) || e.Line != 3 || e.Field != "ContextTokens" {
		t.Errorf("CR-only file with a bad third line: %v", err)
	}
}

// TestGiantField: a huge value is echoed in at most untrusted.QuoteBytes bytes
// with its length, in every kind of message that quotes input.
func TestGiantField(t *testing.T) {
	giant := strings.Repeat("9", 500_000)
	for _, tc := range []struct {
		name, in string
		format   workload.Format
	}{
		{"csv count", "num_prefill_tokens,num_decode_tokens\n" + giant + ",1\n", workload.Vidur},
		{"csv header", giant + ",x\n", workload.Auto},
		{"json key", `{"prompt_tokens":1,"output_tokens":1,"` + giant + `":1}`, workload.JSONL},
		{"json value", `{"prompt_tokens":` + giant + `,"output_tokens":1}`, workload.JSONL},
		{"session", "Timestamp,Session ID,Request tokens,Response tokens\n1," + giant + ",1,1\n", workload.BurstGPT},
	} {
		_, err := readString(t, tc.in, tc.format, workload.ReadOptions{})
		n := len(giant)
		if tc.name == "csv header" {
			n += len(",x")
		}
		if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), fmt.Sprintf("… (%d bytes)", n)) {
			t.Errorf("%s: %d-byte message %.300q", tc.name, len(fmt.Sprint(err)), fmt.Sprint(err))
		}
	}
}

// TestUntimedRows: FineServe rows without a timestamp in a timed file are
// dropped with a warning that comes first, however many row warnings
// there are; when they are most of the file, reading fails.
func TestUntimedRows(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("input_length,output_length,latency,timestamp\n")
	for i := range 20 {
		fmt.Fprintf(&sb, "-1,1,0.1,%d\n10,1,0.1,%d\n", i, i) // a bad row, a good one
	}
	sb.WriteString("10,1,0.1,\n10,1,0.1,\n")
	tr, err := readString(t, sb.String(), workload.FineServe, workload.ReadOptions{SkipBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = "t.csv: dropped 2 of 22 rows, which have no timestamp (the first on line 42), because the file has timed rows"
	if len(tr.Requests) != 20 || tr.Untimed != 2 || tr.Skipped != 20 || len(tr.Warnings) != workload.MaxWarnings || tr.Warnings[0] != want {
		t.Fatalf("%d requests, %d untimed, %d skipped, warnings %q", len(tr.Requests), tr.Untimed, tr.Skipped, tr.Warnings)
	}
	const summary = `t.csv: skipped 20 bad rows (the first: line 2: field "input_length": must be a positive integer (got "-1")); ` +
		"dropped 2 of 22 rows, which have no timestamp (the first on line 42), because the file has timed rows"
	if got := tr.Summary(); got != summary {
		t.Errorf("Summary\n got  %s\n want %s", got, summary)
	}
	if tr, err := readString(t, "num_prefill_tokens,num_decode_tokens\n1,1\n2,2\n3,3\n", workload.Vidur, workload.ReadOptions{MaxRows: 2}); err != nil ||
		tr.Summary() != "t.csv: stopped after 2 requests (MaxRows): lines from 4 on were not read" {
		t.Errorf("Summary after MaxRows: %v, %q", err, tr.Summary())
	}
	if tr, err := readString(t, "num_prefill_tokens,num_decode_tokens\n1,1\n", workload.Vidur, workload.ReadOptions{}); err != nil || tr.Summary() != "" {
		t.Errorf("Summary of a clean read: %v, %q", err, tr.Summary())
	}
	// 1,000 of 1,001 rows without a timestamp: an error, not 1 request.
	sb.Reset()
	sb.WriteString("input_length,output_length,latency,timestamp\n100,10,0.1,0\n")
	for range 1000 {
		sb.WriteString("100,10,0.1,\n")
	}
	_, err = readString(t, sb.String(), workload.Auto, workload.ReadOptions{})
	var e *workload.Error
	if !errors.As(err, &e) || !errors.Is(err, workload.ErrField) || e.Line != 3 || e.Field != "timestamp" ||
		!strings.HasPrefix(e.Msg, "missing on 1000 of 1001 rows") {
		t.Errorf("mostly untimed: %v", err)
	}
}

// TestNumbers: values that parse as numbers but are no sane count or time.
func TestNumbers(t *testing.T) {
	const (
		vd = "num_prefill_tokens,num_decode_tokens\n"
		bg = "Timestamp,Request tokens,Response tokens\n"
	)
	for _, tc := range []struct {
		name, in string
		format   workload.Format
		field    string
		msg      string
	}{
		{"tokens 1e18", vd + "1000000000000000000,1\n", workload.Vidur, "num_prefill_tokens", "must be at most 16777216"},
		{"tokens in exponent form", vd + "1e18,1\n", workload.Vidur, "num_prefill_tokens", "must be a positive integer"},
		{"tokens past int64", vd + "99999999999999999999,1\n", workload.Vidur, "num_prefill_tokens", "must be at most 16777216"},
		{"output past int64", vd + "1,+99999999999999999999\n", workload.Vidur, "num_decode_tokens", "must be at most 16777216"},
		{"negative past int64", vd + "-99999999999999999999,1\n", workload.Vidur, "num_prefill_tokens", "must be a positive integer"},
		{"output -0", vd + "1,-1\n", workload.Vidur, "num_decode_tokens", "non-negative"},
		{"NaN time", bg + "NaN,1,1\n", workload.BurstGPT, "Timestamp", "non-negative number"},
		{"Inf time", bg + "Inf,1,1\n", workload.BurstGPT, "Timestamp", "non-negative number"},
		{"1e308 time", bg + "1e308,1,1\n", workload.BurstGPT, "Timestamp", "too large"},
		{"negative exponent time", bg + "-1e3,1,1\n", workload.BurstGPT, "Timestamp", "non-negative number"},
		{"time past int64", bg + "99999999999999999999,1,1\n", workload.BurstGPT, "Timestamp", "too large"},
		{"mooncake 1e308", `{"timestamp":1e308,"input_length":1,"output_length":1}`, workload.Mooncake, "timestamp", "too large"},
		{"jsonl 1e400", `{"arrival_s":1e400,"prompt_tokens":1,"output_tokens":1}`, workload.JSONL, "arrival_s", "non-negative number"},
		{"jsonl n 1e18", `{"prompt_tokens":1,"output_tokens":1,"n":1000000000000000000}`, workload.JSONL, "n", "from 1 to 1024"},
		{"more hash ids than tokens", `{"timestamp":0,"input_length":2,"output_length":1,"hash_ids":[1,2,3]}`, workload.Mooncake, "hash_ids", "has 3 ids for a prompt of 2 tokens"},
		{"session too long", "Timestamp,Session ID,Request tokens,Response tokens\n1," + strings.Repeat("s", 257) + ",1,1\n", workload.BurstGPT, "Session ID", "longer than 256 bytes"},
	} {
		_, err := readString(t, tc.in, tc.format, workload.ReadOptions{})
		var e *workload.Error
		if !errors.As(err, &e) || !errors.Is(err, workload.ErrField) || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := readString(t, vd+"1,1\n", workload.Vidur, workload.ReadOptions{MaxRows: -1}); !errors.Is(err, workload.ErrConfig) {
		t.Errorf("MaxRows -1: %v", err)
	}
}

// TestRandomBytes (issue 28, item 10): random bytes without NUL, bare or
// after a prefix that looks like a trace (a JSON object or array, a
// header of each CSV format, a benchmark result's first keys), are refused
// within the first read by every format's reader and by ReadBench; before,
// the benchmark reader read them up to MaxBenchBytes (256 MiB, 0.5 to
// 1.8 s and 275 to 495 MB for 100 MB of them).
func TestRandomBytes(t *testing.T) {
	headers := []string{"TIMESTAMP,ContextTokens,GeneratedTokens\n", "num_prefill_tokens,num_decode_tokens\n",
		"input_length,output_length\n", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n",
		`{"backend": "vllm", "request_rate": 1, `}
	for _, f := range append([]workload.Format{workload.Auto}, workload.Formats()...) {
		t.Run(f.String(), func(t *testing.T) {
			loctest.RefusesEarly(t, func(r io.Reader, name string) error {
				_, err := workload.Read(r, name, f, workload.ReadOptions{SkipBadRows: true})
				return err
			}, headers...)
		})
	}
	t.Run("ReadBench", func(t *testing.T) {
		loctest.RefusesEarly(t, func(r io.Reader, name string) error {
			_, err := workload.ReadBench(r, name)
			return err
		}, headers...)
	})
}

// TestBenchWrongText: a CSV trace given as a benchmark result is refused at
// its first line, not after reading all of it (an endless one here).
func TestBenchWrongText(t *testing.T) {
	rows := io.MultiReader(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n"), testkit.Repeat("2023-11-16 18:15:46.6805900,374,44\n"))
	c := &testkit.Counter{R: rows}
	_, err := workload.ReadBench(c, "conv.csv")
	if err == nil || !strings.Contains(err.Error(), `conv.csv: line 1: starts with "TIMESTAMP,Contex": want one JSON object per run`) || c.N > loctest.MaxRead {
		t.Errorf("after %d bytes: %v", c.N, err)
	}
}
