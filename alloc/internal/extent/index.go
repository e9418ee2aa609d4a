// The two indexes of a Set: ordset.Binned sets of (addr, size) and
// (size, addr) keys. See package extent for the overview.

package extent

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// key orders extents inside one index. The two halves compare
// lexicographically: byAddr stores (addr, size), bySize stores (size, addr).
// Keys are unique in both indexes because free extents never share a start.
// The ID of an ordset.Key is unused (always 0).
type key = ordset.Key

func addrKey(addr uint64, size int64) key { return key{Hi: addr, Lo: uint64(size)} }
func sizeKey(addr uint64, size int64) key { return key{Hi: uint64(size), Lo: addr} }
func fromAddr(k key) Extent               { return Extent{Addr: k.Hi, Size: int64(k.Lo)} }
func fromSize(k key) Extent               { return Extent{Addr: k.Lo, Size: int64(k.Hi)} }

// insert adds k, which must be absent: the callers keep keys unique, and a
// duplicate means a broken set.
func insert(ix *ordset.Binned, k key) {
	if !ix.Insert(k) {
		panic(fmt.Sprintf("extent: duplicate key %v", k))
	}
}

// replace changes the key at p from old to k, where k takes old's place in
// the order: in place when both fall in the same bin.
func replace(ix *ordset.Binned, p ordset.BinPos, old, k key) {
	if ix.SameBin(old.Hi, k.Hi) {
		ix.SetAt(p, k)
		return
	}
	ix.Delete(old)
	insert(ix, k)
}

// rekey replaces old, which must be present, by k: in place when k keeps
// old's place among its neighbours in old's bin, else by a delete and an
// insert.
func rekey(ix *ordset.Binned, old, k key) {
	if p, x, ok := ix.Find(old); ok && x == old && ix.Replace(p, k) {
		return
	}
	ix.Delete(old)
	insert(ix, k)
}

// rekeyAt is rekey for an old key found at p.
func rekeyAt(ix *ordset.Binned, p ordset.BinPos, old, k key) {
	if ix.Replace(p, k) {
		return
	}
	ix.DeleteAt(p)
	insert(ix, k)
}
