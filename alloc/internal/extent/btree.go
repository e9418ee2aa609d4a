// B-tree of 128-bit keys: the index structure under Set.
// See package extent for the overview.

package extent

import (
	"errors"
	"fmt"
)

// key orders extents inside one index. The two halves compare
// lexicographically: byAddr stores (addr, size), bySize stores (size, addr).
// Keys are unique in both indexes because free extents never share a start.
type key struct{ hi, lo uint64 }

func (a key) less(b key) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// degree is the B-tree's minimum degree t: every node except the root holds
// between t-1 and 2t-1 keys. Each bin of an index is its own small tree (a
// bucket holds about ten extents in the arena benchmark, see addrBins), so
// 8, for 15 keys and 376 bytes a node, usually fits a whole bin in one leaf
// while keeping a bin that holds one extent cheap. Degrees 4, 8 and 16
// measured within noise of each other on BenchmarkAllocFree in package
// arena; without bins (one tree per index), 16 beat 8 by ~30% and 4 by ~2×.
const (
	degree  = 8
	maxKeys = 2*degree - 1
	minKeys = degree - 1
)

// node is one B-tree node. A leaf has kids[0] == nil; an inner node with n
// keys has n+1 non-nil kids. Kid slots past n are nil, so a recycled node
// never keeps the rest of the tree alive; key slots past n are garbage.
//
// The keys' halves are kept in two arrays (his, los) rather than one array of
// keys: a search scans his alone, 8 bytes apart, in a tight loop, and reads
// los only among equal his (equal sizes, in the size index).
type node struct {
	n    int
	his  [maxKeys]uint64 // high halves of keys 0..n-1
	los  [maxKeys]uint64 // low halves of keys 0..n-1
	kids [maxKeys + 1]*node
}

func (x *node) leaf() bool { return x.kids[0] == nil }

func (x *node) key(i int) key { return key{x.his[i], x.los[i]} }

func (x *node) setKey(i int, k key) { x.his[i], x.los[i] = k.hi, k.lo }

// find returns the index of the first key >= k and whether it equals k.
func (x *node) find(k key) (int, bool) {
	n := x.n
	his, los := x.his[:n], x.los[:n]
	i := 0
	for i < len(his) && his[i] < k.hi {
		i++
	}
	for i < len(his) && his[i] == k.hi && los[i] < k.lo {
		i++
	}
	return i, i < n && his[i] == k.hi && los[i] == k.lo
}

// insertAt puts k at index i and, for inner nodes, right as kid i+1.
func (x *node) insertAt(i int, k key, right *node) {
	for j := x.n; j > i; j-- {
		x.his[j], x.los[j] = x.his[j-1], x.los[j-1]
	}
	x.setKey(i, k)
	if right != nil {
		copy(x.kids[i+2:x.n+2], x.kids[i+1:x.n+1])
		x.kids[i+1] = right
	}
	x.n++
}

// removeAt drops key i and, for inner nodes, kid i+1.
func (x *node) removeAt(i int) {
	for j := i; j < x.n-1; j++ {
		x.his[j], x.los[j] = x.his[j+1], x.los[j+1]
	}
	if !x.leaf() {
		copy(x.kids[i+1:x.n], x.kids[i+2:x.n+1])
		x.kids[x.n] = nil
	}
	x.n--
}

// slot names one key inside a node: what lowerSlot and seek return so that
// a caller can rewrite a key without a second descent. It is valid until
// the next insert or delete.
type slot struct {
	x *node
	i int
}

func (s slot) ok() bool  { return s.x != nil }
func (s slot) get() key  { return s.x.key(s.i) }
func (s slot) set(k key) { s.x.setKey(s.i, k) }

// pool recycles nodes, so trees that have reached their working size
// allocate nothing. It holds at most the peak number of nodes its trees ever
// had, memory they used anyway. All trees of one index share one pool.
type pool struct {
	spare []*node // zeroed nodes ready for reuse
}

func (p *pool) newNode() *node {
	if n := len(p.spare); n > 0 {
		x := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return x
	}
	return new(node)
}

// freeNode recycles x. Only the kid pointers need clearing (so that the node
// is a leaf and holds nothing alive); the keys are overwritten on reuse.
func (p *pool) freeNode(x *node) {
	clear(x.kids[:x.n+1])
	x.n = 0
	p.spare = append(p.spare, x)
}

// tree is a B-tree set of keys whose nodes come from a pool passed to every
// call that may create or drop a node.
//
// Invariants (checked by check):
//
//	keys strictly increase in an in-order walk
//	every leaf is at the same depth
//	every node but the root holds minKeys..maxKeys keys; the root 1..maxKeys,
//	  or 0 when the tree is empty
//	length == number of keys
//
// An emptied tree keeps its root leaf: the bins of an index empty and fill
// again all the time, and recycling their one node through the pool each
// time showed up as ~8% of a free+alloc pair in a CPU profile.
type tree struct {
	root   *node // nil or an empty leaf when length == 0
	length int   // number of keys; +insert, -delete
}

