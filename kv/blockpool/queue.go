// Free-block queue: an intrusive doubly linked list over the block array.
// See doc.go for the overview.

package blockpool

// The queue is vLLM's FreeKVCacheBlockQueue: every operation is O(1) and
// allocates nothing. The links live in the blocks themselves, and block 0, the
// null block, which is never queued, serves as the sentinel of a circular
// list: blocks[0].next is the head and blocks[0].prev the tail, and an empty
// queue is blocks[0].next == 0. With a sentinel, pushing onto an empty queue
// and unlinking the head or the tail need no special case.
//
// Order is eviction order: the head is the least recently freed block and is
// allocated (and, if cached, evicted) first; freed blocks go to the tail;
// a prefix hit unlinks a cached block from the middle.

// pushBack appends a block with ref 0 to the tail of the queue.
func (p *Pool) pushBack(id BlockID) {
	s := &p.blocks[0]
	tail := s.prev
	b := &p.blocks[id]
	b.prev, b.next = tail, 0
	p.blocks[tail].next = id // the sentinel's next when the queue was empty
	s.prev = id
	b.queued = true
	p.numFree++
	p.frees++
}

// unlinkHead takes the head off the queue, which must not be empty: its
// prev is the sentinel, so only the sentinel's and the next block's links
// change. The caller adjusts numFree (Allocate once for n blocks).
func (p *Pool) unlinkHead() (BlockID, *block) {
	blocks := p.blocks
	id := blocks[0].next
	b := &blocks[id]
	blocks[0].next = b.next
	blocks[b.next].prev = 0
	b.queued = false // prev and next are stale until it is queued again
	return id, b
}

// unlink removes a queued block from wherever it is in the queue.
func (p *Pool) unlink(id BlockID) {
	b := &p.blocks[id]
	p.blocks[b.prev].next = b.next
	p.blocks[b.next].prev = b.prev
	b.queued = false // prev and next are stale until it is queued again
	p.numFree--
}

// FreeQueue appends the free queue to dst, head (next to be allocated or
// evicted) first, and returns the extended slice. It is O(NumFree); it is for
// tests, debugging and renderings, not for a scheduler's hot path.
func (p *Pool) FreeQueue(dst []BlockID) []BlockID {
	for id := p.blocks[0].next; id != 0; id = p.blocks[id].next {
		dst = append(dst, id)
	}
	return dst
}
