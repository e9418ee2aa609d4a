package sim

import (
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/workload"
)

// sysPromptReqs are n requests of 1,536 tokens (3 prefix spans of 512)
// whose first 1,024 tokens are one system prompt (ids 1, 2) and the rest
// their own (id 100 + i); the first arrives at 0, the others at 1 ns.
func sysPromptReqs(n int) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("s%d", i), PromptTokens: 1536, OutputTokens: 150, N: 1,
			PrefixHashes: []uint64{1, 2, uint64(100 + i)}}
		if i > 0 {
			reqs[i].Arrival = 1
		}
	}
	return reqs
}

// admitRunning admits request ri and puts it in the running list, as
// admitWaiting does (without a batch).
func admitRunning(t *testing.T, e *Engine, ri int32) {
	t.Helper()
	r := &e.reqs[ri]
	r.need = r.prompt
	if err := e.admitKV(ri); err != nil {
		t.Fatal(err)
	}
	r.ph, r.admitted = phaseRunning, true
	e.running = append(e.running, ri)
}

// TestSGLangSharedPrefixRoom: three running requests hold one 1,024-token
// system prompt through the prefix cache: the pool holds it once, so
// sglRoom counts 3 × 1,536 − 2 × 1,024 = 2,560 tokens held (4,608 before:
// the prompt once per request), less 3 × 200 max_tokens × 0.7 expected. A
// fourth request with the same system prompt finds it held (locked by the
// running ones: no evictable tokens newly locked), so its need is its own
// 512 tokens and 200 max_tokens, 712 (1,736 before). Once the three
// finish, the system prompt is cached and free: the fourth's lock takes
// it out of the evictable size, and its need is 512 + 1,024 + 200 again.
func TestSGLangSharedPrefixRoom(t *testing.T) {
	c := tinyConfig(100 << 20)
	c.Engine = EngineSGLang
	c.MaxTokens = 200
	e, err := New(c, sysPromptReqs(4))
	if err != nil {
		t.Fatal(err)
	}
	if e.sgl.share == nil {
		t.Fatal("SGLang with prefix caching and prefix ids does not count shared blocks")
	}
	for ri := range int32(3) {
		admitRunning(t, e, ri)
	}
	e.reqs[3].need = e.reqs[3].prompt // waiting, as arrive leaves it
	pool := float64(e.budgetTokens())
	if got, want := e.sglRoom(), pool-2560-600*sglInitRatio; got != want {
		t.Errorf("room %g, want pool %g − 2,560 held − 600 × 0.7 = %g", got, pool, want)
	}
	if got := e.sglNeed(&e.reqs[3]); got != 712 {
		t.Errorf("need of a request whose system prompt the running ones hold: %g, want 512 + 200 = 712", got)
	}
	for len(e.running) > 0 {
		ri := e.running[0]
		e.removeRunning(0)
		if err := e.kv.Release(strategy.SeqID(ri)); err != nil {
			t.Fatal(err)
		}
		e.reqs[ri].admitted = false
	}
	if got, want := e.sglRoom(), pool; got != want {
		t.Errorf("room %g with nothing running, want the pool %g", got, want)
	}
	if got := e.sglNeed(&e.reqs[3]); got != 1736 {
		t.Errorf("need with the system prompt cached and free: %g, want 512 + 1,024 newly locked + 200 = 1,736", got)
	}
}

// TestSGLangSharedPrefixAdmission: one request with a 1,024-token system
// prompt runs; at its first decode step twelve more with the same system
// prompt wait. SGLang's first pass over them admits each for its own 512
// tokens and 200 max_tokens (712): while 712 < the room, which is the pool
// less the running request's 1,536 + 1 tokens (its prompt and first token)
// and 199 max_tokens × 0.7 (no decode step yet). Counting the system
// prompt once per request (1,736 each) admits fewer than half as many.
func TestSGLangSharedPrefixAdmission(t *testing.T) {
	c := tinyConfig(100 << 20) // a pool of 7,168 tokens
	c.Engine = EngineSGLang
	c.MaxTokens = 200
	reqs := sysPromptReqs(13)
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	e.arrive()
	if err := e.step(); err != nil { // the first request's prefill
		t.Fatal(err)
	}
	if len(e.running) != 1 || e.reqs[0].gen != 1 {
		t.Fatalf("after the first step: %d running, first request's tokens %d; want 1 and 1", len(e.running), e.reqs[0].gen)
	}
	e.arrive()
	if e.waiting.len() != 12 {
		t.Fatalf("%d waiting after the first step, want 12", e.waiting.len())
	}
	if err := e.step(); err != nil { // a prefill pass over the twelve
		t.Fatal(err)
	}
	room := float64(e.budgetTokens()) - 1537 - 199*sglInitRatio
	want := 0
	for want < 12 && 712 < room-712*float64(want) {
		want++
	}
	old := 0
	for old < 12 && 1736 < room-1736*float64(old) {
		old++
	}
	got := len(e.running) - 1
	t.Logf("pool %d tokens, room %.1f: admitted %d of 12 (%d at 1,736 a request)", e.budgetTokens(), room, got, old)
	if got != want {
		t.Errorf("admitted %d of 12 in the pass, want %d (712 each against a room of %.1f)", got, want, room)
	}
	if want <= 2*old || want == 12 {
		t.Fatalf("the case does not tell the counts apart: %d at 712, %d at 1,736", want, old)
	}
	runEngine(t, c, reqs)
}

