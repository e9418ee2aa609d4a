package workload

import (
	"errors"
	"strings"
	"testing"
)

// TestBenchLimits: each bound of ReadBench is an ErrTooLarge error naming
// the limit and what to do (the real bounds need hundreds of megabytes to
// reach, so the test lowers them).
func TestBenchLimits(t *testing.T) {
	oldL, oldI, oldR := benchLimits, benchITLLimit, requestLimit
	defer func() { benchLimits, benchITLLimit, requestLimit = oldL, oldI, oldR }()

	benchLimits.Line, benchLimits.Total = 1000, 1000
	_, err := ReadBench(strings.NewReader(`{"backend":"vllm","request_rate":1,"input_lens":[`+strings.Repeat("1,", 600)+"1]}"), "big.json")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Line != 1 || !strings.Contains(e.Msg, "workload.MaxBenchBytes") {
		t.Errorf("bytes: %v", err)
	}
	benchLimits = oldL

	benchITLLimit = 5
	_, err = ReadBench(strings.NewReader(`{"backend":"vllm","request_rate":1,"input_lens":[1,1],"output_lens":[4,4],"itls":[[1,1,1],[1,1,1]]}`), "itl.json")
	if !errors.Is(err, ErrTooLarge) || err.Error() != `itl.json: line 1: field "itls[1]": more than 5 inter-token gaps in all (workload.MaxBenchITLs); split the file` {
		t.Errorf("itls: %v", err)
	}
	benchITLLimit = oldI

	requestLimit = 3
	_, err = ReadBench(strings.NewReader(`{"backend":"vllm","request_rate":1,"input_lens":[1,1,1,1],"output_lens":[4,4,4,4]}`), "n.json")
	if !errors.Is(err, ErrTooLarge) || err.Error() != `n.json: line 1: field "input_lens": more than 3 requests (workload.MaxRequests)` {
		t.Errorf("requests: %v", err)
	}
	requestLimit = oldR

	runs := strings.Repeat(`{"completed":1}`+"\n", MaxBenchRuns+1)
	_, err = ReadBench(strings.NewReader(runs), "runs.jsonl")
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Line != MaxBenchRuns+1 ||
		e.Msg != "more than 10000 runs (workload.MaxBenchRuns); split the file" {
		t.Errorf("runs: %v", err)
	}

	// A few bytes may not ask for more lengths than a generated workload.
	_, err = Read(strings.NewReader(`{"backend":"sglang","dataset_name":"random","request_rate":1,"random_input_len":8,"random_output_len":8,"num_prompts":1000001}`),
		"draw.jsonl", VLLMBench, ReadOptions{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `field "num_prompts": 1000001 requests to draw lengths for is more than 1000000`) {
		t.Errorf("drawn: %v", err)
	}
}
