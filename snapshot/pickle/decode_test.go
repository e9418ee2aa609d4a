package pickle_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// norm turns a decoded value, or one decoded from JSON with UseNumber, into
// a form both agree on: maps, []any, "i:<int>", "f:<float>", strings.
func norm(t *testing.T, v any) any {
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case int64:
		return "i:" + strconv.FormatInt(x, 10)
	case uint64:
		return "i:" + strconv.FormatUint(x, 10)
	case float64:
		return "f:" + strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			return norm(t, f)
		}
		return "i:" + s
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = norm(t, e)
		}
		return out
	case pickle.Tuple:
		return norm(t, []any(x))
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = norm(t, e)
		}
		return out
	case *pickle.Dict:
		out := map[string]any{}
		for i := 0; i < x.Len(); i++ {
			out[x.Key(i).(string)] = norm(t, x.Value(i))
		}
		return out
	}
	t.Fatalf("unexpected %T", v)
	return nil
}

func TestPlainProtocols(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(readFixture(t, "plain.json")))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain_p2.pickle", "plain_p4.pickle", "plain_p5.pickle"} {
		t.Run(name, func(t *testing.T) {
			v, err := pickle.DecodeBytes(readFixture(t, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := norm(t, v); !reflect.DeepEqual(got, norm(t, want)) {
				t.Errorf("decoded\n%v\nwant\n%v", got, norm(t, want))
			}
			d := v.(*pickle.Dict)
			segs, _ := d.Get("segments")
			seg := segs.([]any)[0].(*pickle.Dict)
			if id, _ := seg.Get("segment_pool_id"); !reflect.DeepEqual(id, pickle.Tuple{int64(0), int64(0)}) {
				t.Errorf("segment_pool_id = %#v, want Tuple{0, 0}", id)
			}
			ints, _ := d.Get("ints")
			if got := ints.([]any)[12]; got != uint64(math.MaxUint64) {
				t.Errorf("2**64-1 decoded as %#v", got)
			}
			if got := ints.([]any)[11]; got != int64(math.MinInt64) {
				t.Errorf("-2**63 decoded as %#v", got)
			}
			big, _ := d.Get("big") // 20 keys: indexed lookup
			if v, ok := big.(*pickle.Dict).Get("17"); !ok || v != int64(17) {
				t.Errorf(`big["17"] = %v, %v`, v, ok)
			}
		})
	}
}

