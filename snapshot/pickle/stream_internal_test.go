package pickle

import (
	"bytes"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

// heldAfterStream decodes a generated snapshot of n bytes with its trace
// streamed and returns the memo entries still held at the end, the items
// streamed and the memo entries stored.
func heldAfterStream(t *testing.T, n int64) (held, items, stored int) {
	t.Helper()
	var buf bytes.Buffer
	st, err := gensnap.Write(&buf, gensnap.Options{Bytes: n, Seed: 7, Layers: 4})
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	o := (&Options{Stream: &Stream{Key: "device_traces", ForgetLists: true, Items: func(s *Streamed, b []Item) error {
		if s.Index != 0 || s.Len != items {
			t.Fatalf("batch of device %d at %d, want device 0 at %d", s.Index, s.Len, items)
		}
		items += len(b)
		return nil
	}}}).withDefaults()
	d := decoder{data: data[:PrefixLen], r: bytes.NewReader(data[PrefixLen:]), opts: o, limit: int64(len(data))}
	v, err := d.run()
	if err != nil {
		t.Fatal(err)
	}
	traces, _ := v.(*Dict).Get("device_traces")
	if s, ok := traces.([]any)[0].(*Streamed); !ok || s.Len != st.Events {
		t.Fatalf("device_traces[0] = %#v, want a *Streamed of %d items", traces.([]any)[0], st.Events)
	}
	if items != st.Events {
		t.Fatalf("%d items streamed, %d written", items, st.Events)
	}
	return d.nmemo - d.forgotten, items, d.nmemo
}

// TestStreamForgets: with the trace streamed, the memo entries held at
// the end follow the distinct frames, strings, segments and blocks, not
// the history: four times the events hold about as many.
func TestStreamForgets(t *testing.T) {
	h1, n1, s1 := heldAfterStream(t, 1_000_000)
	h4, n4, s4 := heldAfterStream(t, 4_000_000)
	t.Logf("1 MB: %d events, %d memo entries stored, %d held; 4 MB: %d, %d, %d", n1, s1, h1, n4, s4, h4)
	if n4 < 3*n1 || s4 < 3*s1 {
		t.Fatalf("4 MB file has %d events and %d memo entries, 1 MB %d and %d", n4, s4, n1, s1)
	}
	// Full chunks of forgotten entries are dropped, a chunk that holds one
	// entry stays whole: allow a few chunks of slack.
	if h4 > h1+h1/4+4*memoChunk || h4 > s4/4 {
		t.Errorf("memo entries held: %d for 4 MB, %d for 1 MB (stored %d): grows with the history", h4, h1, s4)
	}
}

// A reference to an item already streamed and forgotten decodes as
// Forgotten, not as the item.
func TestStreamForgottenReference(t *testing.T) {
	// {"device_traces": [[{"a": 1}]], "b": <memo 4, the entry>}
	p := []byte{0x80, 0x04,
		'}', 0x94, // 0: top
		'(',
		0x8c, 13}
	p = append(p, "device_traces"...)
	p = append(p, 0x94, // 1
		']', 0x94, // 2: outer
		']', 0x94, // 3: device list
		'(',
		'}', 0x94, // 4: entry
		0x8c, 1, 'a', 0x94, // 5
		'K', 1, 's',
		'e',                // APPENDS: entry streamed, forgotten
		'a',                // APPEND device list to outer
		0x8c, 1, 'b', 0x94, // 6
		'h', 4, // BINGET the forgotten entry
		'u', '.')
	var got []Item
	v, err := Decode(bytes.NewReader(p), &Options{Stream: &Stream{Key: "device_traces", Items: func(s *Streamed, b []Item) error {
		got = append(got, b...)
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("streamed %d items, want 1", len(got))
	}
	if e, ok := got[0].V.(*Dict); !ok || e.Len() != 1 {
		t.Fatalf("streamed %#v", got[0].V)
	}
	b, _ := v.(*Dict).Get("b")
	if f, ok := b.(Forgotten); !ok || f.Index != 4 {
		t.Errorf("reference to the streamed entry = %#v, want Forgotten{4}", b)
	}
}
