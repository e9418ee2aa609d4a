package blockpool

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// appendBlockwise is Sequence.Append as it was before the blocks were taken
// in ranges (Pool.take): a pop per new block, then a SetFill per block whose
// fill changes. TestRangesMatchBlockwise runs it beside Append.
func appendBlockwise(s *Sequence, n int) error {
	if n <= 0 {
		if n < 0 {
			return fmt.Errorf("%w: append %d tokens", ErrBadCount, n)
		}
		return nil
	}
	p := s.pool
	bs := p.blockSize
	total := s.tokens + n
	if r := s.tokens % bs; r != 0 && r+n <= bs {
		if b := &p.blocks[s.blocks[len(s.blocks)-1]]; b.ref == 1 && !b.cached() {
			p.heldSlots += int64(n)
			b.fill += int32(n)
			s.tokens = total
			return nil
		}
	}
	need := (total+bs-1)/bs - len(s.blocks)
	last := len(s.blocks) - 1
	cow := false
	if s.tokens%bs != 0 {
		b := &p.blocks[s.blocks[last]]
		cow = b.ref > 1 || b.cached()
	}
	if cow {
		need++
	}
	if need > p.numFree() {
		return ErrOutOfBlocks
	}
	first := len(s.blocks)
	if s.tokens%bs != 0 {
		first = last
		if cow {
			nid, _, err := p.CopyOnWrite(s.blocks[last])
			if err != nil {
				return err
			}
			s.blocks[last] = nid
			need--
		}
	}
	for range need {
		s.blocks = append(s.blocks, p.pop())
	}
	s.tokens = total
	for i := first; i < len(s.blocks); i++ {
		p.setFill(&p.blocks[s.blocks[i]], int32(min(bs, total-i*bs)))
	}
	return nil
}

// allocateBlockwise is Allocate as it was: a pop per block.
func allocateBlockwise(p *Pool, dst []BlockID, n int) ([]BlockID, error) {
	if n <= 0 {
		return p.Allocate(dst, n) // the count errors, unchanged
	}
	if n > p.numFree() {
		return dst, ErrOutOfBlocks
	}
	for range n {
		dst = append(dst, p.pop())
	}
	return dst, nil
}

