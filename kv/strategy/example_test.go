package strategy_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// A 1 GiB budget of 16-token blocks for a small Llama-shaped model: the
// prompt's last block is partly filled, and that is all the waste.
func Example() {
	a, _ := registry.New("caching", mem.MustDevice(2*mem.GiB, 0))
	m := model.Model{Name: "small", Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 64, MaxContext: 4096}
	s, err := strategy.Parse("paged:16", strategy.Env{Model: m, KVDType: model.BF16, Alloc: a, PoolBytes: mem.GiB})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Admit(1, strategy.Request{Prompt: 100, MaxOutput: 200, TrueOutput: 150, N: 1})
	_ = s.Grow(1, 1)
	u := s.Usage()
	fmt.Println(u.TokenStates/1024, "KiB of tokens,", u.Internal/1024, "KiB internal")
	// Output: 808 KiB of tokens, 88 KiB internal
}
