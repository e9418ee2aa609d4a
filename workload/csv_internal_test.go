package workload

import (
	"testing"
	"time"
)

// naiveTimeCases are the shapes naiveTime takes and the ones it leaves to
// time.Parse.
var naiveTimeCases = []string{
	"2023-11-16 18:15:46.6805900", "2023-11-16 18:15:46", "2023-11-16 18:15:46.1",
	"2023-11-16 18:15:46.123456789", "2023-11-16 18:15:46.1234567891234", "2024-02-29 00:00:00.0",
	"2023-02-29 00:00:00", "2023-04-31 12:00:00", "2023-13-01 00:00:00", "2023-00-10 00:00:00",
	"2023-11-00 00:00:00", "2023-11-16 24:00:00", "2023-11-16 23:60:00", "2023-11-16 23:59:60",
	"2023-11-16 18:15:46.", "2023-11-16 18:15:46,5", "2023-11-16 18:15:46.5x", "2023-11-16T18:15:46",
	"2023-11-16 18:15:46+00:00", "2023-11-16 8:15:46", "1969-12-31 23:59:59.999", "0000-01-01 00:00:00",
	"9999-12-31 23:59:59.999999999", "2023-1a-16 18:15:46", "", "2023-11-16",
}

// checkNaiveTime: where naiveTime takes v, time.Parse with the first Azure
// layout takes it too, to the same instant.
func checkNaiveTime(t *testing.T, v string) {
	got, ok := naiveTime(v)
	want, err := time.Parse(azureLayouts[0], v)
	if ok && (err != nil || !got.Equal(want)) {
		t.Errorf("naiveTime(%q) = %v; time.Parse: %v, %v", v, got, want, err)
	}
}

func TestNaiveTime(t *testing.T) {
	taken := 0
	for _, v := range naiveTimeCases {
		checkNaiveTime(t, v)
		if _, ok := naiveTime(v); ok {
			taken++
		}
	}
	if _, ok := naiveTime("2023-11-16 18:15:46.6805900"); !ok {
		t.Error("naiveTime leaves the Azure trace's own shape to time.Parse")
	}
	if taken < 6 {
		t.Errorf("naiveTime took %d of the cases", taken)
	}
}

func FuzzNaiveTime(f *testing.F) {
	for _, v := range naiveTimeCases {
		f.Add(v)
	}
	f.Fuzz(checkNaiveTime)
}
