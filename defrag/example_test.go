package defrag_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/kv/blockpool"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// Plan a compaction of PyTorch's caching allocator, price it on an H100,
// perform it and give the freed segment back.
func Example() {
	a, _ := registry.New("caching", mem.MustDevice(mem.GiB, 0))
	ix := defrag.NewIndex() // the owner's address book
	var hs []alloc.Handle
	for range 10 { // two 20 MiB segments of five 4 MiB blocks
		b, _ := a.Alloc(4*mem.MiB, 0)
		ix.Add(b.Handle, b.Addr)
		hs = append(hs, b.Handle)
	}
	for _, i := range []int{0, 1, 3, 4, 7} { // leave 1 block in the first, 4 in the second
		_ = a.Free(hs[i])
		ix.Remove(hs[i])
	}
	p, _ := defrag.PlanAllocator(a, defrag.Goal{Kind: defrag.GoalCompact}, defrag.Options{})
	h100, _ := model.LookupGPU("h100-80g")
	fmt.Println("moves:", p.Moves)
	fmt.Println("moved:", mem.FormatBytes(p.BytesMoved), "bound:", mem.FormatBytes(p.LowerBound), "freed:", mem.FormatBytes(p.FreedBytes))
	fmt.Println("pause:", defrag.Cost(p, h100, defrag.CostModel{}), "ns")
	if err := defrag.Apply(a.(alloc.Relocator), p, ix.HandleAt, ix.Moved); err != nil {
		fmt.Println(err)
	}
	a.EmptyCache()
	fmt.Println("reserved after empty_cache:", mem.FormatBytes(a.Stats().Reserved))
	// Output:
	// moves: [@8MiB -> @28MiB (4MiB)]
	// moved: 4MiB bound: 4MiB freed: 20MiB
	// pause: 8131 ns
	// reserved after empty_cache: 20MiB
}

// The vllm-gaudi defragmenter's plan for a paged KV pool: the highest used
// blocks move to the lowest free ids, so the pool can shrink to 8 blocks.
func ExamplePlanPool() {
	used := []bool{true, false, true, true, false, false, true, false, true, false, false, false, true, true, false, true}
	p := defrag.PlanPool(used, defrag.PoolOptions{Reserved: 1}) // block 0 is the null block
	fmt.Println(p.Moves, "bound:", p.LowerBound, "high:", p.HighBefore, "->", p.HighAfter)
	// Output:
	// [{15 1} {13 4} {12 5} {8 7}] bound: 4 high: 16 -> 8
}

// Compact a vLLM-style block pool: plan with PlanPool, perform with
// blockpool.RelocateBlocks, which also rewrites the sequences' block tables.
func ExamplePoolPlan_Relocations() {
	pool, _ := blockpool.New(16, 4, blockpool.Options{DisablePrefixCaching: true})
	var seqs []*blockpool.Sequence
	for range 6 {
		s := blockpool.NewSequence(pool)
		_ = s.Append(4) // one block each: ids 1..6
		seqs = append(seqs, s)
	}
	for _, i := range []int{0, 2, 3} { // free blocks 1, 3, 4
		_ = seqs[i].Release()
	}
	live := []*blockpool.Sequence{seqs[1], seqs[4], seqs[5]}
	used := make([]bool, pool.NumBlocks())
	for id := range used {
		used[id] = pool.RefCount(blockpool.BlockID(id)) > 0
	}
	p := defrag.PlanPool(used, defrag.PoolOptions{Reserved: 1})
	if err := blockpool.RelocateBlocks(pool, p.Relocations(), live); err != nil {
		fmt.Println(err)
	}
	fmt.Println(p.Moves, live[0].Blocks(), live[1].Blocks(), live[2].Blocks())
	// Output:
	// [{6 1} {5 3}] [2] [3] [1]
}
