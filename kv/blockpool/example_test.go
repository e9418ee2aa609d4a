package blockpool_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// A request computes a 40-token prompt, caches its full blocks and ends; a
// second request with the same first 32 tokens reuses two blocks.
func Example() {
	pool, err := blockpool.New(8, 16, blockpool.Options{}) // 7 usable blocks of 16 tokens
	if err != nil {
		panic(err)
	}
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(100 + i)
	}

	a := blockpool.NewSequence(pool)
	if err := a.Append(len(prompt)); err != nil { // 3 blocks, 8 slots of waste
		panic(err)
	}
	keys := blockpool.HashChain(nil, blockpool.NoParent, prompt, pool.BlockSize(), 0)
	if _, err := a.Cache(keys); err != nil { // the 2 full blocks
		panic(err)
	}
	fmt.Printf("a: blocks=%v waste=%d usage=%.3f\n", a.Blocks(), a.Waste(), pool.Usage())
	if err := a.Release(); err != nil {
		panic(err)
	}
	fmt.Printf("after a: usage=%.3f cached=%d queue=%v\n", pool.Usage(), pool.NumCached(), pool.FreeQueue(nil))

	// b shares the first 32 tokens, then diverges.
	b := blockpool.NewSequence(pool)
	second := append(append([]int32(nil), prompt[:32]...), 7, 8, 9)
	hits, err := b.MatchPrefix(blockpool.HashChain(nil, blockpool.NoParent, second[:len(second)-1], pool.BlockSize(), 0))
	if err != nil {
		panic(err)
	}
	if err := b.Append(len(second) - b.Tokens()); err != nil {
		panic(err)
	}
	fmt.Printf("b: hits=%d blocks=%v\n", hits, b.Blocks())
	fmt.Println(pool.Stats())
	// Output:
	// a: blocks=[1 2 3] waste=8 usage=0.429
	// after a: usage=0.000 cached=2 queue=[4 5 6 7 3 2 1]
	// b: hits=2 blocks=[1 2 4]
	// blocks=8 size=16 free=4 used=3 cached=2 evictable=0 usage=0.4286
	// slots: tokens=35 reserved=0 internal=13 cached-idle=0 free=64
	// counters: allocs=4 frees=3 copies=0 evictions=0 prefix-queries=2 prefix-hits=2
}
