package workload_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

func readString(t *testing.T, s string, f workload.Format, opts workload.ReadOptions) (*workload.Trace, error) {
	t.Helper()
	return workload.Read(strings.NewReader(s), "t.csv", f, opts)
}

// TestContract is the bad-row check of issue 3's simulate contract
// (../shared/checks/contracts, area simulate): a negative ContextTokens on
// the second data row fails naming line 3 and the field.
func TestContract(t *testing.T) {
	const in = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6800000,100,20\n2023-11-16 18:15:47.0000000,-5,20\n"
	_, err := workload.Read(strings.NewReader(in), "azure.csv", workload.Azure, workload.ReadOptions{})
	if err == nil {
		t.Fatal("accepted ContextTokens -5")
	}
	const want = `azure.csv: line 3: field "ContextTokens": must be a positive integer (got "-5")`
	if err.Error() != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	var e *workload.Error
	if !errors.As(err, &e) || e.Line != 3 || e.Field != "ContextTokens" || e.File != "azure.csv" || !errors.Is(err, workload.ErrField) {
		t.Errorf("error %#v is not an *Error{azure.csv, 3, ContextTokens, ErrField}", err)
	}
	// Skipped, it is a counted warning.
	tr, err := workload.Read(strings.NewReader(in), "azure.csv", workload.Azure, workload.ReadOptions{SkipBadRows: true})
	if err != nil || len(tr.Requests) != 1 || tr.Skipped != 1 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "line 3") {
		t.Fatalf("SkipBadRows: %v, %+v", err, tr)
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file    string
		format  workload.Format
		n       int
		timed   bool
		untimed int
		first   workload.Request // ID, Arrival, lengths, Session, Turn, N, Line; hashes checked by count
		hashes  int
		last    int64 // last arrival
	}{
		{"azure_conv.csv", workload.Azure, 20, true, 0,
			workload.Request{ID: "r2", PromptTokens: 374, OutputTokens: 44, N: 1, Line: 2}, 0, 0},
		{"mooncake_conversation.jsonl", workload.Mooncake, 20, true, 0,
			workload.Request{ID: "r1", PromptTokens: 6758, OutputTokens: 500, N: 1, Line: 1}, 14, 0},
		{"sharegpt_lengths.csv", workload.Vidur, 20, false, 0,
			workload.Request{ID: "r2", PromptTokens: 74, OutputTokens: 918, N: 1, Line: 2}, 0, 0},
		{"arxiv_lengths.csv", workload.Vidur, 20, false, 0,
			workload.Request{ID: "r2", PromptTokens: 3772, OutputTokens: 54, N: 1, Line: 2}, 0, 0},
		{"fineserve_synthetic.csv", workload.FineServe, 4, true, 1,
			workload.Request{ID: "r2", PromptTokens: 300, OutputTokens: 120, N: 1, Line: 2}, 0, 1_750_000_500},
		{"burstgpt_synthetic.csv", workload.BurstGPT, 4, true, 0,
			workload.Request{ID: "r2", PromptTokens: 472, OutputTokens: 18, N: 1, Line: 2}, 0, 113_500_000_000},
		{"ours.jsonl", workload.JSONL, 3, true, 0,
			workload.Request{ID: "a", PromptTokens: 1024, OutputTokens: 200, Session: "chat-1", Turn: 1, N: 1, Line: 1}, 2, 1_500_000_000},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []workload.Format{tc.format, workload.Auto} {
				tr, err := workload.Read(bytes.NewReader(data), tc.file, f, workload.ReadOptions{})
				if err != nil {
					t.Fatalf("format %v: %v", f, err)
				}
				if tr.Format != tc.format || len(tr.Requests) != tc.n || tr.Timed != tc.timed || tr.Untimed != tc.untimed || tr.Skipped != 0 {
					t.Fatalf("format %v: got %v, %d requests, timed %v, untimed %d, skipped %d", f, tr.Format, len(tr.Requests), tr.Timed, tr.Untimed, tr.Skipped)
				}
				got := tr.Requests[0]
				if len(got.PrefixHashes) != tc.hashes {
					t.Errorf("first request has %d prefix hashes, want %d", len(got.PrefixHashes), tc.hashes)
				}
				got.PrefixHashes = nil
				if !reflect.DeepEqual(got, tc.first) {
					t.Errorf("first request\n got %+v\nwant %+v", got, tc.first)
				}
				if tc.last != 0 {
					if l := tr.Requests[len(tr.Requests)-1].Arrival; l != tc.last {
						t.Errorf("last arrival %d, want %d", l, tc.last)
					}
				}
				checkSorted(t, tr)
			}
		})
	}
}

