package sizeclass_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/sizeclass"
)

// The waste table of the default classes, as the package doc shows it. With
// classes of whole pages there is no tail; the rounding waste is up to 7/8
// of a block, because the classes are 8× apart.
func ExampleWasteTable() {
	fmt.Print(sizeclass.FormatWasteTable(sizeclass.WasteTable(sizeclass.Config{})))
	// Output:
	// class       slots       slab       tail    tail%   max-rounding    round%
	// 8MiB            1       8MiB         0B    0.00%        8388607   100.00%
	// 64MiB           1      64MiB         0B    0.00%       58720255    87.50%
	// 512MiB          1     512MiB         0B    0.00%      469762047    87.50%
}

// Classes below a page share a 2 MiB slab: 4096 slots of 512 B fill it
// exactly, but two 768 KiB slots leave 512 KiB of every slab unusable. A
// class that does not divide whole pages (1.5 MiB, 3 MiB) leaves a tail too.
func ExampleWasteTable_fine() {
	cfg, err := sizeclass.ParseConfig("512B/768KiB/1536KiB/3MiB")
	if err != nil {
		panic(err)
	}
	fmt.Print(sizeclass.FormatWasteTable(sizeclass.WasteTable(cfg)))
	// Output:
	// class       slots       slab       tail    tail%   max-rounding    round%
	// 512B         4096       2MiB         0B    0.00%            511    99.80%
	// 768KiB          2       2MiB     512KiB   25.00%         785919    99.93%
	// 1536KiB         1       2MiB     512KiB   25.00%         786431    50.00%
	// 3MiB            1       4MiB       1MiB   25.00%        1572863    50.00%
}
