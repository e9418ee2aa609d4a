// Requests, traces and trace formats. See package workload for the overview.

package workload

import (
	"fmt"
	"strings"
)

// Request is one inference request of a trace.
type Request struct {
	// ID names the request: the file's id where the format has one (our
	// JSONL), otherwise "r<line>" for read requests and "s<session>.t<turn>"
	// for generated sessions. Unique within a trace.
	ID string
	// Arrival is the arrival time in nanoseconds of virtual time since the
	// start of the trace (never negative). Zero for every request of an
	// untimed trace until AssignArrivals gives them times.
	Arrival int64
	// PromptTokens is the prompt (context) length, 1..MaxTokens.
	PromptTokens int
	// OutputTokens is the number of generated tokens, 0..MaxTokens. Zero is
	// a request that only prefills (FineServe and BurstGPT record failed or
	// empty responses this way): the engine computes its prompt and reports
	// no TTFT for it, as it has no first token (vLLM itself never serves
	// one: its max_tokens is at least 1).
	OutputTokens int
	// Session groups the turns of one conversation; empty when unknown.
	Session string
	// Turn is the 1-based turn within Session; 0 when Session is empty.
	Turn int
	// PrefixHashes holds one id per 512-token block of the prompt (Mooncake
	// hash_ids); equal ids at equal positions mean a shareable prefix block.
	// Nil when the format carries no prefix information.
	PrefixHashes []uint64
	// N is the number of parallel samples or the beam width, 1..MaxN.
	N int
	// Line is the 1-based line of the file the request came from (a CSV
	// header is line 1); 0 for generated requests. A vllm-bench file holds
	// a run's requests on one line, so there Line is the request's 1-based
	// position in the run's per-request arrays.
	Line int
}

// Trace is a whole workload: requests in arrival order plus what reading
// them left behind.
type Trace struct {
	Name   string // the name given to Read (a file name), for messages
	Format Format // the format read (never Auto)
	// Requests is sorted by Arrival, ties by Line (stable).
	Requests []Request
	// Timed is true when the arrivals come from the file; false for
	// length-only traces (vidur, untimed FineServe or JSONL), whose arrivals
	// are all 0 until AssignArrivals.
	Timed bool
	// Skipped counts bad rows dropped under ReadOptions.SkipBadRows.
	Skipped int
	// Untimed counts FineServe rows without a timestamp that were dropped
	// because the file also has timed rows (see the package doc).
	Untimed int
	// Warnings holds the first MaxWarnings messages about skipped rows and
	// other dropped data; Skipped and Untimed keep the full counts. The
	// message about untimed rows, when there is one, comes first. Summary
	// puts all of it in one line.
	Warnings []string
	// MaxConcurrency caps the requests in flight, as the client that
	// recorded the trace capped them (a vllm-bench run's max_concurrency):
	// requests arrive at their Arrival and wait for one of that many
	// slots. 0 is no cap, and every other format's.
	MaxConcurrency int
	// DrawnFrom is the seed a vllm-bench trace's arrivals were drawn from
	// (the run's Seed, or ReadOptions.ArrivalSeed) when the run saved no
	// send times and its client spaced its requests by random gaps; nil
	// when the arrivals are the run's own (saved, all at once, or evenly
	// spaced) and for every other format.
	DrawnFrom *uint64
	// Bench is the benchmark run a vllm-bench trace was made from (its
	// setup, measured metrics and per-request arrays, to hold a simulation
	// against); nil for every other format.
	Bench *BenchResult
	// ClientLengths says a vllm-bench trace's lengths are the ones its
	// client sent: read from the run's per-request arrays, or drawn again
	// as the client drew them and adding up to the totals the run prints
	// (SGLang's random dataset); false when they are only drawn from the
	// client's distribution.
	ClientLengths bool
	// LeftOut counts a vllm-bench run's requests that MaxRows left out:
	// the replay is then of part of the run, whose own figures are not its.
	LeftOut int

	firstSkip *Error   // the first row skipped under SkipBadRows
	untimed   string   // the message about untimed rows dropped, without the name
	stoppedAt int      // the line at which MaxRows stopped reading, or 0
	maxRows   int      // the MaxRows that stopped it
	notes     []string // a vllm-bench run's warnings, without the name
}