func checkSorted(t *testing.T, tr *workload.Trace) {
	t.Helper()
	for i := 1; i < len(tr.Requests); i++ {
		a, b := tr.Requests[i-1], tr.Requests[i]
		if a.Arrival > b.Arrival || a.Arrival == b.Arrival && a.Line >= b.Line {
			t.Fatalf("requests %d and %d out of order: %+v, %+v", i-1, i, a, b)
		}
	}
}

func TestAzureArrivals(t *testing.T) {
	tr, err := readString(t, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n2024-05-10 00:00:00.009930+00:00,1,1", workload.Azure, workload.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Requests[1].Arrival; got != 4_314_579_000 {
		t.Errorf("second arrival %d ns, want 4314579000", got)
	}
	if got := tr.Requests[2].Arrival % 1e9; got != 9_930_000+1e9-680_590_000 {
		t.Errorf("2024-style timestamp: fraction %d ns", got)
	}
}

// TestFineServeUntimed: a FineServe file whose rows all lack a timestamp is
// an untimed trace that keeps every row.
func TestFineServeUntimed(t *testing.T) {
	tr, err := readString(t, "input_length,output_length,latency,timestamp,architecture,scale\n5,1,,,Dense,x\n6,0,,,Dense,x\n", workload.FineServe, workload.ReadOptions{})
	if err != nil || tr.Timed || len(tr.Requests) != 2 || tr.Untimed != 0 {
		t.Fatalf("%v %+v", err, tr)
	}
}

