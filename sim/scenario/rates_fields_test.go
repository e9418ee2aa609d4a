package scenario

import (
	"strings"
	"testing"
)

// TestBadNumbersNameTheirKey: a negative, NaN or infinite rate (and a
// negative count or row limit) is refused naming its key and line. Before,
// sessions at "rate: -1" or ".nan" said `field "workload.sessions": give a
// count, or a rate and a duration`, not that the rate was wrong (the
// review's item 3); with a count, "Sessions: Rate must be ..."; requests
// said `field "workload.requests": bad configuration: Poisson: rate must
// be ...`; a timed trace's "rate: -1" or ".nan" was ignored, the file's
// times kept; an untimed one's said the file "has no arrival times; give a
// rate"; "max_rows: -1" named no field.
func TestBadNumbersNameTheirKey(t *testing.T) {
	sessions := "workload:\n  sessions: {min_turns: 1, max_turns: 2, min_user: 1, max_user: 2, rate: %s}\n"
	requests := "workload:\n  requests: {count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}, %s}\n"
	trace := "workload:\n  trace: {file: t.csv, %s}\n"
	timed := "timestamp,input_length,output_length\n0,10,5\n1000,10,5\n"
	untimed := "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n10,5,15,2\n10,5,15,2\n"
	at := func(f, v string) string { return strings.Replace(f, "%s", v, 1) }
	for _, tc := range []struct{ name, yaml, file, want string }{
		{"sessions rate -1", "duration: 30m\n" + at(sessions, "-1"), "", `line 8: field "workload.sessions.rate": -1: want a positive number of new sessions per second`},
		{"sessions rate NaN", "duration: 30m\n" + at(sessions, ".nan"), "", `line 8: field "workload.sessions.rate": NaN: want a positive number`},
		{"sessions rate Inf", "duration: 30m\n" + at(sessions, ".inf"), "", `line 8: field "workload.sessions.rate": +Inf: want a positive number`},
		{"sessions rate -1 with a count", at(sessions, "-1, count: 4"), "", `line 7: field "workload.sessions.rate": -1: want a positive number`},
		{"sessions without rate", "duration: 30m\n" + at(sessions, "0"), "", `line 8: field "workload.sessions.rate": missing: want a positive number`},
		{"requests rate -1", at(requests, "rate: -1"), "", `line 7: field "workload.requests.rate": -1: want a positive number of requests per second`},
		{"requests rate NaN", at(requests, "rate: .nan"), "", `line 7: field "workload.requests.rate": NaN: want`},
		{"requests cv NaN", at(requests, "rate: 1, cv: .nan"), "", `line 7: field "workload.requests.cv": NaN: want a coefficient of variation of the gaps from 0.01 to 100`},
		{"requests cv -2", at(requests, "rate: 1, cv: -2"), "", `line 7: field "workload.requests.cv": -2: want`},
		{"requests count -3", strings.Replace(at(requests, "rate: 1"), "count: 3", "count: -3", 1), "", `line 7: field "workload.requests.count": -3 is negative`},
		{"timed trace rate -1", at(trace, "rate: -1"), timed, `line 7: field "workload.trace.rate": -1: want a positive number of requests per second (absent or 0: the file's own arrival times)`},
		{"timed trace rate NaN", at(trace, "rate: .nan"), timed, `line 7: field "workload.trace.rate": NaN: want`},
		{"untimed trace rate -1", at(trace, "rate: -1"), untimed, `line 7: field "workload.trace.rate": -1: want`},
		{"trace max_rows -1", at(trace, "max_rows: -1"), timed, `line 7: field "workload.trace.max_rows": -1 is negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(read(t, base+tc.yaml), memOpener(map[string]string{"t.csv": tc.file}))
			if want := "bad scenario: test.yaml: " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v\nwant %q...", err, want)
			}
		})
	}
}
