package untrusted

import "testing"

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		name, field, msg string
		line             int
		want             string
	}{
		{"ops.jsonl", "size", "must be a positive integer (got -5)", 12, `ops.jsonl: line 12: field "size": must be a positive integer (got -5)`},
		{"", "", "not a JSON object", 3, "line 3: not a JSON object"},
		{"a.csv", "", "too long", 1, "a.csv: line 1: too long"},
	} {
		if got := Format(tc.name, tc.line, tc.field, tc.msg); got != tc.want {
			t.Errorf("Format = %q, want %q", got, tc.want)
		}
	}
}
