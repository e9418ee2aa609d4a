// Async pool: the size-ordered index of ready memory that answers best fit
// for a stream with pending frees without a per-stream copy of ready memory.
// See package alloc for the overview.

package async

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/internal/extent"
)

// A stream with pending frees sees a ready extent on its own only when the
// extent touches none of its pending frees; one that touches them is part of
// a larger usable extent of that stream (an own run, see free.go). So best
// fit for stream s among ready extents is "the smallest ready extent of at
// least r bytes that does not touch a pending free of s". Each ready extent
// touches at most two pending extents (the one ending at its start and the
// one starting at its end, each of one stream), so it carries the streams
// of those two as its tags, and the query skips extents tagged s.
//
// readyIndex is a treap ordered by (size, address), augmented so that the
// skip costs nothing: every subtree knows its first node, and, for each tag
// of that first node, its first node without that tag. Best fit is then one
// descent, O(log n) expected, however many extents are tagged s, where a
// plain walk in size order would step over every one of them.

// rnode is one ready extent in the index.
type rnode struct {
	size int64
	addr uint64
	tags tags
	pri  uint64 // heap order: a parent's pri is ≥ its children's

	left, right *rnode
	// Augmentation over the subtree rooted here, kept by fix:
	first *rnode    // its first node in (size, addr) order
	skip  [2]*rnode // skip[i]: its first node not tagged first.tags.s[i] (nil if none), for i < first.tags.n
}

// tags are the streams whose pending frees touch a ready extent, without
// repeats: at most two.
type tags struct {
	n int
	s [2]int
}

func (t tags) has(id int) bool {
	return (t.n > 0 && t.s[0] == id) || (t.n > 1 && t.s[1] == id)
}

func (t *tags) add(id int) {
	if !t.has(id) {
		t.s[t.n] = id
		t.n++
	}
}

// before orders nodes by (size, addr).
func (x *rnode) before(size int64, addr uint64) bool {
	return x.size < size || (x.size == size && x.addr < addr)
}

// firstWithout is the subtree's first node not tagged id.
func firstWithout(t *rnode, id int) *rnode {
	if t == nil {
		return nil
	}
	f := t.first
	for i := range f.tags.n {
		if f.tags.s[i] == id {
			return t.skip[i]
		}
	}
	return f
}

// fix recomputes x's augmentation from its children's.
func fix(x *rnode) {
	x.first = x
	if x.left != nil {
		x.first = x.left.first
	}
	x.skip = [2]*rnode{}
	for i := range x.first.tags.n {
		id := x.first.tags.s[i]
		v := firstWithout(x.left, id)
		if v == nil {
			if !x.tags.has(id) {
				v = x
			} else {
				v = firstWithout(x.right, id)
			}
		}
		x.skip[i] = v
	}
}

// priority is a fixed hash of the extent (splitmix64), so the treap's shape
// depends only on its contents: no random source, and clones and replays
// build the same tree.
func priority(size int64, addr uint64) uint64 {
	z := addr ^ uint64(size)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// readyIndex holds one rnode per ready extent. The zero value is empty.
type readyIndex struct {
	root  *rnode
	n     int
	spare []*rnode // recycled nodes, so the steady state allocates nothing
}

// insert adds extent e with tags t.
func (ix *readyIndex) insert(e extent.Extent, t tags) {
	var x *rnode
	if k := len(ix.spare); k > 0 {
		x, ix.spare = ix.spare[k-1], ix.spare[:k-1]
	} else {
		x = new(rnode)
	}
	*x = rnode{size: e.Size, addr: e.Addr, tags: t, pri: priority(e.Size, e.Addr)}
	fix(x)
	ix.root = insertNode(ix.root, x)
	ix.n++
}

func insertNode(t, x *rnode) *rnode {
	if t == nil {
		return x
	}
	if x.pri > t.pri {
		x.left, x.right = split(t, x.size, x.addr)
		fix(x)
		return x
	}
	if x.before(t.size, t.addr) {
		t.left = insertNode(t.left, x)
	} else {
		t.right = insertNode(t.right, x)
	}
	fix(t)
	return t
}

// split cuts t into the nodes before (size, addr) and the rest.
func split(t *rnode, size int64, addr uint64) (l, r *rnode) {
	if t == nil {
		return nil, nil
	}
	if t.before(size, addr) {
		t.right, r = split(t.right, size, addr)
		fix(t)
		return t, r
	}
	l, t.left = split(t.left, size, addr)
	fix(t)
	return l, t
}

// join merges a and b, every node of a ordering before every node of b.
func join(a, b *rnode) *rnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.pri > b.pri:
		a.right = join(a.right, b)
		fix(a)
		return a
	default:
		b.left = join(a, b.left)
		fix(b)
		return b
	}
}

