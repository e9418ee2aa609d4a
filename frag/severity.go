package frag

import (
	"fmt"
	"strconv"

	"github.com/gpufrag/gpufrag/mem"
)

// Level is how much a layout's fragmentation matters, from Judge.
type Level int

// Levels, from least to most urgent.
const (
	// LevelHealthy: the free memory is (nearly) in one piece.
	LevelHealthy Level = iota
	// LevelMinor: the ratio is low but little memory is at stake: the
	// free memory outside the largest free block is under StakeMinor of
	// the memory it is weighed against.
	LevelMinor
	// LevelFull: out-of-memory failures while the free memory was in one
	// piece: the device ran out of memory, fragmentation did not cause it.
	LevelFull
	// LevelWatch: health below HealthAct with memory at stake.
	LevelWatch
	// LevelAct: health below HealthWorsening with memory at stake.
	LevelAct
)

// StakeMinor is the share of the weighed memory (the device's capacity
// when known, else the reserved memory) that the free memory outside the
// largest free block must reach before a low health is worth acting on.
// Not tuned: a judgement. 1% of an 80 GiB device is 819 MiB, about the KV
// cache of one 6.5K-token Llama-3-8B request: below it, compaction frees less
// than one request needs. The four shared snapshots (../shared/data/snapshots)
// strand 0.0002% to 0.2% of an 80 GiB device; the issue that asked for this
// (18, item 6) names the 0.2% one (health 0.025) as a case to call minor.
const StakeMinor = 0.01

// Stake is what Judge weighs: a health ratio and the memory behind it.
type Stake struct {
	Health     float64 // largest free block ÷ cached free (Health)
	CachedFree int64   // free memory inside the allocator's segments
	Reserved   int64   // memory the allocator holds
	// Capacity is the device's memory, 0 when unknown; the stranded bytes
	// are weighed against it when known, else against Reserved.
	Capacity int64
	// OOMs counts out-of-memory failures (allocations or requests), when
	// known.
	OOMs int
}

// Stranded is the free memory outside the largest free block: what
// fragmentation withholds from the next large request, (1 − health) ×
// cached free.
func (s Stake) Stranded() int64 {
	if s.CachedFree <= 0 {
		return 0
	}
	h := min(max(s.Health, 0), 1)
	return int64((1 - h) * float64(s.CachedFree))
}

// base is the memory the stranded bytes are weighed against.
func (s Stake) base() (int64, string) {
	if s.Capacity > 0 {
		return s.Capacity, "the device"
	}
	return s.Reserved, "reserved memory"
}

// Verdict is Judge's answer: a level, its label and the clause that says why.
type Verdict struct {
	Level Level
	// Label is what the texts print: "healthy", "minor: little memory at
	// stake", "out of memory, not fragmentation", "fragmenting: act soon"
	// or "fragmented: act".
	Label string
	// Why says in one clause what the label weighed: the stranded bytes and
	// their share, or the failed allocations.
	Why string
}

// Judge weighs a health ratio by the bytes it puts at stake, so that a low
// ratio over a sliver of free memory is not called fragmented, and failed
// allocations beside a healthy layout are called a full device. One helper
// for every text that labels fragmentation (simulate, replay, analyze,
// defrag), so that they agree.
func Judge(s Stake) Verdict {
	stranded := s.Stranded()
	base, against := s.base()
	share := 0.0
	if base > 0 {
		share = float64(stranded) / float64(base)
	}
	at := fmt.Sprintf("%s free outside the largest free block, %s of %s", mem.FormatBytes(stranded), percent(share), against)
	failed := ""
	if s.OOMs > 0 {
		failed = fmt.Sprintf("; %d out-of-memory failure%s", s.OOMs, plural(s.OOMs))
	}
	switch {
	case s.Health >= HealthAct && s.OOMs > 0:
		return Verdict{LevelFull, "out of memory, not fragmentation",
			fmt.Sprintf("%d out-of-memory failure%s with health %.2f: the memory ran out; what was free was not scattered", s.OOMs, plural(s.OOMs), s.Health)}
	case s.Health >= HealthAct:
		return Verdict{LevelHealthy, "healthy", at}
	case share < StakeMinor:
		return Verdict{LevelMinor, "minor: little memory at stake", at + failed}
	case s.Health < HealthWorsening:
		return Verdict{LevelAct, "fragmented: act", at + failed}
	}
	return Verdict{LevelWatch, "fragmenting: act soon", at + failed}
}

func percent(x float64) string {
	switch {
	case x == 0:
		return "0%"
	case x < 0.001:
		return "<0.1%"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