// Summary is one line about every row Read left out of t, for a command to
// print as a warning; "" when it left nothing out. It counts the bad rows
// skipped under SkipBadRows (naming the first and what was wrong), the
// FineServe rows dropped for lack of a timestamp, and a stop at MaxRows, so
// no row is lost without a word; for a vllm-bench trace it adds the run's
// warnings (known quirks, lengths drawn rather than read). For example
//
//	fs.csv: skipped 2 bad rows (the first: line 5: field "input_length": missing (a positive integer)); dropped 3175 of 15083 rows, which have no timestamp (the first on line 11910), because the file has timed rows
func (t *Trace) Summary() string {
	var parts []string
	if t.Skipped > 0 {
		p := fmt.Sprintf("skipped %d bad row%s", t.Skipped, plural(t.Skipped))
		if e := t.firstSkip; e != nil {
			first := *e
			first.File = ""
			p += " (the first: " + first.Error() + ")"
		}
		parts = append(parts, p)
	}
	if t.untimed != "" {
		parts = append(parts, t.untimed)
	}
	if t.stoppedAt > 0 {
		parts = append(parts, fmt.Sprintf("stopped after %d requests (MaxRows): lines from %d on were not read", t.maxRows, t.stoppedAt))
	}
	parts = append(parts, t.notes...)
	if len(parts) == 0 {
		return ""
	}
	return displayName(t.Name) + ": " + strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// MaxWarnings bounds Trace.Warnings, so a file of a million bad rows does
// not keep a million messages; ten is enough to see what kind of problem it
// is, and the counts say how many there were.
const MaxWarnings = 10

func (t *Trace) warn(msg string) {
	if len(t.Warnings) < MaxWarnings {
		t.Warnings = append(t.Warnings, msg)
	}
}

// Format is a trace file format.
type Format int

// The formats Read understands. The zero value, Auto, asks Read to detect
// the format from the file's first line.
const (
	Auto      Format = iota
	Azure            // Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens)
	Mooncake         // Mooncake JSONL (timestamp, input_length, output_length, hash_ids)
	Vidur            // Sarathi-Serve/Vidur length CSV (num_prefill_tokens,num_decode_tokens,...)
	FineServe        // FineServe replay CSV (input_length,output_length,latency,timestamp,...)
	BurstGPT         // BurstGPT CSV (Timestamp,Model,Request tokens,Response tokens,...)
	JSONL            // this package's own JSONL (see the package doc)
	VLLMBench        // vLLM benchmark_serving / vllm bench serve --save-result JSON, SGLang bench_serving JSONL (see ReadBench)
)

var formatNames = [...]string{Auto: "auto", Azure: "azure", Mooncake: "mooncake", Vidur: "vidur",
	FineServe: "fineserve", BurstGPT: "burstgpt", JSONL: "jsonl", VLLMBench: "vllm-bench"}

// String returns the name ParseFormat accepts.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Formats lists the concrete formats in the order of the constants.
func Formats() []Format {
	return []Format{Azure, Mooncake, Vidur, FineServe, BurstGPT, JSONL, VLLMBench}
}

// ParseFormat returns the format with the given name (case-insensitive):
// azure, mooncake, vidur, fineserve, burstgpt, jsonl or vllm-bench; "" and
// "auto" give Auto. Other names give an error wrapping ErrFormat.
func ParseFormat(s string) (Format, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return Auto, nil
	}
	for f, n := range formatNames {
		if n == s {
			return Format(f), nil
		}
	}
	return Auto, fmt.Errorf("%w %q (want azure, mooncake, vidur, fineserve, burstgpt, jsonl or vllm-bench)", ErrFormat, s)
}

// FormatNames are the names of Formats, in order (for hints).
func FormatNames() []string {
	out := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		out = append(out, f.String())
	}
	return out
}
