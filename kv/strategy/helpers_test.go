package strategy

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// tinyModel has 8 KiB of KV per token in bf16 (2 × 8 layers × 4 KV heads ×
// 64 × 2 bytes) and a 2048-token context, so a full reservation is 16 MiB
// and a 1 GiB device holds 64 of them.
func tinyModel() model.Model {
	return model.Model{Name: "tiny", Family: "llama", Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 64,
		Hidden: 256, Intermediate: 512, Vocab: 1000, MaxContext: 2048, Params: 1 << 20, WeightDType: model.BF16}
}

const tinyBPT = 8 * mem.KiB

// newEnv builds an allocator from allocSpec on a device of capacity bytes
// and the Env of the tiny model over it.
// fataler is what newEnv needs of a *testing.T, *testing.B or *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func newEnv(t fataler, allocSpec string, capacity, poolBytes int64) Env {
	t.Helper()
	a, err := registry.New(allocSpec, mem.MustDevice(capacity, 0))
	if err != nil {
		t.Fatal(err)
	}
	return Env{Model: tinyModel(), KVDType: model.BF16, Alloc: a, PoolBytes: poolBytes}
}

// newTinyPaged builds paged:bs over a pool of the given number of blocks of
// the tiny model, on the caching allocator; env, when not nil, edits the Env
// first.
func newTinyPaged(t fataler, bs, blocks int, env func(*Env)) *paged {
	t.Helper()
	e := newEnv(t, "caching", 1<<30, int64(blocks*bs)*tinyBPT)
	if env != nil {
		env(&e)
	}
	s, err := Parse(fmt.Sprintf("paged:%d", bs), e)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*paged)
}

// checkUsage checks the breakdown against the allocator: parts
// non-negative; for paged the footprint is the pool's allocation, otherwise
// what is held for sequences is the allocator's allocated bytes above
// baseline, and external is its cached free memory.
func checkUsage(s Strategy, a alloc.Allocator, baseline int64) error {
	u := s.Usage()
	for _, v := range []int64{u.TokenStates, u.Reservation, u.Internal, u.External, u.CachedIdle, u.Free} {
		if v < 0 {
			return fmt.Errorf("negative part in %v", u)
		}
	}
	st := a.Stats()
	if u.External != st.CachedFree() {
		return fmt.Errorf("external %d, allocator cached free %d", u.External, st.CachedFree())
	}
	if p, ok := s.(*paged); ok {
		if p.closed {
			return nil
		}
		if u.Footprint() != p.poolBlock.Size {
			return fmt.Errorf("paged footprint %d, pool allocation %d (%v)", u.Footprint(), p.poolBlock.Size, u)
		}
		return nil
	}
	if got := st.Allocated - baseline; u.Held() != got || u.Footprint() != got {
		return fmt.Errorf("held %d, allocator allocated %d above baseline (%v)", u.Held(), got, u)
	}
	return nil
}

// sameOutcome fails t when two strategies that ran the same operation op
// disagree on its error (by text), their counters or their usage.
func sameOutcome(t fataler, op string, a, b Strategy, err1, err2 error) {
	t.Helper()
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Fatal(fmt.Sprintf("%s: errors %v and %v", op, err1, err2))
	}
	if a.Stats() != b.Stats() || a.Usage() != b.Usage() {
		t.Fatal(fmt.Sprintf("%s: stats %+v / %+v, usage %+v / %+v", op, a.Stats(), b.Stats(), a.Usage(), b.Usage()))
	}
}
