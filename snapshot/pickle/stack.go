package pickle

// The decoder's stack: pushing, popping, nesting depth and building
// containers.

// item is a value on the stack or in the memo.
type item struct {
	v     any
	off   int64 // offset of the opcode that pushed it
	depth int32 // nesting depth for immutable values; containers keep their own
}

func (d *decoder) push(v any, depth int32) {
	d.pushItem(item{v: v, off: d.op, depth: depth})
}

// grow returns s with room for n more elements, doubling its capacity when
// it must grow: a list built from many APPENDS batches (Python writes 1000
// items per batch) then allocates twice its final size in all, not five
// times as with append's growth by a quarter.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), max(2*cap(s), len(s)+n))
	copy(out, s)
	return out
}

// stackMin (64 items, 2 KiB) is the stack's first allocation.
const stackMin = 64

// pushItem pushes it, doubling the stack when it is full. append grows a
// large slice by a quarter at a time, which allocates five times the final
// stack in all; doubling allocates twice.
func (d *decoder) pushItem(it item) {
	if len(d.stack) == cap(d.stack) {
		s := make([]item, len(d.stack), max(stackMin, 2*cap(d.stack)))
		copy(s, d.stack)
		d.stack = s
	}
	d.stack = append(d.stack, it)
}

// grew charges for stack capacity above the high-water mark; call it after
// every opcode. The stack is transient, but a run of pushes (BINGET, NONE)
// can make it as large as the input allows.
func (d *decoder) grew() error {
	if n := cap(d.stack); n > d.maxStack {
		c := int64(n-d.maxStack) * costStack
		d.maxStack = n
		return d.charge(c)
	}
	return nil
}

func (d *decoder) pushCharged(v any, cost int64) error {
	if err := d.charge(cost); err != nil {
		return err
	}
	d.push(v, 0)
	return nil
}

// pop removes the top n items above the innermost MARK.
func (d *decoder) pop(n int) ([]item, error) {
	if len(d.stack)-d.base < n {
		return nil, d.fail(ErrMalformed, "stack underflow (needs %d values, has %d)", n, len(d.stack)-d.base)
	}
	s := d.stack[len(d.stack)-n:]
	d.stack = d.stack[:len(d.stack)-n]
	return s, nil
}

// popMark removes everything above the innermost MARK and the MARK itself.
func (d *decoder) popMark() ([]item, error) {
	if len(d.marks) == 0 {
		return nil, d.fail(ErrMalformed, "no MARK on the stack")
	}
	s := d.stack[d.base:]
	d.stack = d.stack[:d.base]
	d.marks = d.marks[:len(d.marks)-1]
	d.base = 0
	if len(d.marks) > 0 {
		d.base = d.marks[len(d.marks)-1]
	}
	return s, nil
}

// depthOf is the nesting depth of a stack or memo item.
func depthOf(it item) int32 {
	switch v := it.v.(type) {
	case *list:
		return v.depth
	case *Dict:
		return v.depth
	}
	return it.depth
}

// use freezes a value that is being put into a container (or returned): a
// list becomes its []any and neither a list nor a dict may change any more.
func use(v any) any {
	switch c := v.(type) {
	case *list:
		c.used = true
		if c.stream != nil {
			return c.stream
		}
		if c.items == nil {
			return []any{}
		}
		return c.items
	case *Dict:
		c.used = true
	}
	return v
}

// deeper raises a container's depth to hold a child of depth cd.
func (d *decoder) deeper(depth *int32, cd int32) error {
	if cd+1 > *depth {
		*depth = cd + 1
		if int(*depth) > d.opts.MaxDepth {
			return d.fail(ErrLimit, "values nested deeper than %d (Options.MaxDepth)", d.opts.MaxDepth)
		}
	}
	return nil
}

func (d *decoder) mutable(v any) error {
	var used bool
	switch c := v.(type) {
	case *list:
		used = c.used
	case *Dict:
		used = c.used
	}
	if used {
		return d.fail(ErrUnsupported, "container changed after it was put into another (recursive or mutated structure)")
	}
	return nil
}

