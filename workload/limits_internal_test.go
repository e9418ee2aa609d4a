package workload

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// lowered runs f with Read's bounds lowered to small values (the real ones
// need gigabytes of input to reach), then restores them.
func lowered(t *testing.T, requests, hashes int, total int64, f func()) {
	t.Helper()
	oldR, oldH, oldL := requestLimit, hashLimit, lineLimits
	defer func() { requestLimit, hashLimit, lineLimits = oldR, oldH, oldL }()
	requestLimit, hashLimit, lineLimits.Total = requests, hashes, total
	f()
}

// TestLimits: each bound on a whole trace is an ErrTooLarge error naming
// the line, the limit and what to do; MaxRows reads the start of such a
// file.
func TestLimits(t *testing.T) {
	vidur := "num_prefill_tokens,num_decode_tokens\n" + strings.Repeat("1,1\n", 10)
	lowered(t, 5, 1<<20, 1<<20, func() {
		_, err := Read(strings.NewReader(vidur), "v.csv", Auto, ReadOptions{})
		want := "v.csv: line 7: more than 5 requests (workload.MaxRequests); read the start of the file with a row limit (--max-rows)"
		if !errors.Is(err, ErrTooLarge) || err.Error() != want {
			t.Errorf("requests:\n got  %v\n want %s", err, want)
		}
		if tr, err := Read(strings.NewReader(vidur), "v.csv", Auto, ReadOptions{MaxRows: 5}); err != nil || len(tr.Requests) != 5 {
			t.Errorf("MaxRows at the limit: %v", err)
		}
	})
	moon := strings.Repeat(`{"timestamp":0,"input_length":600,"output_length":1,"hash_ids":[1,2]}`+"\n", 3)
	lowered(t, 100, 5, 1<<20, func() {
		_, err := Read(strings.NewReader(moon), "m.jsonl", Auto, ReadOptions{SkipBadRows: true})
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Line != 3 || !strings.Contains(e.Msg, "more than 5 prefix ids in all (workload.MaxPrefixHashes)") {
			t.Errorf("prefix ids: %v", err)
		}
	})
	// An endless run of blank lines, or of bad rows skipped, stops at the
	// input bound.
	for name, in := range map[string]string{
		"blank lines": "num_prefill_tokens,num_decode_tokens\n" + strings.Repeat("\n", 2000),
		"bad rows":    "num_prefill_tokens,num_decode_tokens\n" + strings.Repeat("-1,1\n", 500),
	} {
		lowered(t, 100, 100, 1000, func() {
			_, err := Read(strings.NewReader(in), "v.csv", Vidur, ReadOptions{SkipBadRows: true})
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) ||
				e.Msg != "the input goes on past 1000 bytes (workload.MaxInputBytes); read the start of it with a row limit (--max-rows)" {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
}

// TestSessionLimits: a session config whose turns or prefix ids would not
// fit in memory fails with ErrConfig instead of allocating them.
func TestSessionLimits(t *testing.T) {
	cfg := SessionConfig{Sessions: 1, Rate: 1, MinTurns: 1 << 30, MaxTurns: 1 << 30, MinUser: 512, MaxUser: 512}
	lowered(t, 1000, 1<<20, 1<<20, func() {
		_, err := Sessions(cfg, rand.New(rand.NewPCG(1, 2)))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "more than 1000 turns in all (workload.MaxRequests)") {
			t.Errorf("turns: %v", err)
		}
	})
	lowered(t, 1<<20, 5000, 1<<20, func() {
		_, err := Sessions(cfg, rand.New(rand.NewPCG(1, 2)))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "more than 5000 prefix ids in all (workload.MaxPrefixHashes)") {
			t.Errorf("prefix ids: %v", err)
		}
	})
}