// ceil returns the smallest key >= k.
func (t *tree) ceil(k key) (key, bool) {
	var best key
	ok := false
	for x := t.root; x != nil; {
		i, found := x.find(k)
		if found {
			return x.key(i), true
		}
		if i < x.n {
			best, ok = x.key(i), true
		}
		x = x.kids[i]
	}
	return best, ok
}

// ceilSlot returns the slot of the smallest key >= k.
func (t *tree) ceilSlot(k key) slot {
	var best slot
	for x := t.root; x != nil; {
		i, found := x.find(k)
		if found {
			return slot{x, i}
		}
		if i < x.n {
			best = slot{x, i}
		}
		x = x.kids[i]
	}
	return best
}

// findSlot returns the slot of k, or a zero slot when k is absent.
func (t *tree) findSlot(k key) slot {
	for x := t.root; x != nil; {
		i, found := x.find(k)
		if found {
			return slot{x, i}
		}
		x = x.kids[i]
	}
	return slot{}
}

// deleteAt removes the key in slot s, which holds k. When s is in a leaf
// that can lose a key without rebalancing (the root, or a leaf above
// minKeys) that takes no descent; otherwise it falls back to delete.
func (t *tree) deleteAt(s slot, k key, p *pool) {
	if s.x.leaf() && (s.x == t.root || s.x.n > minKeys) {
		s.x.removeAt(s.i)
		t.length--
		return
	}
	t.delete(k, p)
}

// lowerSlot returns the slot of the largest key < k. Rewriting the key
// through the slot is allowed only with a key that keeps the order (see
// Set.Take).
func (t *tree) lowerSlot(k key) slot {
	var best slot
	for x := t.root; x != nil; {
		i, _ := x.find(k)
		if i > 0 {
			best = slot{x, i - 1}
		}
		x = x.kids[i]
	}
	return best
}

// seek returns the slots of the largest key < k and of the smallest key >= k
// (zero slots when absent), with the rules of lowerSlot.
func (t *tree) seek(k key) (pred, succ slot) {
	for x := t.root; x != nil; {
		i, _ := x.find(k)
		if i > 0 {
			pred = slot{x, i - 1}
		}
		if i < x.n {
			succ = slot{x, i}
		}
		// Deeper keys lie strictly between keys[i-1] and keys[i], so they
		// only tighten the bounds found so far.
		x = x.kids[i]
	}
	return pred, succ
}

func (t *tree) min() (key, bool) {
	x := t.root
	if t.length == 0 {
		return key{}, false
	}
	for !x.leaf() {
		x = x.kids[0]
	}
	return x.key(0), true
}

// rekeyInLeaf replaces old by k in place when old sits in a leaf and k falls
// between old's neighbours (inside the leaf, or the separators above it), so
// that the order is unchanged. It reports false, changing nothing, otherwise.
func (t *tree) rekeyInLeaf(old, k key) bool {
	var lo, hi key // tightest separators on the path
	hasLo, hasHi := false, false
	for x := t.root; x != nil; {
		i, found := x.find(old)
		if found && !x.leaf() {
			return false
		}
		if x.leaf() {
			if !found {
				return false
			}
			if i > 0 {
				lo, hasLo = x.key(i-1), true
			}
			if i+1 < x.n {
				hi, hasHi = x.key(i+1), true
			}
			if (hasLo && !lo.less(k)) || (hasHi && !k.less(hi)) {
				return false
			}
			x.setKey(i, k)
			return true
		}
		if i > 0 {
			lo, hasLo = x.key(i-1), true
		}
		if i < x.n {
			hi, hasHi = x.key(i), true
		}
		x = x.kids[i]
	}
	return false
}

// minSlot and maxSlot return the slots of the smallest and largest keys of a
// non-empty tree.
func (t *tree) minSlot() slot {
	x := t.root
	for !x.leaf() {
		x = x.kids[0]
	}
	return slot{x, 0}
}

func (t *tree) maxSlot() slot {
	x := t.root
	for !x.leaf() {
		x = x.kids[x.n]
	}
	return slot{x, x.n - 1}
}

func (t *tree) max() (key, bool) {
	x := t.root
	if t.length == 0 {
		return key{}, false
	}
	for !x.leaf() {
		x = x.kids[x.n]
	}
	return x.key(x.n - 1), true
}

