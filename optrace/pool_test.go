package optrace_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/optrace"
)

// An alloc's "pool" reads, writes back and routes the request on an
// allocator with private pools: a graph pool's cached segment does not
// serve the eager request after it, so the caching allocator reserves two
// segments where the same trace without the field reserves one. An
// allocator without private pools ignores the field.
func TestPoolField(t *testing.T) {
	const pooled = `{"op":"alloc","id":"g","size":4194304,"stream":0,"pool":[1,0]}
{"op":"free","id":"g"}
{"op":"alloc","id":"e","size":4194304,"stream":0}
`
	ops, err := optrace.Read(strings.NewReader(pooled), "pooled.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if ops[0].Pool != (alloc.PoolID{1, 0}) || ops[2].Pool != (alloc.PoolID{}) {
		t.Fatalf("pools %v %v", ops[0].Pool, ops[2].Pool)
	}
	var out bytes.Buffer
	if err := optrace.Write(&out, ops); err != nil {
		t.Fatal(err)
	}
	if out.String() != pooled {
		t.Errorf("round trip:\n%s\nwant\n%s", out.String(), pooled)
	}
	plain := append([]optrace.Op(nil), ops...)
	plain[0].Pool = alloc.PoolID{}
	rs, err := optrace.ReplayAll(ops, []string{"caching", "buddy"}, newOn80GiB)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := optrace.ReplayAll(plain, []string{"caching", "buddy"}, newOn80GiB)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].PeakReservedBytes != 40<<20 || rp[0].PeakReservedBytes != 20<<20 {
		t.Errorf("caching peak reserved %d with the pool, %d without; want 40 MiB and 20 MiB", rs[0].PeakReservedBytes, rp[0].PeakReservedBytes)
	}
	if rs[1].PeakReservedBytes != rp[1].PeakReservedBytes {
		t.Errorf("buddy: %d with the pool field, %d without; want the field ignored", rs[1].PeakReservedBytes, rp[1].PeakReservedBytes)
	}
	// Ignored, but said: buddy served the pool's request from its default
	// pools; caching routed it.
	if rs[0].UnroutedPoolAllocs != 0 || rs[1].UnroutedPoolAllocs != 1 || rp[1].UnroutedPoolAllocs != 0 {
		t.Errorf("unrouted pool allocs: caching %d, buddy %d, buddy without the field %d; want 0, 1, 0",
			rs[0].UnroutedPoolAllocs, rs[1].UnroutedPoolAllocs, rp[1].UnroutedPoolAllocs)
	}
}

func TestPoolFieldErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"op":"free","id":"a","pool":[1,0]}`, `field "pool": not allowed for op "free"`},
		{`{"op":"empty_cache","pool":[1,0]}`, `field "pool": not allowed`},
		{`{"op":"alloc","id":"a","size":512,"pool":[1]}`, `field "pool": must be a pair of non-negative integers`},
		{`{"op":"alloc","id":"a","size":512,"pool":[1,0,2]}`, `field "pool": must be a pair`},
		{`{"op":"alloc","id":"a","size":512,"pool":[1.0,0]}`, `field "pool": must be a pair`},
		{`{"op":"alloc","id":"a","size":512,"pool":[-1,0]}`, `field "pool": must be a pair`},
		{`{"op":"alloc","id":"a","size":512,"pool":"1_0"}`, `field "pool": must be a pair`},
		{`{"op":"alloc","id":"a","size":512,"pool":[1,0],"pool":[2,0]}`, `field "pool": appears twice`},
	} {
		_, err := optrace.Read(strings.NewReader(c.line+"\n"), "bad.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.jsonl: line 1") {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	// A hand-built op is checked the same way.
	var out bytes.Buffer
	err := optrace.Write(&out, []optrace.Op{{Kind: optrace.Alloc, ID: "a", Size: 512, Pool: alloc.PoolID{-3, 0}}})
	if err == nil || !strings.Contains(err.Error(), "pool") {
		t.Errorf("Write of a negative pool: %v", err)
	}
}
