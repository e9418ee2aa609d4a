package buddy_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/buddy"
	"github.com/gpufrag/gpufrag/mem"
)

// The vLLM paper's Orca setup on a buddy pool: OPT-13B on one A100-40GB.
// The figures are the project's presets: 40,536 MiB for model's a100-40g,
// 25,706,946,560 bytes of fp16 weights for opt-13b at tp 1, 500 MiB of CUDA
// context (sim's ContextBytes), and 819,200 KV bytes a token. The pool is
// 0.9 of the 15.16 GiB free, 13.64 GiB, which is no power of two: its
// largest block is 8 GiB. An Orca-Max reservation of 2,048 tokens
// (1,600 MiB) takes a 2 GiB block, and six fit where eight would in the
// same bytes cut to measure.
func Example_orcaOnA100() {
	dev := mem.MustDevice(40536*mem.MiB, 25_706_946_560+500*mem.MiB)
	a, err := buddy.New(dev, buddy.DefaultConfig())
	if err != nil {
		panic(err)
	}
	fmt.Printf("pool %s, top-level blocks", mem.FormatBytes(a.PoolSize()))
	for _, s := range a.TopBlocks() {
		fmt.Printf(" %s", mem.FormatBytes(s))
	}
	fmt.Println()
	const maxReservation = 2048 * 819_200
	n := 0
	var block int64
	for {
		b, err := a.Alloc(maxReservation, 0)
		if err != nil {
			break
		}
		n++
		block = b.Size
	}
	st := a.Stats()
	fmt.Printf("%s reservations take %s blocks (%.0f%% waste); %d fit, %d in contiguous bytes\n",
		mem.FormatBytes(maxReservation), mem.FormatBytes(block),
		100*float64(block-maxReservation)/float64(block), n, a.PoolSize()/maxReservation)
	fmt.Printf("requested %s of %s allocated, %s free in blocks too small\n",
		mem.FormatBytes(st.Requested), mem.FormatBytes(st.Allocated), mem.FormatBytes(st.CachedFree()))
	// Output:
	// pool 13.64GiB, top-level blocks 8GiB 4GiB 1GiB 512MiB 128MiB 8MiB 4MiB 2MiB
	// 1.56GiB reservations take 2GiB blocks (22% waste); 6 fit, 8 in contiguous bytes
	// requested 9.38GiB of 12GiB allocated, 1.64GiB free in blocks too small
}
