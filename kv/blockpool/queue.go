// Free-block queue: an intrusive doubly linked list over the block array.
// See doc.go for the overview.

package blockpool

// The queue is vLLM's FreeKVCacheBlockQueue: every operation is O(1) and
// allocates nothing. The links live in the blocks themselves, and block 0, the
// null block, which is never queued, serves as the sentinel of a circular
// list: links[0].next is the head and links[0].prev the tail, and an empty
// queue is links[0].next == 0. The links are an array of their own
// (Pool.links), 8 bytes a block, so that a walk along the queue (Pool.take)
// reads a small array while the blocks it passes are written apart. With a sentinel, pushing onto an empty queue
// and unlinking the head or the tail need no special case.
//
// Order is eviction order: the head is the least recently freed block and is
// allocated (and, if cached, evicted) first; freed blocks go to the tail;
// a prefix hit unlinks a cached block from the middle.

// pushBack appends a block with ref 0 to the tail of the queue.
func (p *Pool) pushBack(id BlockID) {
	links := p.links
	tail := links[0].prev
	links[id] = link{tail, 0}
	links[tail].next = id // the sentinel's next when the queue was empty
	links[0].prev = id
	p.frees++
}

// unlink removes a queued block from wherever it is in the queue.
func (p *Pool) unlink(id BlockID) {
	l := p.links[id]
	p.links[l.prev].next = l.next
	p.links[l.next].prev = l.prev
	p.base-- // prev and next are stale until the block is queued again
}

// FreeQueue appends the free queue to dst, head (next to be allocated or
// evicted) first, and returns the extended slice. It is O(NumFree); it is for
// tests, debugging and renderings, not for a scheduler's hot path.
func (p *Pool) FreeQueue(dst []BlockID) []BlockID {
	for id := p.links[0].next; id != 0; id = p.links[id].next {
		dst = append(dst, id)
	}
	return dst
}