func TestBurstGPTSessions(t *testing.T) {
	tr, err := readString(t, "Timestamp,Session ID,Model,Request tokens,Response tokens,Total tokens,Log Type\n10,x,ChatGPT,5,5,10,Conversation log\n11,y,ChatGPT,5,5,10,Conversation log\n12,x,GPT-4,5,5,10,Conversation log\n", workload.BurstGPT, workload.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Requests {
		got = append(got, r.Session+"/"+string(rune('0'+r.Turn)))
	}
	if strings.Join(got, " ") != "x/1 y/1 x/2" {
		t.Errorf("sessions %v", got)
	}
	if tr.Requests[0].Arrival != 0 || tr.Requests[2].Arrival != 2e9 {
		t.Errorf("arrivals not relative to the first row: %+v", tr.Requests)
	}
}

// TestBOMAndCRLF reads the same trace with and without a BOM and CRLF
// endings, with and without a final line ending.
func TestBOMAndCRLF(t *testing.T) {
	for _, f := range []string{"azure_conv.csv", "sharegpt_lengths.csv", "mooncake_conversation.jsonl", "ours.jsonl", "burstgpt_synthetic.csv", "fineserve_synthetic.csv"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		lf := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
		want, err := workload.Read(bytes.NewReader(lf), f, workload.Auto, workload.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crlf := bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n"))
		for name, v := range map[string][]byte{
			"bom":            append([]byte("\uFEFF"), lf...),
			"crlf":           crlf,
			"cr (old Mac)":   bytes.ReplaceAll(lf, []byte("\n"), []byte("\r")),
			"bom+crlf":       append([]byte("\uFEFF"), crlf...),
			"no final break": bytes.TrimRight(crlf, "\r\n"),
		} {
			got, err := workload.Read(bytes.NewReader(v), f, workload.Auto, workload.ReadOptions{})
			if err != nil {
				t.Fatalf("%s %s: %v", f, name, err)
			}
			if !equalRequests(got.Requests, want.Requests, true) {
				t.Errorf("%s %s: requests differ", f, name)
			}
		}
	}
}

func equalRequests(a, b []workload.Request, lines bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !lines {
			x.Line, y.Line = 0, 0
		}
		if len(x.PrefixHashes) != len(y.PrefixHashes) || (x.PrefixHashes == nil) != (y.PrefixHashes == nil) {
			return false
		}
		for j := range x.PrefixHashes {
			if x.PrefixHashes[j] != y.PrefixHashes[j] {
				return false
			}
		}
		x.PrefixHashes, y.PrefixHashes = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func TestDetect(t *testing.T) {
	tests := []struct {
		header string
		want   workload.Format
	}{
		{"TIMESTAMP,ContextTokens,GeneratedTokens", workload.Azure},
		{"\uFEFFTIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.68,1,1", workload.Azure},
		{"TIMESTAMP,NumImages,ContextTokens,GeneratedTokens", workload.Azure},
		{"num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio", workload.Vidur},
		{"input_length,output_length,latency,timestamp,architecture,scale", workload.FineServe},
		{"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type", workload.BurstGPT},
		{`"Timestamp","Session ID","Request tokens","Response tokens"`, workload.BurstGPT},
		{`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0]}`, workload.Mooncake},
		{`{"arrival_s":0,"prompt_tokens":1,"output_tokens":1}`, workload.JSONL},
	}
	for _, tc := range tests {
		got, err := workload.Detect([]byte(tc.header))
		if err != nil || got != tc.want {
			t.Errorf("Detect(%q) = %v, %v; want %v", tc.header, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "a,b,c", "{", `{"x":1}`, "[1,2]", "ContextTokens"} {
		if f, err := workload.Detect([]byte(bad)); !errors.Is(err, workload.ErrFormat) {
			t.Errorf("Detect(%q) = %v, %v; want ErrFormat", bad, f, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range append(workload.Formats(), workload.Auto) {
		g, err := workload.ParseFormat(strings.ToUpper(f.String()))
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, g, err)
		}
	}
	if f, err := workload.ParseFormat(""); err != nil || f != workload.Auto {
		t.Errorf(`ParseFormat("") = %v, %v`, f, err)
	}
	if _, err := workload.ParseFormat("sharegpt"); !errors.Is(err, workload.ErrFormat) || !strings.Contains(err.Error(), "vidur") {
		t.Errorf("ParseFormat(sharegpt) = %v", err)
	}
}

// TestErrors has one case per kind of error, with the line, field and
// message expected.
func TestErrors(t *testing.T) {
	const (
		az = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
		vd = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
		fs = "input_length,output_length,latency,timestamp,architecture,scale\n"
		bg = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	)
	long := strings.Repeat("x", workload.MaxLineBytes+1)
	tests := []struct {
		name   string
		in     string
		format workload.Format
		kind   error
		line   int
		field  string
		msg    string
	}{
		{"negative output", az + "2023-11-16 18:15:46.68,1,-1\n", workload.Azure, workload.ErrField, 2, "GeneratedTokens", `must be a non-negative integer (got "-1")`},
		{"zero prompt", az + "2023-11-16 18:15:46.68,0,1\n", workload.Azure, workload.ErrField, 2, "ContextTokens", `must be a positive integer (got "0")`},
		{"non-integer", vd + "1.5,2,3.5,1\n", workload.Vidur, workload.ErrField, 2, "num_prefill_tokens", `must be a positive integer (got "1.5")`},
		{"empty count", vd + ",2,,1\n", workload.Vidur, workload.ErrField, 2, "num_prefill_tokens", "missing"},
		{"too many tokens", vd + "16777217,2,,1\n", workload.Vidur, workload.ErrField, 2, "num_prefill_tokens", "must be at most 16777216"},
		{"total mismatch", vd + "10,2,13,5\n", workload.Vidur, workload.ErrField, 2, "num_total_tokens", "must equal prompt + output = 12"},
		{"bad time", az + "2023-11-16T18,1,1\n", workload.Azure, workload.ErrField, 2, "TIMESTAMP", "must be a time like"},
		{"year", az + "1960-11-16 18:15:46,1,1\n", workload.Azure, workload.ErrField, 2, "TIMESTAMP", "year out of range"},
		{"negative time", fs + "1,1,,-5,Dense,x\n", workload.FineServe, workload.ErrField, 2, "timestamp", `must be a non-negative number (got "-5")`},
		{"huge time", bg + "1e300,m,1,1,2,x\n", workload.BurstGPT, workload.ErrField, 2, "Timestamp", "too large"},
		{"out of order", az + "2023-11-16 18:15:47,1,1\n2023-11-16 18:15:46,1,1\n", workload.Azure, workload.ErrOrder, 3, "TIMESTAMP", "arrives before the row on line 2"},
		{"mooncake out of order", `{"timestamp":5,"input_length":1,"output_length":1}` + "\n" + `{"timestamp":4,"input_length":1,"output_length":1}`, workload.Mooncake, workload.ErrOrder, 2, "timestamp", "sorted"},
		{"missing column", "TIMESTAMP,ContextTokens\n", workload.Azure, workload.ErrColumn, 1, "GeneratedTokens", "missing column"},
		{"repeated column", "TIMESTAMP,ContextTokens,GeneratedTokens,contexttokens\n", workload.Azure, workload.ErrColumn, 1, "ContextTokens", "duplicate column: columns 2 and 4 of the azure header"},
		{"empty csv", "", workload.Vidur, workload.ErrColumn, 1, "", "header is missing"},
		{"empty auto", "\n\n", workload.Auto, workload.ErrFormat, 1, "", "cannot detect"},
		{"unknown header", "a,b\n1,2\n", workload.Auto, workload.ErrFormat, 1, "", "cannot tell the format"},
		{"field count", az + "2023-11-16 18:15:46,1\n", workload.Azure, workload.ErrSyntax, 2, "", "has 2 fields, the header has 3"},
		{"bad quote", az + "\"2023-11-16 18:15:46,1,1\n", workload.Azure, workload.ErrSyntax, 2, "", "malformed CSV"},
		// Issue 28: the line of the file, not encoding/csv's "parse error on line 1".
		{"quoted line break", az + "2023-11-16 18:15:46,\"37\n4\",30\n", workload.Azure, workload.ErrSyntax, 2, "",
			`malformed CSV: column 2: quoted field without its closing " on this line (a field cannot hold a line break)`},
		{"nul on line 2", az + "2023-11-16 18:15:46,1,1\x00\n", workload.Azure, workload.ErrNotText, 2, "", "byte 63 is NUL"},
		{"long line", vd + "1,1,2,1\n" + long + "\n", workload.Vidur, workload.ErrSyntax, 3, "", "longer than"},
		{"long header", long, workload.Auto, workload.ErrSyntax, 1, "", "longer than"},
		{"not json", "[1]\n", workload.Mooncake, workload.ErrSyntax, 1, "", "want a JSON object"},
		// A pretty-printed document: its first line alone is an unfinished object.
		{"pretty json", "{\n  \"prompt_tokens\": 5,\n  \"output_tokens\": 1\n}\n", workload.Auto, workload.ErrFormat, 1, "",
			"opens a JSON object that goes on past the line"},
		{"bad first json", "{\"prompt_tokens\": x}\n", workload.Auto, workload.ErrFormat, 1, "", "starts like JSON but is not a JSON object: invalid character"},
		// AccelMark's result.json, pretty-printed: recognised from its keys, refused with the reason.
		{"accelmark", "{\n  \"schema_version\": \"1.0\",\n  \"suite_id\": \"suite_A\"\n}\n", workload.Auto, workload.ErrFormat, 1, "",
			"an AccelMark result.json (schema_version, suite_id), a different harness"},
		{"bad json", `{"timestamp":1,` + "\n", workload.Mooncake, workload.ErrSyntax, 1, "", "malformed JSON"},
		{"two objects", `{"prompt_tokens":1,"output_tokens":1}{}` + "\n", workload.JSONL, workload.ErrSyntax, 1, "", "after the JSON object"},
		{"mooncake missing", `{"timestamp":1,"input_length":5}`, workload.Mooncake, workload.ErrField, 1, "output_length", "missing"},
		{"mooncake hashes", `{"timestamp":1,"input_length":5,"output_length":1,"hash_ids":[-1]}`, workload.Mooncake, workload.ErrField, 1, "hash_ids", "non-negative integers"},
		{"mooncake string", `{"timestamp":"1","input_length":5,"output_length":1}`, workload.Mooncake, workload.ErrField, 1, "timestamp", "non-negative number"},
		{"jsonl repeated", `{"prompt_tokens":1,"output_tokens":1,"prompt_tokens":2}`, workload.JSONL, workload.ErrField, 1, "prompt_tokens", "appears twice"},
		{"mooncake repeated", `{"timestamp":0,"input_length":1,"output_length":1,"input_length":2}`, workload.Mooncake, workload.ErrField, 1, "input_length", "appears twice"},
		{"json cut", `{"prompt_tokens":1,"output_tokens"`, workload.JSONL, workload.ErrSyntax, 1, "", "malformed JSON"},
		{"jsonl unknown", `{"prompt_tokens":1,"output_tokens":1,"beam":2}`, workload.JSONL, workload.ErrField, 1, "beam", "unknown field"},
		{"jsonl quoted count", `{"prompt_tokens":"7","output_tokens":1}`, workload.JSONL, workload.ErrField, 1, "prompt_tokens", "positive integer"},
		{"jsonl n", `{"prompt_tokens":1,"output_tokens":1,"n":0}`, workload.JSONL, workload.ErrField, 1, "n", "from 1 to 1024"},
		{"jsonl turn alone", `{"prompt_tokens":1,"output_tokens":1,"turn":2}`, workload.JSONL, workload.ErrField, 1, "turn", "needs a session"},
		{"jsonl empty id", `{"id":"","prompt_tokens":1,"output_tokens":1}`, workload.JSONL, workload.ErrField, 1, "id", "non-empty string"},
		{"jsonl duplicate id", `{"id":"a","prompt_tokens":1,"output_tokens":1}` + "\n" + `{"id":"a","prompt_tokens":1,"output_tokens":1}`, workload.JSONL, workload.ErrField, 2, "id", "duplicate of line 1"},
		{"jsonl mixed timing", `{"arrival_s":1,"prompt_tokens":1,"output_tokens":1}` + "\n" + `{"prompt_tokens":1,"output_tokens":1}`, workload.JSONL, workload.ErrField, 2, "arrival_s", "every row or on none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workload.Read(strings.NewReader(tc.in), "f", tc.format, workload.ReadOptions{})
			var e *workload.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			if !errors.Is(err, tc.kind) || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) || e.File != "f" {
				t.Errorf("got %#v\n(%v)\nwant kind %v, line %d, field %q, message containing %q", e, err, tc.kind, tc.line, tc.field, tc.msg)
			}
			want := "f: line "
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
		})
	}
}

func TestSkipBadRows(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("num_prefill_tokens,num_decode_tokens\n")
	for i := 0; i < 30; i++ {
		sb.WriteString("-1,1\n5,5\n")
	}
	sb.WriteString("\n7,7\n")
	tr, err := readString(t, sb.String(), workload.Vidur, workload.ReadOptions{SkipBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 31 || tr.Skipped != 30 || len(tr.Warnings) != workload.MaxWarnings {
		t.Fatalf("%d requests, %d skipped, %d warnings", len(tr.Requests), tr.Skipped, len(tr.Warnings))
	}
	if last := tr.Requests[30]; last.PromptTokens != 7 || last.Line != 63 {
		t.Errorf("the row after a blank line: %+v", last)
	}
	// An over-long line is not a bad row to skip: it fails at once, even
	// under SkipBadRows (the reader never reads on looking for its end).
	_, err = readString(t, sb.String()+strings.Repeat("9", workload.MaxLineBytes+1)+"\n8,8\n", workload.Vidur, workload.ReadOptions{SkipBadRows: true})
	var e *workload.Error
	if !errors.As(err, &e) || !errors.Is(err, workload.ErrSyntax) || e.Line != 64 || !strings.Contains(e.Msg, "workload.MaxLineBytes") {
		t.Errorf("long line under SkipBadRows: %v", err)
	}
	if !strings.Contains(tr.Warnings[0], `t.csv: line 2: field "num_prefill_tokens"`) {
		t.Errorf("warning %q", tr.Warnings[0])
	}
	// Header errors are not skipped.
	if _, err := readString(t, "num_prefill_tokens\n1\n", workload.Vidur, workload.ReadOptions{SkipBadRows: true}); !errors.Is(err, workload.ErrColumn) {
		t.Errorf("missing column under SkipBadRows: %v", err)
	}
}

func TestMaxRows(t *testing.T) {
	tr, err := readString(t, "num_prefill_tokens,num_decode_tokens\n1,1\n2,2\n3,3\n", workload.Vidur, workload.ReadOptions{MaxRows: 2})
	if err != nil || len(tr.Requests) != 2 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "MaxRows") {
		t.Fatalf("%v %+v", err, tr)
	}
}

func TestReadError(t *testing.T) {
	r := errReader{}
	_, err := workload.Read(r, "x", workload.Vidur, workload.ReadOptions{})
	var e *workload.Error
	if !errors.Is(err, errBoom) || errors.As(err, &e) {
		t.Errorf("got %v", err)
	}
}

var errBoom = errors.New("boom")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBoom }

// TestWriteJSONLRoundTrip writes every fixture as our JSONL and reads it
// back.
func TestWriteJSONLRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		data, _ := os.ReadFile(f)
		tr, err := workload.Read(bytes.NewReader(data), f, workload.Auto, workload.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, tr)
	}
}

func roundTrip(t *testing.T, tr *workload.Trace) {
	t.Helper()
	var buf bytes.Buffer
	if err := workload.WriteJSONL(&buf, tr); err != nil {
		t.Fatal(err)
	}
	again, err := workload.Read(bytes.NewReader(buf.Bytes()), "rewritten", workload.JSONL, workload.ReadOptions{})
	if err != nil {
		t.Fatalf("%s: reading back: %v\n%s", tr.Name, err, buf.Bytes())
	}
	if again.Timed != tr.Timed || !equalRequests(again.Requests, tr.Requests, false) {
		t.Fatalf("%s: round trip differs\n%+v\n%+v", tr.Name, tr.Requests, again.Requests)
	}
}

// TestSharedTraces reads the full development traces, when present, and
// checks their row counts against shared/data/traces/README.md.
func TestSharedTraces(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "traces")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared traces not found at %s (%v); this test reads them when the shared checkout is present", dir, err)
	}
	if testing.Short() {
		t.Skip("reads 5 MB of traces; skipped with -short")
	}
	tests := []struct {
		file     string
		format   workload.Format
		n        int
		untimed  int
		timed    bool
		lastSecs int64 // last arrival, whole seconds
	}{
		{"AzureLLMInferenceTrace_conv.csv", workload.Azure, 19366, 0, true, 3501},
		{"mooncake_conversation_trace.jsonl", workload.Mooncake, 12031, 0, true, 3536},
		{"fineserve_Dense_30to100B.part1.csv", workload.FineServe, 11908, 3175, true, 14398},
		{"sharegpt_8k_filtered_stats_llama2_tokenizer.part1.csv", workload.Vidur, 15366, 0, false, 0},
		{"arxiv_summarization_stats_llama2_tokenizer_filtered_v2.part1.csv", workload.Vidur, 14129, 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			fh, err := os.Open(filepath.Join(dir, tc.file))
			if err != nil {
				t.Skipf("%v", err)
			}
			defer fh.Close()
			tr, err := workload.Read(fh, tc.file, workload.Auto, workload.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			last := tr.Requests[len(tr.Requests)-1].Arrival / 1e9
			if tr.Format != tc.format || len(tr.Requests) != tc.n || tr.Untimed != tc.untimed || tr.Timed != tc.timed || last != tc.lastSecs {
				t.Errorf("got %v, %d requests, %d untimed, timed %v, last arrival %d s", tr.Format, len(tr.Requests), tr.Untimed, tr.Timed, last)
			}
			checkSorted(t, tr)
			if tc.format == workload.Mooncake {
				for _, r := range tr.Requests {
					if len(r.PrefixHashes) != (r.PromptTokens+511)/512 {
						t.Fatalf("line %d: %d hash ids for %d tokens", r.Line, len(r.PrefixHashes), r.PromptTokens)
					}
				}
			}
			roundTrip(t, tr)
		})
	}
}
