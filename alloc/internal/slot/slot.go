// Package slot is a table of values addressed by generation-checked handles:
// the live-allocation table every allocator keeps. Put, Get and Delete are
// O(1) and, once the table has grown to its working size, allocate nothing.
//
// Invariants:
//
//	a slot index is either live or on the free list, never both
//	a slot's generation only grows, so a stale handle never matches again
//	  (until the 32-bit generation wraps after 4e9 reuses of one slot)
package slot

import "github.com/gpufrag/gpufrag/alloc"

type entry[T any] struct {
	gen  uint32 // odd while live, even while free
	item T
}

// Table maps handles to values of type T. The zero value is ready to use.
type Table[T any] struct {
	entries []entry[T]
	free    []uint32 // indexes of free entries, reused LIFO
	live    int
}

// Put stores v and returns a new handle for it.
func (t *Table[T]) Put(v T) alloc.Handle {
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.entries = append(t.entries, entry[T]{})
		i = uint32(len(t.entries) - 1)
	}
	e := &t.entries[i]
	e.gen++ // even -> odd: live
	e.item = v
	t.live++
	return alloc.Handle(uint64(e.gen)<<32 | uint64(i+1))
}

func (t *Table[T]) lookup(h alloc.Handle) *entry[T] {
	i := uint32(h) // low 32 bits: index+1
	if i == 0 || int(i) > len(t.entries) {
		return nil
	}
	e := &t.entries[i-1]
	if e.gen != uint32(h>>32) || e.gen%2 == 0 {
		return nil
	}
	return e
}

// Get returns a pointer to the value of a live handle, or nil. The pointer is
// valid until the next Put.
func (t *Table[T]) Get(h alloc.Handle) *T {
	if e := t.lookup(h); e != nil {
		return &e.item
	}
	return nil
}

// Take removes a live handle and returns its value, or reports false (and
// changes nothing) if h is not live: Get and Delete in one lookup.
func (t *Table[T]) Take(h alloc.Handle) (T, bool) {
	var zero T
	e := t.lookup(h)
	if e == nil {
		return zero, false
	}
	v := e.item
	e.item = zero
	e.gen++ // odd -> even: free
	t.free = append(t.free, uint32(h)-1)
	t.live--
	return v, true
}

// Delete removes a live handle and reports whether it was live.
func (t *Table[T]) Delete(h alloc.Handle) bool {
	_, ok := t.Take(h)
	return ok
}

// Len is the number of live handles.
func (t *Table[T]) Len() int { return t.live }

// Each calls f for every live handle in slot order (deterministic).
func (t *Table[T]) Each(f func(h alloc.Handle, v *T)) {
	for i := range t.entries {
		e := &t.entries[i]
		if e.gen%2 == 1 {
			f(alloc.Handle(uint64(e.gen)<<32|uint64(i+1)), &e.item)
		}
	}
}

// Clone returns a deep copy when T holds no pointers to shared state.
func (t *Table[T]) Clone() Table[T] {
	return Table[T]{
		entries: append([]entry[T](nil), t.entries...),
		free:    append([]uint32(nil), t.free...),
		live:    t.live,
	}
}
