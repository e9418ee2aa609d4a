package sim

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// Config.RequestTimes keeps one entry per completed request whose TTFTs
// and TPOTs give the result's own latencies back (LatencyOf), and changes
// nothing else of the run.
func TestRequestTimes(t *testing.T) {
	reqs := make([]workload.Request, 120)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * 20e6,
			PromptTokens: 50 + 37*(i%23), OutputTokens: i % 9, N: 1}
	}
	c := tinyConfig(512 << 20)
	_, plain := runEngine(t, c, reqs)
	c.RequestTimes = true
	_, res := runEngine(t, c, reqs)
	if len(plain.RequestTimes) != 0 {
		t.Fatalf("kept %d request times without Config.RequestTimes", len(plain.RequestTimes))
	}
	if len(res.RequestTimes) != res.RequestsCompleted || res.RequestsCompleted == 0 {
		t.Fatalf("%d request times for %d completed requests", len(res.RequestTimes), res.RequestsCompleted)
	}
	var ttft, tpot []float64
	outputs := map[int]bool{}
	for _, rt := range res.RequestTimes {
		outputs[rt.Output] = true
		if rt.HasTTFT != (rt.Output > 0) || rt.HasTPOT != (rt.Output > 1) {
			t.Fatalf("%+v: a TTFT needs an output token, a TPOT two", rt)
		}
		if rt.HasTTFT {
			ttft = append(ttft, rt.TTFT)
		}
		if rt.HasTPOT {
			tpot = append(tpot, rt.TPOT)
		}
	}
	if len(outputs) != 9 {
		t.Errorf("output lengths %v: want the 9 of the requests (0 to 8)", outputs)
	}
	if got := LatencyOf(ttft); got != res.TTFT {
		t.Errorf("TTFT from the request times %+v, the result's %+v", got, res.TTFT)
	}
	if got := LatencyOf(tpot); got != res.TPOT || got.P99 == 0 {
		t.Errorf("TPOT from the request times %+v, the result's %+v", got, res.TPOT)
	}
	res.RequestTimes = nil
	if !reflect.DeepEqual(res, plain) {
		t.Errorf("the run differs with request times kept:\n%+v\n%+v", res, plain)
	}
}
