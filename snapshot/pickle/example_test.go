package pickle_test

import (
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

func ExampleDecodeBytes() {
	// pickle.dumps({"size": 512, "pool": (0, 0)}, protocol=4), by hand.
	data := []byte("\x80\x04}(\x8c\x04sizeM\x00\x02\x8c\x04poolK\x00K\x00\x86u.")
	v, err := pickle.DecodeBytes(data, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := v.(*pickle.Dict)
	size, _ := d.Get("size")
	pool, _ := d.Get("pool")
	fmt.Printf("size=%v pool=%#v\n", size, pool)

	// A pickle that would call os.system is refused, never run.
	_, err = pickle.DecodeBytes([]byte("\x80\x04\x8c\x02os\x8c\x06system\x93."), nil)
	fmt.Println(err, errors.Is(err, pickle.ErrForbidden))
	// Output:
	// size=512 pool=pickle.Tuple{0, 0}
	// offset 14: STACK_GLOBAL (0x93): refused: it would look up or call a Python object; snapshots hold only plain data true
}
