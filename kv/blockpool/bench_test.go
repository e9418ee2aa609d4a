package blockpool

import (
	"fmt"
	"testing"
)

// BenchmarkAllocFree times one block allocate plus free in steady state: the
// block goes to the tail of the queue and the next allocation takes the head,
// so the loop walks the whole queue as a scheduler would. The target is at
// most 20 ns and 0 allocations per op. Run as:
//
//	go test -run '^$' -bench 'AllocFree|PrefixHit' -benchmem ./kv/blockpool/
func BenchmarkAllocFree(b *testing.B) {
	for _, n := range []int{1024, 65536} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			p := halfHeld(b, n)
			buf := make([]BlockID, 0, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ids, err := p.Allocate(buf, 1)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Free(ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// halfHeld returns a pool of n blocks with half of them held, so that the
// free queue is not trivially short.
func halfHeld(b *testing.B, n int) *Pool {
	p, err := New(n, 16, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Allocate(make([]BlockID, 0, n/2), n/2); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkAllocFreeOne is BenchmarkAllocFree through the one-block API,
// AllocateOne and FreeOne: no slice in or out. The target is at most 5 ns.
// Run as:
//
//	go test -run '^$' -bench 'AllocFreeOne' -benchmem ./kv/blockpool/
func BenchmarkAllocFreeOne(b *testing.B) {
	for _, n := range []int{1024, 65536} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			p := halfHeld(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				id, err := p.AllocateOne()
				if err != nil {
					b.Fatal(err)
				}
				if err := p.FreeOne(id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrefixHit times one prefix-cache hit on an evictable block and
// its release: GetCached (map lookup, unlink from the middle of the queue,
// ref++) then Free (back to the tail). The keys cycle over 1024 cached
// blocks. Run as:
//
//	go test -run '^$' -bench 'PrefixHit' -benchmem ./kv/blockpool/
func BenchmarkPrefixHit(b *testing.B) {
	const cachedBlocks = 1024
	for _, n := range []int{1024 + 1, 65536} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			p, err := New(n, 16, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ids, err := p.Allocate(nil, cachedBlocks)
			if err != nil {
				b.Fatal(err)
			}
			keys := make([]BlockHash, cachedBlocks)
			parent := NoParent
			for i, id := range ids {
				parent = HashBlock(parent, []int32{int32(i)}, 0)
				keys[i] = parent
				if err := p.CacheFullBlock(id, parent); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Free(ids); err != nil {
				b.Fatal(err)
			}
			one := make([]BlockID, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id, ok := p.GetCached(keys[i%cachedBlocks])
				if !ok {
					b.Fatal("miss")
				}
				one[0] = id
				if err := p.Free(one); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHashBlock times the key of one 16-token block. Run as:
//
//	go test -run '^$' -bench 'HashBlock' -benchmem ./kv/blockpool/
func BenchmarkHashBlock(b *testing.B) {
	tokens := make([]int32, 16)
	for i := range tokens {
		tokens[i] = int32(1000 + i)
	}
	b.ReportAllocs()
	h := NoParent
	for range b.N {
		h = HashBlock(h, tokens, 0)
	}
	sinkHash = h
}

var sinkHash BlockHash

// BenchmarkSequenceDecode times one decode step of a sequence: Append of one
// token, which allocates a block every 16 tokens; the sequence is released
// and restarted every 1024 tokens. Run as:
//
//	go test -run '^$' -bench 'SequenceDecode' -benchmem ./kv/blockpool/
func BenchmarkSequenceDecode(b *testing.B) {
	p, err := New(4096, 16, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := NewSequence(p)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%1024 == 0 {
			if err := s.Release(); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Append(1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSequencePrompt times a prompt's admission and release as an
// engine does them: Append of a 1,000-token prompt (63 blocks of 16 tokens,
// the last partly filled) to an empty sequence, then Release, in a pool of
// 65,536 blocks with half of them held and eight other sequences admitted
// and released in turn, so the free queue's order is scrambled. It reports
// ns per block as well. Run as:
//
//	go test -run '^$' -bench 'SequencePrompt' -benchmem ./kv/blockpool/
func BenchmarkSequencePrompt(b *testing.B) {
	p := halfHeld(b, 65536)
	var others [8]*Sequence
	for i := range others {
		others[i] = NewSequence(p)
		if err := others[i].Append(100 + 300*i); err != nil {
			b.Fatal(err)
		}
	}
	s := NewSequence(p)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Append(1000); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(); err != nil {
			b.Fatal(err)
		}
		o := others[i%len(others)] // another request ends and starts again
		n := o.Tokens()
		if err := o.Release(); err != nil {
			b.Fatal(err)
		}
		if err := o.Append(n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/63, "ns/block")
}
