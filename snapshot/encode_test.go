package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// A tiny pickle writer (protocol 2 opcodes) for building snapshots in
// tests. Values: od (an ordered dict), []any, tup, string, int, int64,
// uint64, float64, bool, nil.
type (
	kv struct {
		k string
		v any
	}
	od  []kv
	tup []any
)

// get returns the value at a dotted path such as "segments.0.blocks.1".
func (d od) get(key string) any {
	for _, e := range d {
		if e.k == key {
			return e.v
		}
	}
	return nil
}

func (d od) set(key string, v any) od {
	out := append(od(nil), d...)
	for i, e := range out {
		if e.k == key {
			out[i].v = v
			return out
		}
	}
	return append(out, kv{key, v})
}

func (d od) del(key string) od {
	var out od
	for _, e := range d {
		if e.k != key {
			out = append(out, e)
		}
	}
	return out
}

func encode(v any) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x02")
	enc(&b, v)
	b.WriteByte('.')
	return b.Bytes()
}

func enc(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteByte('N')
	case bool:
		if x {
			b.WriteByte(0x88)
		} else {
			b.WriteByte(0x89)
		}
	case int:
		enc(b, int64(x))
	case int64:
		b.WriteString("\x8a\x08")
		binary.Write(b, binary.LittleEndian, x)
	case uint64:
		b.WriteString("\x8a\x09")
		binary.Write(b, binary.LittleEndian, x)
		b.WriteByte(0)
	case float64:
		b.WriteByte('G')
		binary.Write(b, binary.BigEndian, math.Float64bits(x))
	case string:
		b.WriteByte('X')
		binary.Write(b, binary.LittleEndian, uint32(len(x)))
		b.WriteString(x)
	case []any:
		b.WriteString("](")
		for _, e := range x {
			enc(b, e)
		}
		b.WriteByte('e')
	case tup:
		b.WriteByte('(')
		for _, e := range x {
			enc(b, e)
		}
		b.WriteByte('t')
	case od:
		b.WriteString("}(")
		for _, e := range x {
			enc(b, e.k)
			enc(b, e.v)
		}
		b.WriteByte('u')
	default:
		panic(fmt.Sprintf("enc: %T", v))
	}
}
