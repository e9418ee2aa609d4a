package sim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestWarmPrompts: Config.WarmPrompts replays a repeated benchmark. Each
// request's prompt is found cached but for the block holding its last
// token, so its prefill computes only that block; a cold run computes
// every prompt token. The hits are the requests', not the warm-up's.
func TestWarmPrompts(t *testing.T) {
	const n, prompt = 8, 100 // 100 tokens: 6 full blocks of 16, the 7th holds the last token
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * 1e9, PromptTokens: prompt, OutputTokens: 4, N: 1}
	}
	c := tinyConfig(64 << 20)
	c.KV, c.Alloc = kvOf("paged:16"), allocOf("caching")
	_, cold := runEngine(t, c, reqs)
	c.WarmPrompts = true
	_, warm := runEngine(t, c, reqs)
	if cold.PrefixHitTokens != 0 {
		t.Fatalf("cold run hit %d tokens", cold.PrefixHitTokens)
	}
	if want := int64(n * 6 * 16); warm.PrefixHitTokens != want || warm.PrefixQueryTokens != n*prompt {
		t.Fatalf("warm run: %d of %d prompt tokens hit, want %d of %d", warm.PrefixHitTokens, warm.PrefixQueryTokens, want, n*prompt)
	}
	if !(warm.TTFT.P50 < cold.TTFT.P50) {
		t.Fatalf("warm TTFT p50 %v not below cold %v", warm.TTFT.P50, cold.TTFT.P50)
	}
	if warm.OutputTokens != cold.OutputTokens || warm.RequestsCompleted != n {
		t.Fatalf("warm run: %d tokens, %d completed; cold %d tokens", warm.OutputTokens, warm.RequestsCompleted, cold.OutputTokens)
	}

	// Two requests with one prompt (equal prefix ids): still one prompt.
	same := []workload.Request{
		{ID: "a", PromptTokens: prompt, OutputTokens: 2, N: 1, PrefixHashes: []uint64{5}},
		{ID: "b", Arrival: 1e9, PromptTokens: prompt, OutputTokens: 2, N: 1, PrefixHashes: []uint64{5}},
	}
	_, res := runEngine(t, c, same)
	if res.PrefixHitTokens != 2*6*16 {
		t.Fatalf("shared prompt: %d tokens hit, want %d", res.PrefixHitTokens, 2*6*16)
	}

	// Refused where nothing can be cached.
	c.PrefixCaching = false
	if _, err := New(c, reqs); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("WarmPrompts without prefix caching: %v, want ErrBadConfig", err)
	}

	// A strategy without a prefix cache: the same run as cold.
	c.PrefixCaching, c.KV = true, kvOf("contiguous-max")
	_, warmC := runEngine(t, c, reqs)
	c.WarmPrompts = false
	_, coldC := runEngine(t, c, reqs)
	if warmC.TTFT != coldC.TTFT || warmC.SimulatedSeconds != coldC.SimulatedSeconds {
		t.Fatalf("WarmPrompts changed a %s run: TTFT %v, cold %v", c.KV, warmC.TTFT, coldC.TTFT)
	}
}