func TestBytes(t *testing.T) {
	v, err := pickle.DecodeBytes(readFixture(t, "bytes_p4.pickle"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*pickle.Dict)
	if s, _ := d.Get("short"); !bytes.Equal(s.([]byte), []byte{0, 1}) {
		t.Errorf("short = %v", s)
	}
	if l, _ := d.Get("long"); len(l.([]byte)) != 300 {
		t.Errorf("long has %d bytes", len(l.([]byte)))
	}
}

// wantErr checks that err is a *pickle.Error of the kind, at the offset,
// whose message contains every fragment.
func wantErr(t *testing.T, err error, kind error, off int64, frags ...string) {
	t.Helper()
	var e *pickle.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *pickle.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %v is not %v", err, kind)
	}
	if off >= 0 && e.Offset != off {
		t.Errorf("error %v at offset %d, want %d", err, e.Offset, off)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestHostile(t *testing.T) {
	_, err := pickle.DecodeBytes(readFixture(t, "hostile_p4.pickle"), nil)
	wantErr(t, err, pickle.ErrForbidden, 34, "STACK_GLOBAL (0x93)", "offset 34")
	_, err = pickle.DecodeBytes(readFixture(t, "hostile_p2.pickle"), nil)
	wantErr(t, err, pickle.ErrForbidden, -1, "GLOBAL (0x63)")
}

func TestHugeDeclaredLength(t *testing.T) {
	data := readFixture(t, "huge_binunicode8.pickle")
	if len(data) != 12 {
		t.Fatalf("fixture has %d bytes, want 12", len(data))
	}
	_, err := pickle.DecodeBytes(data, nil)
	wantErr(t, err, pickle.ErrLength, 2, "BINUNICODE8", "declared length exceeds remaining input")
}

func TestDeep(t *testing.T) {
	data := readFixture(t, "deep.pickle")
	_, err := pickle.DecodeBytes(data, nil)
	wantErr(t, err, pickle.ErrLimit, -1, "nested deeper than 1000")
	v, err := pickle.DecodeBytes(data, &pickle.Options{MaxDepth: 3000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for l := v.([]any); len(l) > 0; l = l[0].([]any) {
		n++
	}
	if n != 2000 {
		t.Errorf("depth %d, want 2000", n)
	}
}

func TestTruncated(t *testing.T) {
	data := readFixture(t, "truncated.pickle")
	_, err := pickle.DecodeBytes(data, nil)
	var e *pickle.Error
	// A cut inside the FRAME that holds everything: its declared length
	// runs past the end, which is reported at the FRAME with the end offset.
	wantErr(t, err, pickle.ErrLength, 2, "FRAME", fmt.Sprintf("input ends at offset %d", len(data)))
	// Every prefix of a valid pickle fails cleanly, ending where it ended.
	full := readFixture(t, "plain_p4.pickle")
	for n := 0; n < len(full); n++ {
		_, err := pickle.DecodeBytes(full[:n], nil)
		if !errors.As(err, &e) {
			t.Fatalf("prefix %d: %v", n, err)
		}
		if errors.Is(err, pickle.ErrTruncated) && e.Offset != int64(n) {
			t.Fatalf("prefix %d: truncation reported at %d: %v", n, e.Offset, err)
		}
		if errors.Is(err, pickle.ErrLength) && !strings.Contains(err.Error(), fmt.Sprintf("input ends at offset %d", n)) {
			t.Fatalf("prefix %d: %v", n, err)
		}
		if !errors.Is(err, pickle.ErrTruncated) && !errors.Is(err, pickle.ErrLength) {
			t.Fatalf("prefix %d: %v is neither ErrTruncated nor ErrLength", n, err)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		in   string
		kind error
		off  int64
		frag string
	}{
		{"empty", "", pickle.ErrTruncated, 0, "before STOP"},
		{"no stop", "\x80\x04N", pickle.ErrTruncated, 3, "before STOP"},
		{"bad proto", "\x80\x09N.", pickle.ErrMalformed, 0, "protocol 9"},
		{"reduce", "\x80\x02N)R.", pickle.ErrForbidden, 4, "REDUCE (0x52)"},
		{"build", "\x80\x02}Nb.", pickle.ErrForbidden, 4, "BUILD"},
		{"inst", "\x80\x02(iX\nY\n.", pickle.ErrForbidden, 3, "INST"},
		{"obj", "\x80\x02(o.", pickle.ErrForbidden, 3, "OBJ"},
		{"newobj", "\x80\x02NN\x81.", pickle.ErrForbidden, 4, "NEWOBJ"},
		{"newobj_ex", "\x80\x04NNN\x92.", pickle.ErrForbidden, 5, "NEWOBJ_EX"},
		{"persid", "\x80\x02P1\n.", pickle.ErrForbidden, 2, "PERSID"},
		{"binpersid", "\x80\x02NQ.", pickle.ErrForbidden, 3, "BINPERSID"},
		{"ext1", "\x80\x02\x82\x01.", pickle.ErrForbidden, 2, "EXT1"},
		{"ext2", "\x80\x02\x83\x01\x00.", pickle.ErrForbidden, 2, "EXT2"},
		{"ext4", "\x80\x02\x84\x01\x00\x00\x00.", pickle.ErrForbidden, 2, "EXT4"},
		{"unknown", "\x80\x04\xff.", pickle.ErrOpcode, 2, "unknown (0xff)"},
		{"pop", "\x80\x04N0N.", pickle.ErrOpcode, 3, "POP"},
		{"data after stop", "\x80\x04N.N", pickle.ErrMalformed, 3, "1 bytes of data after STOP"},
		{"underflow", "\x80\x04a.", pickle.ErrMalformed, 2, "stack underflow"},
		{"no mark", "\x80\x04e.", pickle.ErrMalformed, 2, "no MARK"},
		{"append to dict", "\x80\x04}Na.", pickle.ErrMalformed, 4, "not a list"},
		{"setitem on list", "\x80\x04]NNs.", pickle.ErrMalformed, 5, "not a dict"},
		{"memo miss", "\x80\x04h\x05.", pickle.ErrMalformed, 2, "memo index 5"},
		{"long memo miss", "\x80\x04j\x05\x00\x00\x01.", pickle.ErrMalformed, 2, "memo index 16777221"},
		{"odd dict", "\x80\x04(Nd.", pickle.ErrMalformed, 4, "odd number"},
		{"unhashable", "\x80\x04}]Ns.", pickle.ErrMalformed, 5, "unhashable"},
		{"self list", "\x80\x04]\x94h\x00a.", pickle.ErrUnsupported, 6, "contains itself"},
		{"self dict", "\x80\x04}\x94Nh\x00s.", pickle.ErrUnsupported, 7, "contains itself"},
		{"mutate after use", "\x80\x04]\x94]h\x00ah\x00Na.", pickle.ErrUnsupported, 11, "changed after"},
		{"int too large", "\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", pickle.ErrUnsupported, 2, "integer too large"},
		{"long4 neg len", "\x80\x04\x8b\xff\xff\xff\xff.", pickle.ErrLength, 2, "negative declared length"},
		{"long1 beyond input", "\x80\x04\x8a\x09\x00.", pickle.ErrLength, 2, "declared length exceeds remaining input"},
		{"frame beyond input", "\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00N.", pickle.ErrLength, 2, "FRAME"},
		{"binbytes8 beyond", "\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\xff.", pickle.ErrLength, 2, "exceeds"},
		{"binunicode beyond", "\x80\x04X\x00\x00\x00\x80.", pickle.ErrLength, 2, "exceeds"},
		{"binstring negative", "\x80\x02T\xff\xff\xff\xff.", pickle.ErrLength, 2, "negative"},
		{"short string cut", "\x80\x04\x8c\x05ab", pickle.ErrLength, 2, "exceeds"},
		{"binint cut", "\x80\x04J\x01\x02", pickle.ErrTruncated, 5, "needs 4 more bytes"},
		{"bad utf8", "\x80\x04\x8c\x01\xff.", pickle.ErrMalformed, 2, "UTF-8"},
		{"stop with mark only", "\x80\x04N(.", pickle.ErrMalformed, 4, "stack underflow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := pickle.DecodeBytes([]byte(c.in), nil)
			if err == nil {
				t.Fatalf("decoded %#v, want an error", v)
			}
			wantErr(t, err, c.kind, c.off, c.frag)
		})
	}
}

func TestValues(t *testing.T) {
	cases := []struct {
		in   string
		want any
	}{
		{"\x80\x04\x8a\x00.", int64(0)},
		{"\x80\x04\x8a\x01\xff.", int64(-1)},
		{"\x80\x04\x8a\x02\x00\x80.", int64(-32768)},
		{"\x80\x04\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.", int64(math.MinInt64)},
		{"\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", uint64(math.MaxUint64)},
		{"\x80\x04\x8a\x0a\x00\x00\x00\x00\x00\x00\x00\x80\xff\xff.", int64(math.MinInt64)},
		{"\x80\x04\x8b\x02\x00\x00\x00\x01\x01.", int64(257)},
		{"\x80\x04J\xff\xff\xff\xff.", int64(-1)},
		{"\x80\x02U\x02hi.", "hi"},
		{"\x80\x02T\x02\x00\x00\x00hi.", "hi"},
		{"\x80\x04C\x01z.", []byte("z")},
		{"\x80\x04B\x01\x00\x00\x00z.", []byte("z")},
		{"\x80\x04\x8e\x01\x00\x00\x00\x00\x00\x00\x00z.", []byte("z")},
		{"\x80\x04\x8d\x01\x00\x00\x00\x00\x00\x00\x00z.", "z"},
		{"\x80\x04(K\x01K\x02l.", []any{int64(1), int64(2)}},
		{"\x80\x04(K\x01K\x02t.", pickle.Tuple{int64(1), int64(2)}},
		{"\x80\x04).", pickle.Tuple{}},
		{"\x80\x04].", []any{}},
		{"\x80\x04K\x01q\x07h\x07\x86.", pickle.Tuple{int64(1), int64(1)}},
		{"\x80\x04K\x01r\x00\x00\x01\x00j\x00\x00\x01\x00\x86.", pickle.Tuple{int64(1), int64(1)}},
		// A list fetched from the memo after it was filled sees its items.
		{"\x80\x04]\x94(K\x01K\x02e]h\x00a.", []any{[]any{int64(1), int64(2)}}},
		{"\x80\x04(NN\x88\x89\x87.", pickle.Tuple{nil, nil, true, false}[1:]},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			v, err := pickle.DecodeBytes([]byte(c.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, c.want) {
				t.Errorf("got %#v, want %#v", v, c.want)
			}
		})
	}
}

func TestDictOrderAndDuplicates(t *testing.T) {
	// {"b": 1, "a": 2, "b": 3} → keys b, a; b = 3.
	v, err := pickle.DecodeBytes([]byte("\x80\x04}(\x8c\x01bK\x01\x8c\x01aK\x02\x8c\x01bK\x03u."), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*pickle.Dict)
	if d.Len() != 2 || d.Key(0) != "b" || d.Key(1) != "a" || d.Value(0) != int64(3) {
		t.Errorf("got keys %v values %v %v", d.Keys(), d.Value(0), d.Value(1))
	}
	if d.ValueOffset(0) != 17 || d.Offset() != 2 {
		t.Errorf("offsets: value %d dict %d", d.ValueOffset(0), d.Offset())
	}
	if d.Index("zz") != -1 {
		t.Error("Index of a missing key")
	}
}

func TestLimits(t *testing.T) {
	data := readFixture(t, "plain_p4.pickle")
	_, err := pickle.DecodeBytes(data, &pickle.Options{MaxInputBytes: 100})
	wantErr(t, err, pickle.ErrLimit, 100, "input larger than 100 bytes")
	_, err = pickle.Decode(bytes.NewReader(data), &pickle.Options{MaxInputBytes: 100})
	wantErr(t, err, pickle.ErrLimit, 100, "input larger than 100 bytes")
	_, err = pickle.DecodeBytes(data, &pickle.Options{MaxDecodedBytes: 1000})
	wantErr(t, err, pickle.ErrLimit, -1, "MaxDecodedBytes")
	_, err = pickle.DecodeBytes(data, &pickle.Options{MaxMemo: 5})
	wantErr(t, err, pickle.ErrLimit, -1, "MaxMemo")
	marks := "\x80\x04" + strings.Repeat("(", 11) + "."
	_, err = pickle.DecodeBytes([]byte(marks), &pickle.Options{MaxDepth: 10})
	wantErr(t, err, pickle.ErrLimit, 12, "open MARKs")
	// Amplification: a file of EMPTY_DICTs hits the budget, not the heap.
	amp := "\x80\x04" + strings.Repeat("}", 1<<20) + "."
	_, err = pickle.DecodeBytes([]byte(amp), nil)
	wantErr(t, err, pickle.ErrLimit, -1, "MaxDecodedBytes")
}

// TestRealRatio checks that the real snapshots stay well inside the default
// decoded-bytes budget (it would refuse them otherwise).
func TestRealRatio(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "snapshots")
	files, _ := filepath.Glob(filepath.Join(dir, "*.pickle"))
	if len(files) == 0 {
		t.Skipf("no shared snapshots in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Half the default factor and no slack.
		o := &pickle.Options{MaxDecodedBytes: pickle.DefaultDecodedFactor / 2 * int64(len(data))}
		if _, err := pickle.DecodeBytes(data, o); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}
