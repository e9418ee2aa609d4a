package pickle_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// Lone surrogates, as Python's pickler writes them (UTF-8 with
// surrogatepass: os.fsdecode of a file name that is not UTF-8), decode to
// the \udcXX escape Python's backslashreplace writes; anything else that
// is not UTF-8 is still refused (issue 28 item 9: such a file name made a
// real snapshot unreadable).
func TestLoneSurrogates(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// pickle.dumps(os.fsdecode(b"/home/caf\xe9/x.py"), protocol=4)
		{"\x80\x04\x95\x15\x00\x00\x00\x00\x00\x00\x00\x8c\x11/home/caf\xed\xb3\xa9/x.py\x94.", `/home/caf\udce9/x.py`},
		// pickle.dumps("\ud83d\ude00", protocol=2): two code points, kept two
		{"\x80\x02X\x06\x00\x00\x00\xed\xa0\xbd\xed\xb8\x80q\x00.", `\ud83d\ude00`},
		{"\x80\x04\x8c\x03\xed\xa0\x80.", `\ud800`},
		{"\x80\x04\x8c\x03\xed\xbf\xbf.", `\udfff`},
		{"\x80\x04\x8c\x05\xc3\xa9\xed\xb2\x80.", `é\udc80`},
	} {
		v, err := pickle.DecodeBytes([]byte(c.in), nil)
		if err != nil || v != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, v, err, c.want)
		}
	}
	for _, in := range []string{
		"\x80\x04\x8c\x02\xed\xa0.",         // a surrogate cut short
		"\x80\x04\x8c\x03\xed\xc0\x80.",     // not a continuation byte
		"\x80\x04\x8c\x03\xed\x9f\xc0.",     // ED 9F is U+D7C0.., then a bad byte
		"\x80\x04\x8c\x04\xf4\x90\x80\x80.", // past U+10FFFF
		"\x80\x04\x8c\x02\xc0\x80.",         // overlong NUL
	} {
		_, err := pickle.DecodeBytes([]byte(in), nil)
		wantErr(t, err, pickle.ErrMalformed, 2, "string is not valid UTF-8")
	}
}