// insert adds k, which must not be present (a duplicate panics: the callers
// keep keys unique). Full nodes are split on the way down, so one pass
// suffices (CLRS B-TREE-INSERT).
func (t *tree) insert(k key, p *pool) {
	if t.root == nil {
		r := p.newNode()
		r.setKey(0, k)
		r.n = 1
		t.root, t.length = r, 1
		return
	}
	if t.root.n == maxKeys {
		r := p.newNode()
		r.kids[0] = t.root
		t.root = r
		split(r, 0, p)
	}
	x := t.root
	for {
		i, found := x.find(k)
		if found {
			panic(fmt.Sprintf("extent: duplicate key %v", k))
		}
		if x.leaf() {
			x.insertAt(i, k, nil)
			t.length++
			return
		}
		if x.kids[i].n == maxKeys {
			split(x, i, p)
			switch mid := x.key(i); {
			case mid == k:
				panic(fmt.Sprintf("extent: duplicate key %v", k))
			case mid.less(k):
				i++
			}
		}
		x = x.kids[i]
	}
}

// split divides the full kid i of x around its median, which moves up into x.
func split(x *node, i int, p *pool) {
	y := x.kids[i]
	z := p.newNode()
	z.n = degree - 1
	copy(z.his[:degree-1], y.his[degree:])
	copy(z.los[:degree-1], y.los[degree:])
	if !y.leaf() {
		copy(z.kids[:degree], y.kids[degree:])
		clear(y.kids[degree:])
	}
	mid := y.key(degree - 1)
	y.n = degree - 1
	x.insertAt(i, mid, z)
}

// delete removes k and reports whether it was present. Nodes on the way down
// are topped up to more than minKeys first, so one pass suffices (CLRS
// B-TREE-DELETE).
func (t *tree) delete(k key, p *pool) bool {
	if t.root == nil {
		return false
	}
	ok := remove(t.root, k, p)
	if t.root.n == 0 && !t.root.leaf() {
		old := t.root
		t.root = old.kids[0]
		p.freeNode(old)
	}
	if ok {
		t.length--
	}
	return ok
}

func remove(x *node, k key, p *pool) bool {
	for {
		i, found := x.find(k)
		if x.leaf() {
			if found {
				x.removeAt(i)
			}
			return found
		}
		if found {
			switch {
			case x.kids[i].n > minKeys:
				x.setKey(i, removeMax(x.kids[i], p))
				return true
			case x.kids[i+1].n > minKeys:
				x.setKey(i, removeMin(x.kids[i+1], p))
				return true
			}
			merge(x, i, p) // k moves down into kids[i]
			x = x.kids[i]
			continue
		}
		if x.kids[i].n == minKeys {
			i = grow(x, i, p)
		}
		x = x.kids[i]
	}
}

// removeMax removes and returns the largest key under x, which holds more
// than minKeys keys (or is the root).
func removeMax(x *node, p *pool) key {
	for !x.leaf() {
		i := x.n
		if x.kids[i].n == minKeys {
			i = grow(x, i, p)
		}
		x = x.kids[i]
	}
	k := x.key(x.n - 1)
	x.removeAt(x.n - 1)
	return k
}

// removeMin removes and returns the smallest key under x (see removeMax).
func removeMin(x *node, p *pool) key {
	for !x.leaf() {
		if x.kids[0].n == minKeys {
			grow(x, 0, p)
		}
		x = x.kids[0]
	}
	k := x.key(0)
	x.removeAt(0)
	return k
}

// grow gives kid i of x more than minKeys keys, by borrowing through x from a
// sibling that can spare one or else by merging with a sibling. It returns
// the index of the kid that now covers what kid i covered.
func grow(x *node, i int, p *pool) int {
	c := x.kids[i]
	if i > 0 && x.kids[i-1].n > minKeys {
		l := x.kids[i-1]
		// Rotate right: x.keys[i-1] moves down to the front of c, the
		// largest key of l moves up.
		copy(c.his[1:c.n+1], c.his[:c.n])
		copy(c.los[1:c.n+1], c.los[:c.n])
		c.setKey(0, x.key(i-1))
		if !c.leaf() {
			copy(c.kids[1:c.n+2], c.kids[:c.n+1])
			c.kids[0] = l.kids[l.n]
			l.kids[l.n] = nil
		}
		c.n++
		x.setKey(i-1, l.key(l.n-1))
		l.n--
		return i
	}
	if i < x.n && x.kids[i+1].n > minKeys {
		r := x.kids[i+1]
		// Rotate left: x.keys[i] moves down to the end of c, the smallest
		// key of r moves up.
		c.setKey(c.n, x.key(i))
		if !c.leaf() {
			c.kids[c.n+1] = r.kids[0]
		}
		c.n++
		x.setKey(i, r.key(0))
		copy(r.his[:r.n-1], r.his[1:r.n])
		copy(r.los[:r.n-1], r.los[1:r.n])
		if !r.leaf() {
			copy(r.kids[:r.n], r.kids[1:r.n+1])
			r.kids[r.n] = nil
		}
		r.n--
		return i
	}
	if i == x.n {
		i--
	}
	merge(x, i, p)
	return i
}

