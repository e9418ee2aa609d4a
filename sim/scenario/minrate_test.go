package scenario

import (
	"strings"
	"testing"
)

// TestRatesFitTheClock: a rate at which a workload's drawn arrivals would
// not fit the simulated clock is refused, naming the key, the span and
// the lowest rate that fits (workload.MinRate). Before, an untimed trace
// at 1e-300 requests per second ran, its arrivals cut to 73 minutes apart
// (the review's item 6); since gaps are drawn whole, they would pile up at
// the clock's end.
func TestRatesFitTheClock(t *testing.T) {
	untimed := "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n" + strings.Repeat("10,5,15,2\n", 1000)
	for _, tc := range []struct{ name, yaml, want string }{
		{"trace", "workload:\n  trace: {file: t.csv, rate: 1e-300}\n",
			`line 7: field "workload.trace.rate": 1e-300 requests per second: the trace's 1000 requests would arrive over about 3.17e+295 years, ` +
				"past the 2.3 years a run's drawn arrivals may span (workload.MaxArrivalSpan, a 64th of the 146 years the simulated clock holds); give at least 1.4e-05 requests per second"},
		{"trace at 1e-6", "workload:\n  trace: {file: t.csv, rate: 1e-6}\n", `line 7: field "workload.trace.rate": 1e-06 requests per second: the trace's 1000 requests would arrive over about 31.7 years`},
		{"requests", "workload:\n  requests: {rate: 1e-9, count: 100, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n",
			`line 7: field "workload.requests.rate": 1e-09 requests per second: the 100 requests of workload.requests.count would arrive over about 3.14e+03 years`},
		{"sessions", "workload:\n  sessions: {rate: 1e-9, count: 100, min_turns: 1, max_turns: 2, min_user: 1, max_user: 2}\n",
			`line 7: field "workload.sessions.rate": 1e-09 sessions per second: the 100 sessions of workload.sessions.count would arrive over`},
		{"think", "workload:\n  sessions: {rate: 1, count: 2, min_turns: 1, max_turns: 3, min_user: 1, max_user: 2, think_s: 1e12}\n",
			`line 7: field "workload.sessions.think_s": 1e+12: a session's 3 turns would span about 6.34e+04 years`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(read(t, base+tc.yaml), memOpener(map[string]string{"t.csv": untimed}))
			if want := "bad scenario: test.yaml: " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v\nwant %q...", err, want)
			}
		})
	}
	// At the lowest rate that fits, and with a duration to end them, the
	// arrivals are drawn.
	for _, y := range []string{"workload:\n  trace: {file: t.csv, rate: 1.4e-5}\n",
		"duration: 1h\nworkload:\n  sessions: {rate: 1e-9, min_turns: 1, max_turns: 2, min_user: 1, max_user: 2}\n"} {
		if _, err := Build(read(t, base+y), memOpener(map[string]string{"t.csv": untimed})); err != nil {
			t.Errorf("%s: %v", y, err)
		}
	}
}
