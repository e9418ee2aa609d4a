// The prefix-key memo: the block keys of recent prompts, so that a prompt
// that extends one (a conversation's next turn) hashes only its new blocks.
// See doc.go for the overview.

package strategy

import "github.com/gpufrag/gpufrag/kv/blockpool"

// memoEntries bounds the prefix-key memo: the prompts of that many recent
// conversations (or traces' shared prefixes) keep their keys. An entry is
// 20 bytes per block of its prompt (a 100K-token prompt in 16-token blocks:
// 125 KB), so the memo stays within a few MB.
const memoEntries = 32

// prefixMemo keeps, for recent admissions with prefix ids, the ids, the
// block keys derived from them and the blocks that held those keys when
// the admission ended (hints for the next lookup). A block key depends only
// on the ids of the spans up to its block, its position and the block and
// span sizes, so a prompt whose ids share their first c entries with an
// entry's has the entry's keys for every block that ends within those c
// spans.
type prefixMemo struct {
	entries []*memoEntry // most recently used first
}

type memoEntry struct {
	span   int                   // Request.PrefixSpan of ids
	ids    []uint64              // a copy of the prompt's prefix ids
	keys   []blockpool.BlockHash // the keys of the prompt's first len(keys) blocks
	blocks []blockpool.BlockID   // the blocks that held keys after the admission
}

// match returns the entry whose ids share the longest prefix with ids (of
// the same span), its index and that prefix's length; nil when none shares
// one.
func (m *prefixMemo) match(ids []uint64, span int) (best *memoEntry, at, common int) {
	for i, e := range m.entries {
		if e.span != span {
			continue
		}
		n := min(len(e.ids), len(ids))
		c := 0
		for c < n && e.ids[c] == ids[c] {
			c++
		}
		if c > common {
			best, at, common = e, i, c
			if c == len(ids) {
				break // no later entry shares more (a request tried again: the first)
			}
		}
	}
	return best, at, common
}

// store keeps ids, keys and blocks as the most recent entry: in place of
// the matched entry at index at when ids extend its ids (all but their last,
// partly covered span: a conversation's next turn), else as a new entry,
// dropping the least recently used one when the memo is full.
func (m *prefixMemo) store(best *memoEntry, at, common, span int, ids []uint64,
	keys []blockpool.BlockHash, blocks []blockpool.BlockID) {
	e := best
	switch {
	case best != nil && common >= len(best.ids)-1:
		copy(m.entries[1:at+1], m.entries[:at])
	case len(m.entries) < memoEntries:
		e = &memoEntry{}
		m.entries = append(m.entries, nil)
		copy(m.entries[1:], m.entries)
	default:
		e = m.entries[len(m.entries)-1] // reuse its buffers
		copy(m.entries[1:], m.entries)
	}
	m.entries[0] = e
	e.span = span
	e.ids = append(e.ids[:0], ids...)
	if len(keys) == 0 || cap(e.keys) == 0 || &keys[0] != &e.keys[:1][0] {
		e.keys = append(e.keys[:0], keys...)
	} else {
		e.keys = e.keys[:len(keys)] // keys are e's own (paged.prefixKeys)
	}
	e.blocks = append(e.blocks[:0], blocks...)
}