// merge joins kid i, key i and kid i+1 of x into kid i.
func merge(x *node, i int, p *pool) {
	y, z := x.kids[i], x.kids[i+1]
	y.setKey(y.n, x.key(i))
	copy(y.his[y.n+1:], z.his[:z.n])
	copy(y.los[y.n+1:], z.los[:z.n])
	if !y.leaf() {
		copy(y.kids[y.n+1:], z.kids[:z.n+1])
	}
	y.n += z.n + 1
	x.removeAt(i)
	p.freeNode(z)
}

// ascend calls f on every key in increasing order until f returns false.
func (x *node) ascend(f func(key) bool) bool {
	for i := 0; i < x.n; i++ {
		if !x.leaf() && !x.kids[i].ascend(f) {
			return false
		}
		if !f(x.key(i)) {
			return false
		}
	}
	return x.leaf() || x.kids[x.n].ascend(f)
}

// descend calls f on every key in decreasing order until f returns false.
func (x *node) descend(f func(key) bool) bool {
	if !x.leaf() && !x.kids[x.n].descend(f) {
		return false
	}
	for i := x.n - 1; i >= 0; i-- {
		if !f(x.key(i)) {
			return false
		}
		if !x.leaf() && !x.kids[i].descend(f) {
			return false
		}
	}
	return true
}

func (t *tree) ascend(f func(key) bool) {
	if t.root != nil {
		t.root.ascend(f)
	}
}

func (t *tree) descend(f func(key) bool) {
	if t.root != nil {
		t.root.descend(f)
	}
}

// clear empties the tree, giving its nodes back to p.
func (t *tree) clear(p *pool) {
	if t.root != nil {
		t.root.free(p)
	}
	t.root, t.length = nil, 0
}

func (x *node) free(p *pool) {
	if !x.leaf() {
		for i := 0; i <= x.n; i++ {
			x.kids[i].free(p)
		}
	}
	p.freeNode(x)
}

// clone returns a deep copy that shares no nodes.
func (t *tree) clone() tree {
	var cp func(x *node) *node
	cp = func(x *node) *node {
		y := new(node)
		*y = *x
		if !x.leaf() {
			for i := 0; i <= x.n; i++ {
				y.kids[i] = cp(x.kids[i])
			}
		}
		return y
	}
	c := tree{length: t.length}
	if t.length > 0 {
		c.root = cp(t.root)
	}
	return c
}

var errTree = errors.New("extent: broken B-tree")

// check verifies the tree's invariants.
func (t *tree) check() error {
	if t.root == nil || t.root.n == 0 {
		if t.length != 0 || t.root != nil && !t.root.leaf() {
			return fmt.Errorf("%w: empty root but length %d", errTree, t.length)
		}
		return nil
	}
	count, leafDepth := 0, -1
	var prev key
	hasPrev := false
	var walk func(x *node, depth int) error
	walk = func(x *node, depth int) error {
		lo := minKeys
		if x == t.root {
			lo = 1
		}
		if x.n < lo || x.n > maxKeys {
			return fmt.Errorf("%w: node at depth %d holds %d keys", errTree, depth, x.n)
		}
		if x.leaf() {
			if leafDepth >= 0 && depth != leafDepth {
				return fmt.Errorf("%w: leaves at depths %d and %d", errTree, leafDepth, depth)
			}
			leafDepth = depth
			for i := range x.kids {
				if x.kids[i] != nil {
					return fmt.Errorf("%w: leaf with kid %d", errTree, i)
				}
			}
		} else {
			for i := 0; i <= maxKeys; i++ {
				if (x.kids[i] != nil) != (i <= x.n) {
					return fmt.Errorf("%w: inner node with %d keys has kid %d = %v", errTree, x.n, i, x.kids[i] != nil)
				}
			}
		}
		for i := 0; i <= x.n; i++ {
			if !x.leaf() {
				if err := walk(x.kids[i], depth+1); err != nil {
					return err
				}
			}
			if i < x.n {
				if hasPrev && !prev.less(x.key(i)) {
					return fmt.Errorf("%w: keys out of order: %v then %v", errTree, prev, x.key(i))
				}
				prev, hasPrev = x.key(i), true
				count++
			}
		}
		return nil
	}
	if err := walk(t.root, 0); err != nil {
		return err
	}
	if count != t.length {
		return fmt.Errorf("%w: %d keys, length %d", errTree, count, t.length)
	}
	return nil
}