func (d *decoder) appendItems(target item, items []item) error {
	l, ok := target.v.(*list)
	if !ok {
		return d.fail(ErrMalformed, "appending to a %s, not a list", typeName(target.v))
	}
	if err := d.mutable(l); err != nil {
		return err
	}
	if err := d.charge(costValue * int64(len(items))); err != nil {
		return err
	}
	if l.route == 0 {
		l.route = -1
		if d.routes(len(d.stack) - 1) {
			l.route = 1
		}
	}
	if l.route > 0 {
		return d.streamItems(l, items)
	}
	l.items = grow(l.items, len(items))
	for _, it := range items {
		if it.v == any(l) {
			return d.fail(ErrUnsupported, "list contains itself")
		}
		if err := d.deeper(&l.depth, depthOf(it)); err != nil {
			return err
		}
		l.items = append(l.items, use(it.v))
	}
	return nil
}

func (d *decoder) setItems(dict *Dict, items []item) error {
	if len(items)%2 != 0 {
		return d.fail(ErrMalformed, "odd number of values (%d) for key/value pairs", len(items))
	}
	if err := d.mutable(dict); err != nil {
		return err
	}
	if err := d.charge(costEntry * int64(len(items)/2)); err != nil {
		return err
	}
	if dict.ents == nil {
		dict.ents = d.carveEntries(len(items) / 2)
	} else {
		dict.ents = grow(dict.ents, len(items)/2)
	}
	for i := 0; i < len(items); i += 2 {
		k, v := items[i], items[i+1]
		switch k.v.(type) {
		case *list, *Dict:
			return d.fail(ErrMalformed, "unhashable dict key of type %s", typeName(k.v))
		}
		if v.v == any(dict) {
			return d.fail(ErrUnsupported, "dict contains itself")
		}
		if err := d.deeper(&dict.depth, max(depthOf(k), depthOf(v))); err != nil {
			return err
		}
		dict.set(use(k.v), use(v.v), v.off)
	}
	return nil
}

func (d *decoder) tuple(items []item) error {
	if err := d.charge(24 + costValue*int64(len(items))); err != nil {
		return err
	}
	t := make(Tuple, len(items))
	var depth int32 = 1
	for i, it := range items {
		if err := d.deeper(&depth, depthOf(it)); err != nil {
			return err
		}
		t[i] = use(it.v)
	}
	d.push(t, depth)
	return nil
}

// routes reports whether the list at stack position p streams its items
// to opts.Stream: below it, the outer list under Stream.Key in the
// top-level dict, nothing else open (see Stream). It sets the list's
// Streamed.
func (d *decoder) routes(p int) bool {
	st := d.opts.Stream
	if st == nil || p < 3 || len(d.marks) == 0 || d.marks[0] != 1 {
		return false
	}
	// The open marks: the top dict's batch (at 1) and, when the outer
	// list's items come in a batch, that batch's (right above it).
	q := p - 1 // the outer list's position
	switch len(d.marks) {
	case 1:
	case 2:
		q = d.marks[1] - 1
	default:
		return false
	}
	if q < 2 || q%2 != 0 || q >= p {
		return false
	}
	top, ok := d.stack[0].v.(*Dict)
	if !ok || top.used {
		return false
	}
	outer, ok := d.stack[q].v.(*list)
	if !ok || outer.used {
		return false
	}
	if k, ok := d.stack[q-1].v.(string); !ok || k != st.Key {
		return false
	}
	l := d.stack[p].v.(*list)
	l.stream = &Streamed{Index: len(outer.items) + p - q - 1}
	d.streamed++
	return true
}

// streamItems hands items, appended to the streamed list l, to
// opts.Stream, then forgets each dict among them.
func (d *decoder) streamItems(l *list, items []item) error {
	st := d.opts.Stream
	batch := make([]Item, len(items))
	for i, it := range items {
		if err := d.deeper(&l.depth, depthOf(it)); err != nil {
			return err
		}
		batch[i] = Item{V: use(it.v), Off: it.off}
	}
	if err := st.Items(l.stream, batch); err != nil {
		return err
	}
	l.stream.Len += len(items)
	for i, it := range items {
		end := d.memo.len()
		if i+1 < len(items) {
			if next, ok := items[i+1].v.(*Dict); ok && next.memo > 0 {
				end = int(next.memo - 1)
			}
		}
		d.forget(it.v, end, st.ForgetLists)
	}
	return nil
}
