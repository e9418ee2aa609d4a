package strategy

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestGrowOneMatchesCounted runs the same admissions, grows, decode runs and
// releases on two paged strategies: one through Grow, which tries a
// one-sample request's Append without counting its blocks first (growOne),
// the other through growSamples, which counts them first (blocksNeeded), as
// Grow did for every request. Prompts share prefix ids, so grows copy
// cached last blocks on write; pools are small, so grows fail. Both must
// agree on every error, the counters, the usage and every sequence's
// blocks.
func TestGrowOneMatchesCounted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SampledFrom([]int{1, 2, 4, 16}).Draw(t, "bs")
		blocks := rapid.IntRange(2, 40).Draw(t, "blocks")
		mk := func() *paged { return newTinyPaged(t, bs, blocks, nil) }
		a, b := mk(), mk()
		live := map[SeqID]bool{}
		var next SeqID
		same := func(op string, err1, err2 error) {
			sameOutcome(t, op, a, b, err1, err2)
			for id := range live {
				pa, _ := a.seqs.get(id)
				pb, _ := b.seqs.get(id)
				for i := range pa.samples {
					if fmt.Sprint(pa.samples[i].Blocks()) != fmt.Sprint(pb.samples[i].Blocks()) {
						t.Fatalf("%s: seq %d sample %d: %v and %v", op, id, i, pa.samples[i].Blocks(), pb.samples[i].Blocks())
					}
				}
			}
		}
		pick := func(t *rapid.T) (SeqID, bool) {
			if len(live) == 0 {
				return 0, false
			}
			id := SeqID(rapid.IntRange(0, int(next)-1).Draw(t, "id"))
			return id, live[id]
		}
		t.Repeat(map[string]func(*rapid.T){
			"admit": func(t *rapid.T) {
				r := Request{Prompt: rapid.IntRange(1, 3*bs+2).Draw(t, "prompt"), MaxOutput: 100, TrueOutput: 100,
					N: rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(t, "n")}
				if rapid.Bool().Draw(t, "prefix") {
					r.PrefixIDs, r.PrefixSpan = []uint64{7, 8, uint64(rapid.IntRange(9, 10).Draw(t, "third"))}, bs
				}
				err1, err2 := a.Admit(next, r), b.Admit(next, r)
				if err1 == nil {
					live[next] = true
				}
				next++
				same("admit", err1, err2)
			},
			"grow": func(t *rapid.T) {
				id, ok := pick(t)
				if !ok {
					return
				}
				k := rapid.IntRange(1, 2*bs+1).Draw(t, "k")
				err1 := a.Grow(id, k)
				pb, _ := b.seqs.get(id)
				err2 := b.growSamples(id, pb.samples, pb.samples[0].Tokens(), k)
				same("grow", err1, err2)
			},
			"release": func(t *rapid.T) {
				id, ok := pick(t)
				if !ok {
					return
				}
				delete(live, id)
				same("release", a.Release(id), b.Release(id))
			},
		})
	})
}
