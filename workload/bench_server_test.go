package workload_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestBenchServer: the server's settings a run records (vllm bench sweep's
// serve parameters, --metadata KEY=VALUE) are kept in ServerKeys' order,
// as text; null is absent; an object or an array is refused naming the key.
func TestBenchServer(t *testing.T) {
	const lens = `"input_lens": [5, 7], "output_lens": [3, 4]`
	runs, err := workload.ReadBench(strings.NewReader(`{"backend": "vllm", "request_rate": "inf", "max_concurrency": 2, `+lens+
		`, "max_num_seqs": 4, "tensor_parallel_size": "8", "enable_prefix_caching": false, "kv_cache_dtype": "fp8", "quantization": null, "gpu_memory_utilization": 0.85}`), "sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []workload.BenchArg{{Key: "tensor_parallel_size", Value: "8"}, {Key: "kv_cache_dtype", Value: "fp8"}, {Key: "max_num_seqs", Value: "4"},
		{Key: "enable_prefix_caching", Value: "false"}, {Key: "gpu_memory_utilization", Value: "0.85"}}
	if got := runs[0].Server; !reflect.DeepEqual(got, want) {
		t.Errorf("server %+v, want %+v", got, want)
	}
	runs, err = workload.ReadBench(strings.NewReader(`{"backend": "vllm", "request_rate": 1, `+lens+`}`), "plain.json")
	if err != nil || runs[0].Server != nil {
		t.Errorf("no settings: %+v, %v", runs, err)
	}
	_, err = workload.ReadBench(strings.NewReader(`{"backend": "vllm", "request_rate": 1, `+lens+`, "dtype": {"weights": "fp8"}}`), "bad.json")
	var e *workload.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), `field "dtype": must be a string, number, boolean or null (got "{\"weights\": \"fp8\"}")`) {
		t.Errorf("an object: %v", err)
	}
}
