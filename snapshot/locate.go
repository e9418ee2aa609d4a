package snapshot

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Validate's errors name a field of the Snapshot, which keeps no offsets.
// When Read refuses a file for one, it finds where the field is in the file
// (conv.locate), at no cost to a file that passes: the decoded values
// still hold the offsets of segments, blocks and every dict value
// (pickle.Dict.ValueOffset), and a streamed trace the offsets of its
// entries (streamedTrace.offs). The offset is that of the value at fault
// when the decoded values still hold it; else of the deepest object
// around it they hold (a streamed trace entry: its start). A value the
// pickle shares through the memo is where it was first written.

// at sets err's offset to off when err is an *Error without one.
func at(err error, off int64) error {
	var e *Error
	if off >= 0 && errors.As(err, &e) && e.Offset < 0 {
		e.Offset = off
	}
	return err
}

// locate gives err, an error of Validate, the offset of its field in the
// file whose decoded top-level value is top.
func (c *conv) locate(err error, top any) error {
	var e *Error
	if !errors.As(err, &e) || e.Offset >= 0 || e.Field == "" {
		return err
	}
	return at(err, c.offsetOf(top, e.Field))
}

// offsetOf walks path (segments[3].blocks[2].size, device_traces[0][17].addr)
// down the decoded values from top and returns the offset of the deepest
// value it reaches, or -1.
func (c *conv) offsetOf(top any, path string) int64 {
	cur, off := top, int64(-1)
	first := true
	for path != "" {
		var key string
		idx := -1
		switch {
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return off
			}
			n, err := strconv.Atoi(path[1:end])
			if err != nil {
				return off
			}
			idx, path = n, path[end+1:]
		default:
			path = strings.TrimPrefix(path, ".")
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			key, path = path[:end], path[end:]
		}
		if idx < 0 {
			d, ok := cur.(*pickle.Dict)
			if !ok {
				if first && key == "segments" {
					first = false // a bare list of segments (FormatSegmentList)
					continue
				}
				return off
			}
			i := d.Index(key)
			if i < 0 {
				return off
			}
			cur, off = d.Value(i), d.ValueOffset(i)
			first = false
			continue
		}
		var l []any
		switch x := cur.(type) {
		case []any:
			l = x
		case pickle.Tuple:
			l = x
		case *pickle.Streamed:
			// A trace the decoder streamed: the entry's own offset.
			if o := c.streamedOffset(x.Index, idx); o >= 0 {
				return o
			}
			return off
		default:
			return off
		}
		if idx >= len(l) {
			return off
		}
		cur = l[idx]
		if d, ok := cur.(*pickle.Dict); ok {
			off = d.Offset()
		}
	}
	return off
}

// streamedOffset is the offset of entry i of the streamed trace of device
// d, or -1 when it was not recorded.
func (c *conv) streamedOffset(d, i int) int64 {
	for st, t := range c.streamed {
		if st.Index != d {
			continue
		}
		b, off := t.offs, int64(0)
		for k := 0; k <= i; k++ {
			delta, n := binary.Varint(b)
			if n <= 0 {
				return -1
			}
			off += delta
			b = b[n:]
		}
		return off
	}
	return -1
}
