// A ring-buffer deque of request indices: the waiting queue.
// See doc.go for the overview.

package sim

// deque is a double-ended queue of request indices. The zero value is empty
// and ready to use.
type deque struct {
	buf  []int32
	head int // index of the front in buf
	n    int // number of elements
}

func (d *deque) len() int { return d.n }

func (d *deque) grow() {
	nb := make([]int32, max(16, 2*len(d.buf)))
	for i := 0; i < d.n; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(x int32) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)%len(d.buf)] = x
	d.n++
}

func (d *deque) pushFront(x int32) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = x
	d.n++
}

// front returns the first element; the deque must not be empty.
func (d *deque) front() int32 { return d.buf[d.head] }

// popFront removes and returns the first element; the deque must not be empty.
func (d *deque) popFront() int32 {
	x := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return x
}