// TestSGLangWarmNeed: with the prompts cached before the run (WarmPrompts),
// a waiting request finds its whole prompt but the block of its last
// token cached: 95 blocks of 16, 1,520 tokens. Its system prompt (1,024)
// is held by a running request; its own 496 are cached and free, and its
// lock takes them: need = 16 uncached + 496 newly locked + 200 = 712. A
// request whose prompt shares nothing with a running one locks all it
// finds: 16 + 1,520 + 200, its whole prompt and max_tokens.
func TestSGLangWarmNeed(t *testing.T) {
	c := tinyConfig(100 << 20)
	c.Engine = EngineSGLang
	c.MaxTokens = 200
	c.WarmPrompts = true
	reqs := sysPromptReqs(3)
	reqs[2].PrefixHashes = []uint64{7, 8, 9}
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range e.reqs {
		e.reqs[i].need = e.reqs[i].prompt // waiting, as arrive leaves them
	}
	if got := e.sglNeed(&e.reqs[0]); got != 1736 {
		t.Errorf("need of the first warm request, nothing running: %g, want 1,536 + 200 = 1,736", got)
	}
	admitRunning(t, e, 0)
	if got := e.reqs[0].prefilled; got != 1520 {
		t.Fatalf("the first warm request found %d tokens cached, want 1,520", got)
	}
	if got := e.sglNeed(&e.reqs[1]); got != 712 {
		t.Errorf("need of a warm request whose system prompt a running one holds: %g, want 16 + 496 + 200 = 712", got)
	}
	if got := e.sglNeed(&e.reqs[2]); got != 1736 {
		t.Errorf("need of a warm request sharing nothing: %g, want 1,736", got)
	}
	runEngine(t, c, reqs)
}

// TestSGLangNoMaxTokens: a request without max_tokens gets SGLang's
// max_new_tokens, min(context − 1, pool − 1) − prompt − 1 (sglMaxNewTokens):
// on the tiny model's 2,048-token context a 1,000-token prompt gets 1,046
// (vLLM's 2,048 − 1,000 = 1,048), which its need reserves, and an output of
// 2,000 stops there. On a pool of fewer tokens than the context the pool
// bounds it.
func TestSGLangNoMaxTokens(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.Engine = EngineSGLang
	reqs := []workload.Request{{ID: "a", PromptTokens: 1000, OutputTokens: 2000, N: 1}}
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	e.reqs[0].need = 1000
	if e.budgetTokens() < 2048 {
		t.Fatalf("pool of %d tokens: the case wants one above the context", e.budgetTokens())
	}
	if got := e.reqs[0].maxOut; got != 1046 {
		t.Errorf("max_new_tokens %d, want 2,047 − 1,000 − 1 = 1,046", got)
	}
	if got := e.sglNeed(&e.reqs[0]); got != 2046 {
		t.Errorf("need %g, want 1,000 + 1,046 = 2,046", got)
	}
	_, res := runEngine(t, c, reqs)
	if res.OutputTokens != 1046 || res.OutputsTruncated != 1 {
		t.Errorf("output %d tokens, %d truncated; want 1,046 and 1", res.OutputTokens, res.OutputsTruncated)
	}
	v := c
	v.Engine = EngineVLLMV1
	if ev, err := New(v, reqs); err != nil || ev.reqs[0].maxOut != 1048 {
		t.Errorf("vLLM V1: max_tokens %d (%v), want 1,048", ev.reqs[0].maxOut, err)
	}

	// A 9.2 MiB pool (48 MiB × 0.9 − 2 MiB of weights − 32 MiB of
	// activations) holds fewer tokens than the context.
	small := tinyConfig(48 << 20)
	small.Engine = EngineSGLang
	e, err = New(small, []workload.Request{{ID: "b", PromptTokens: 100, OutputTokens: 50, N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	pool := e.budgetTokens()
	if pool >= 2048 {
		t.Fatalf("pool of %d tokens: the case wants one below the context", pool)
	}
	if got, want := e.reqs[0].maxOut, int(pool)-1-100-1; got != want {
		t.Errorf("max_new_tokens %d on a pool of %d tokens, want pool − 1 − 100 − 1 = %d", got, pool, want)
	}
}