// remove deletes extent e, which must be in the index, and returns its tags.
func (ix *readyIndex) remove(e extent.Extent) tags {
	var gone *rnode
	ix.root = removeNode(ix.root, e, &gone)
	if gone == nil {
		panic(fmt.Sprintf("async: ready extent %v is not in the size index", e))
	}
	ix.n--
	t := gone.tags
	*gone = rnode{}
	ix.spare = append(ix.spare, gone)
	return t
}

func removeNode(t *rnode, e extent.Extent, gone **rnode) *rnode {
	if t == nil {
		return nil
	}
	switch {
	case t.size == e.Size && t.addr == e.Addr:
		*gone = t
		return join(t.left, t.right)
	case t.before(e.Size, e.Addr):
		t.right = removeNode(t.right, e, gone)
	default:
		t.left = removeNode(t.left, e, gone)
	}
	fix(t)
	return t
}

// retag replaces the tags of extent e.
func (ix *readyIndex) retag(e extent.Extent, t tags) {
	ix.remove(e)
	ix.insert(e, t)
}

// bestFitWithout returns the smallest extent of at least size bytes, the
// lowest address among equals, that is not tagged id.
func (ix *readyIndex) bestFitWithout(size int64, id int) (extent.Extent, bool) {
	var best *rnode
	for t := ix.root; t != nil; {
		if t.size < size {
			t = t.right
			continue
		}
		// t and its right subtree are all large enough, and come after
		// everything in its left subtree: their first untagged node is the
		// answer unless the left subtree has one that is large enough.
		if c := t; !c.tags.has(id) {
			best = c
		} else if c := firstWithout(t.right, id); c != nil {
			best = c
		}
		t = t.left
	}
	if best == nil {
		return extent.Extent{}, false
	}
	return extent.Extent{Addr: best.addr, Size: best.size}, true
}

// clone returns a deep copy with no spare nodes.
func (ix *readyIndex) clone() readyIndex {
	return readyIndex{root: cloneNode(ix.root), n: ix.n}
}

func cloneNode(t *rnode) *rnode {
	if t == nil {
		return nil
	}
	c := new(rnode)
	*c = *t
	c.left, c.right = cloneNode(t.left), cloneNode(t.right)
	fix(c)
	return c
}

// check verifies order, heap order, the augmentation and the count against
// want, the ready extents with their expected tags, in address order.
func (ix *readyIndex) check(want map[extent.Extent]tags) error {
	n := 0
	var prev *rnode
	var walk func(t *rnode) error
	walk = func(t *rnode) error {
		if t == nil {
			return nil
		}
		if err := walk(t.left); err != nil {
			return err
		}
		n++
		if prev != nil && !prev.before(t.size, t.addr) {
			return fmt.Errorf("size index out of order at [%#x,+%d)", t.addr, t.size)
		}
		prev = t
		for _, k := range []*rnode{t.left, t.right} {
			if k != nil && k.pri > t.pri {
				return fmt.Errorf("size index heap order broken at [%#x,+%d)", t.addr, t.size)
			}
		}
		first, skip := t.first, t.skip
		if fix(t); first != t.first || skip != t.skip {
			return fmt.Errorf("size index augmentation stale at [%#x,+%d)", t.addr, t.size)
		}
		e := extent.Extent{Addr: t.addr, Size: t.size}
		w, ok := want[e]
		if !ok {
			return fmt.Errorf("size index holds %v, which is not ready", e)
		}
		if w.n != t.tags.n || (w.n > 0 && !t.tags.has(w.s[0])) || (w.n > 1 && !t.tags.has(w.s[1])) {
			return fmt.Errorf("size index tags %v with %v, want %v", e, t.tags, w)
		}
		return walk(t.right)
	}
	if err := walk(ix.root); err != nil {
		return err
	}
	if n != ix.n || n != len(want) {
		return fmt.Errorf("size index holds %d extents (counted %d), ready %d", n, ix.n, len(want))
	}
	return nil
}
