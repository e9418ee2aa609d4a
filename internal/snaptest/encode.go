// Package snaptest writes pickles for the tests of package snapshot and its
// importers: a small encoder of plain values (protocol 2 opcodes) that can
// share a value through the memo, as PyTorch's pickles do, and a builder that
// turns a few bytes into a small, structurally valid snapshot pickle for
// fuzz targets. It is imported by tests only.
package snaptest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

type (
	// KV is one key (a string) and value of a Dict: an array rather than a
	// struct, so that literals such as {"size", 512} need no field names.
	KV [2]any
	// Dict is a dict with string keys, in insertion order.
	Dict []KV
	// Tuple is a tuple.
	Tuple []any
	// Shared is a value written once and, wherever the same *Shared appears
	// again, referred to through the memo (LONG_BINPUT, then BINGET or
	// LONG_BINGET), the way pickle writes an object that several
	// containers hold.
	Shared struct{ V any }
	// Int is an int written in the fewest bytes, as Python's pickler writes
	// it (BININT1, BININT2, BININT, else LONG1 with only the bytes the value
	// needs), where int and int64 take a fixed 8-byte LONG1.
	Int int64
)

// Get returns the value of key, or nil.
func (d Dict) Get(key string) any {
	for _, e := range d {
		if e[0] == key {
			return e[1]
		}
	}
	return nil
}

// Set returns a copy of d with key set to v (appended if absent).
func (d Dict) Set(key string, v any) Dict {
	out := append(Dict(nil), d...)
	for i, e := range out {
		if e[0] == key {
			out[i][1] = v
			return out
		}
	}
	return append(out, KV{key, v})
}

// Del returns a copy of d without key.
func (d Dict) Del(key string) Dict {
	var out Dict
	for _, e := range d {
		if e[0] != key {
			out = append(out, e)
		}
	}
	return out
}

// Encode pickles v with protocol 2. Values: Dict, []any, Tuple, *Shared,
// string, Int, int, int64 (written as 8-byte LONG1, so that a fuzzer flipping a
// high byte reaches negative and huge values), uint64, float64, bool, nil.
func Encode(v any) []byte {
	e := encoder{memo: map[*Shared]uint32{}}
	e.b.WriteString("\x80\x02")
	e.enc(v)
	e.b.WriteByte('.')
	return e.b.Bytes()
}

type encoder struct {
	b    bytes.Buffer
	memo map[*Shared]uint32
}

func (e *encoder) u32(v uint32) { binary.Write(&e.b, binary.LittleEndian, v) }

func (e *encoder) enc(v any) {
	b := &e.b
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
		e.enc(int64(x))
	case int64:
		b.WriteString("\x8a\x08")
		binary.Write(b, binary.LittleEndian, x)
	case Int:
		switch {
		case x >= 0 && x < 1<<8:
			b.WriteByte('K')
			b.WriteByte(byte(x))
		case x >= 0 && x < 1<<16:
			b.WriteByte('M')
			binary.Write(b, binary.LittleEndian, uint16(x))
		case x >= math.MinInt32 && x <= math.MaxInt32:
			b.WriteByte('J')
			binary.Write(b, binary.LittleEndian, int32(x))
		default:
			var le [8]byte
			binary.LittleEndian.PutUint64(le[:], uint64(x))
			n := 8
			for n > 1 && ((le[n-1] == 0 && le[n-2] < 0x80) || (le[n-1] == 0xff && le[n-2] >= 0x80)) {
				n--
			}
			b.WriteString("\x8a")
			b.WriteByte(byte(n))
			b.Write(le[:n])
		}
	case uint64:
		b.WriteString("\x8a\x09")
		binary.Write(b, binary.LittleEndian, x)
		b.WriteByte(0)
	case float64:
		b.WriteByte('G')
		binary.Write(b, binary.BigEndian, math.Float64bits(x))
	case string:
		b.WriteByte('X')
		e.u32(uint32(len(x)))
		b.WriteString(x)
	case []any:
		b.WriteString("](")
		for _, el := range x {
			e.enc(el)
		}
		b.WriteByte('e')
	case Tuple:
		b.WriteByte('(')
		for _, el := range x {
			e.enc(el)
		}
		b.WriteByte('t')
	case Dict:
		b.WriteString("}(")
		for _, kv := range x {
			e.enc(kv[0])
			e.enc(kv[1])
		}
		b.WriteByte('u')
	case *Shared:
		if i, ok := e.memo[x]; ok {
			if i < 256 {
				b.WriteByte('h')
				b.WriteByte(byte(i))
			} else {
				b.WriteByte('j')
				e.u32(i)
			}
			return
		}
		e.enc(x.V)
		i := uint32(len(e.memo))
		e.memo[x] = i
		b.WriteByte('r')
		e.u32(i)
	default:
		panic(fmt.Sprintf("snaptest.Encode: unsupported type %T", v))
	}
}
