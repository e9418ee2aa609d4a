package synth_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/optrace/synth"
)

func TestGenerateServing(t *testing.T) {
	c := synth.Llama3_8B()
	c.Ops = 5000
	ops, err := synth.GenerateServing(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != c.Ops {
		t.Fatalf("%d ops, want %d", len(ops), c.Ops)
	}
	if err := optrace.Validate(ops, "synth"); err != nil {
		t.Fatal(err)
	}
	if ops[0].ID != "weights" || ops[0].Size != c.Weights {
		t.Fatalf("first op %v, want the weights", ops[0])
	}
	// The trace has every ingredient: admissions, KV growth (a second
	// generation of some KV tensor), per-step activations and syncs.
	count := map[string]int{}
	sizes := map[int64]bool{}
	for _, op := range ops {
		switch {
		case op.Kind == optrace.Sync:
			count["sync"]++
		case op.Kind == optrace.Alloc && strings.HasSuffix(op.ID, ".kv0"):
			count["admit"]++
		case op.Kind == optrace.Alloc && strings.Contains(op.ID, ".kv"):
			count["grow"]++
		case op.Kind == optrace.Alloc && strings.HasSuffix(op.ID, ".mlp"):
			count["mlp"]++
			sizes[op.Size] = true
		}
	}
	if count["sync"] < 100 || count["admit"] < 100 || count["grow"] < 50 || count["mlp"] != count["sync"] || len(sizes) < 50 {
		t.Fatalf("trace lacks variety: %v, %d distinct activation sizes", count, len(sizes))
	}

	// Deterministic, and a shorter trace is a prefix of a longer one.
	c2 := c
	c2.Ops = 1234
	short, err := synth.GenerateServing(c2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(short, ops[:1234]) {
		t.Fatal("a 1234-op trace is not the prefix of the 5000-op trace")
	}
	c3 := c
	c3.Seed = 2
	other, _ := synth.GenerateServing(c3)
	if reflect.DeepEqual(other, ops) {
		t.Fatal("seed has no effect")
	}
}

func TestGenerateServingBadConfig(t *testing.T) {
	for _, mod := range []func(*synth.Serving){
		func(c *synth.Serving) { c.Ops = -1 },
		func(c *synth.Serving) { c.KVChunkTokens = 0 },
		func(c *synth.Serving) { c.MaxBatch = 0 },
		func(c *synth.Serving) { c.PromptTokens = [2]int{10, 5} },
		func(c *synth.Serving) { c.Vocab = 0 },
		func(c *synth.Serving) { c.KVBudget = 1 << 20 }, // the longest request cannot fit
	} {
		c := synth.Llama3_8B()
		mod(&c)
		if _, err := synth.GenerateServing(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}