// TestRangesMatchBlockwise runs the same random operations on two pools: one
// through Sequence.Append, Allocate and Free, which take a sequence's blocks
// off the free queue as one run and return a table's blocks as one splice
// (Pool.take, freeHeldOnce), the other through the block-by-block paths they
// replace (appendBlockwise, allocateBlockwise, and freeShared, Free's
// general path). Forks, copies on write, prefix-cache registrations and hits
// (so evictions), and bad frees (duplicates, the null block, ids out of
// range, blocks already free, shared blocks) come between them. After every
// step both must agree on the errors, the block tables, every block's
// reference count, fill and key, the free queue and the counters, and both
// must pass CheckInvariants.
func TestRangesMatchBlockwise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := rapid.IntRange(1, 24).Draw(t, "blocks")
		bs := rapid.IntRange(1, 5).Draw(t, "bs")
		opts := Options{DisablePrefixCaching: rapid.Bool().Draw(t, "nocache")}
		a, err := New(blocks, bs, opts) // the ranges
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(blocks, bs, opts) // block by block
		var sa, sb []*Sequence
		var ta, tb [][]BlockID // tables from Allocate, freed with Free
		same := func(op string, err1, err2 error) {
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
				t.Fatalf("%s: errors %v and %v", op, err1, err2)
			}
			if q1, q2 := a.FreeQueue(nil), b.FreeQueue(nil); !slices.Equal(q1, q2) {
				t.Fatalf("%s: queues %v and %v", op, q1, q2)
			}
			if s1, s2 := a.Stats(), b.Stats(); s1 != s2 {
				t.Fatalf("%s: stats %+v and %+v", op, s1, s2)
			}
			for id := range BlockID(blocks) {
				h1, ok1 := a.CachedHash(id)
				h2, ok2 := b.CachedHash(id)
				if a.RefCount(id) != b.RefCount(id) || a.Fill(id) != b.Fill(id) || h1 != h2 || ok1 != ok2 {
					t.Fatalf("%s: block %d: ref %d/%d fill %d/%d key %d,%v/%d,%v", op, id,
						a.RefCount(id), b.RefCount(id), a.Fill(id), b.Fill(id), h1, ok1, h2, ok2)
				}
			}
			for i := range sa {
				if !slices.Equal(sa[i].Blocks(), sb[i].Blocks()) || sa[i].Tokens() != sb[i].Tokens() {
					t.Fatalf("%s: sequence %d: %v (%d tokens) and %v (%d)", op, i,
						sa[i].Blocks(), sa[i].Tokens(), sb[i].Blocks(), sb[i].Tokens())
				}
			}
			for i := range ta {
				if !slices.Equal(ta[i], tb[i]) {
					t.Fatalf("%s: table %d: %v and %v", op, i, ta[i], tb[i])
				}
			}
			for _, p := range []*Pool{a, b} {
				if err := p.CheckInvariants(); err != nil {
					t.Fatalf("%s: %v", op, err)
				}
			}
			for i := range sa {
				if err := sa[i].checkInvariants(); err != nil {
					t.Fatalf("%s: sequence %d: %v", op, i, err)
				}
			}
		}
		pick := func(t *rapid.T, n int) int { return rapid.IntRange(0, n-1).Draw(t, "i") }
		next := BlockHash(1)
		t.Repeat(map[string]func(*rapid.T){
			"start": func(t *rapid.T) {
				n := rapid.IntRange(0, 3*bs*blocks/2+1).Draw(t, "tokens")
				s1, s2 := NewSequence(a), NewSequence(b)
				err1, err2 := s1.Append(n), appendBlockwise(s2, n)
				same("start", err1, err2)
				if err1 == nil {
					sa, sb = append(sa, s1), append(sb, s2)
				}
			},
			"append": func(t *rapid.T) {
				if len(sa) == 0 {
					return
				}
				i := pick(t, len(sa))
				n := rapid.IntRange(-1, 2*bs+1).Draw(t, "tokens")
				same("append", sa[i].Append(n), appendBlockwise(sb[i], n))
			},
			"fork": func(t *rapid.T) {
				if len(sa) == 0 {
					return
				}
				i := pick(t, len(sa))
				sa, sb = append(sa, sa[i].Fork()), append(sb, sb[i].Fork())
				same("fork", nil, nil)
			},
			"cache": func(t *rapid.T) {
				if len(sa) == 0 {
					return
				}
				i := pick(t, len(sa))
				keys := make([]BlockHash, sa[i].FullBlocks())
				for j := range keys {
					keys[j] = next
					next++
				}
				_, err1 := sa[i].Cache(keys)
				_, err2 := sb[i].Cache(keys)
				same("cache", err1, err2)
			},
			"hit": func(t *rapid.T) {
				if next == 1 {
					return
				}
				h := BlockHash(rapid.IntRange(1, int(next)-1).Draw(t, "hash"))
				s1, s2 := NewSequence(a), NewSequence(b)
				_, err1 := s1.MatchPrefix([]BlockHash{h})
				_, err2 := s2.MatchPrefix([]BlockHash{h})
				same("hit", err1, err2)
				sa, sb = append(sa, s1), append(sb, s2)
			},
			"prompt": func(t *rapid.T) {
				// A prompt whose first blocks may be cached, admitted by
				// MatchAppend on one pool and by MatchPrefixHint, Append
				// and (when it does not fit) Release on the other; tried
				// again when it does not fit, as an engine does on its
				// next step, with or without a change to the pool between.
				hashes := make([]BlockHash, rapid.IntRange(0, 3).Draw(t, "keys"))
				for j := range hashes {
					hashes[j] = BlockHash(rapid.IntRange(1, int(next)).Draw(t, "hash"))
				}
				hint := make([]BlockID, rapid.IntRange(0, len(hashes)).Draw(t, "hints"))
				for j := range hint {
					hint[j] = BlockID(rapid.IntRange(-1, blocks).Draw(t, "hint"))
				}
				tokens := len(hashes)*bs + rapid.IntRange(0, bs*blocks).Draw(t, "rest")
				for range rapid.IntRange(1, 3).Draw(t, "tries") {
					s1, s2 := NewSequence(a), NewSequence(b)
					found, err1 := s1.MatchAppend([]BlockID{7}, hashes, hint, tokens)
					k, err2 := 0, error(nil)
					if tokens <= len(hashes)*bs {
						err2 = fmt.Errorf("%w: a prompt of %d tokens after %d block keys of %d tokens", ErrBadCount, tokens, len(hashes), bs)
					} else if k, err2 = s2.MatchPrefixHint(hashes, hint); err2 == nil {
						if err2 = appendBlockwise(s2, tokens-k*bs); err2 != nil {
							if err := b.freeShared(s2.blocks); err != nil {
								t.Fatal(err)
							}
							s2.blocks, s2.tokens, s2.numCached = s2.blocks[:0], 0, 0
						}
					}
					if err1 == nil {
						sa, sb = append(sa, s1), append(sb, s2)
					}
					same("prompt", err1, err2)
					if len(found) != k+1 || found[0] != 7 || (err1 == nil && !slices.Equal(found[1:], s1.Blocks()[:k])) {
						t.Fatalf("prompt: found %v, %d blocks hit, table %v", found, k, s1.Blocks())
					}
					if err1 == nil || errors.Is(err1, ErrBadCount) {
						break
					}
					hint = found[1:] // the next try's hints: the blocks found
					// Between tries the pool may change, or not (a decode
					// step that takes no block).
					switch rapid.IntRange(0, 2).Draw(t, "between") {
					case 1:
						ids1, err1 := a.Allocate(nil, 1)
						ids2, err2 := allocateBlockwise(b, nil, 1)
						if err1 == nil {
							ta, tb = append(ta, ids1), append(tb, ids2)
						}
						same("allocate between tries", err1, err2)
					case 2:
						if len(ta) > 0 {
							i := pick(t, len(ta))
							err1, err2 := a.Free(ta[i]), b.freeShared(tb[i])
							ta, tb = slices.Delete(ta, i, i+1), slices.Delete(tb, i, i+1)
							same("free between tries", err1, err2)
						}
					}
				}
			},
			"release": func(t *rapid.T) {
				if len(sa) == 0 {
					return
				}
				i := pick(t, len(sa))
				err1 := sa[i].Release()
				ids := sb[i].blocks
				err2 := b.freeShared(ids)
				sb[i].blocks, sb[i].tokens, sb[i].numCached = ids[:0], 0, 0
				sa, sb = slices.Delete(sa, i, i+1), slices.Delete(sb, i, i+1)
				same("release", err1, err2)
			},
			"allocate": func(t *rapid.T) {
				n := rapid.IntRange(-1, blocks).Draw(t, "n")
				ids1, err1 := a.Allocate(nil, n)
				ids2, err2 := allocateBlockwise(b, nil, n)
				same("allocate", err1, err2)
				if err1 == nil && n > 0 {
					ta, tb = append(ta, ids1), append(tb, ids2)
					same("allocate", nil, nil)
				}
			},
			"free table": func(t *rapid.T) {
				if len(ta) == 0 {
					return
				}
				i := pick(t, len(ta))
				err1, err2 := a.Free(ta[i]), b.freeShared(tb[i])
				ta, tb = slices.Delete(ta, i, i+1), slices.Delete(tb, i, i+1)
				same("free table", err1, err2)
			},
			"bad free": func(t *rapid.T) {
				// A held table with a bad id (or a repeat) inserted
				// somewhere: both must refuse it, changing nothing. The
				// null block is skipped, so that table is freed.
				var ids []BlockID
				i := -1
				if len(ta) > 0 {
					i = pick(t, len(ta))
					ids = slices.Clone(ta[i])
				}
				free := BlockID(rapid.IntRange(0, blocks).Draw(t, "id"))
				if a.RefCount(free) > 0 {
					free = -1 // held: not a bad free
				}
				bad := []BlockID{NullBlock, -1, BlockID(blocks), free}
				if len(ids) > 0 {
					bad = append(bad, ids[pick(t, len(ids))]) // a repeat
				}
				ids = slices.Insert(ids, rapid.IntRange(0, len(ids)).Draw(t, "at"), bad[pick(t, len(bad))])
				err1, err2 := a.Free(ids), b.freeShared(ids)
				if err1 == nil && i >= 0 {
					ta, tb = slices.Delete(ta, i, i+1), slices.Delete(tb, i, i+1)
				}
				same("bad free", err1, err2)
			},
		})
	})
}
