// Package workload reads LLM-serving request traces and generates
// synthetic ones: arrival processes, multi-turn sessions, beam widths and
// length bucketing. It is the top of the simulator's data flow: a Trace of
// Requests (arrival, prompt and output tokens, session, prefix blocks, n)
// goes to sim.
//
// Everything is deterministic: no clock, no global random source, no
// goroutines. Time is virtual, int64 nanoseconds since the start of the
// trace. Generators take a *rand.Rand the caller builds with
// rand.New(rand.NewPCG(seed, stream)), so one seed gives one workload.
//
// # Formats
//
// Read takes a Format, or Auto to detect it from the first line (Detect).
// Every format may start with a UTF-8 byte order mark and may end lines in
// LF, CRLF or a lone CR (old Mac files); the last line may lack an ending;
// blank lines are skipped. Lines are numbered from 1, and a CSV header is
// line 1. Input that is not UTF-8 text (a NUL byte, a control character or
// invalid UTF-8 in the first 4 KiB, untrusted.SniffBytes; a compressed file;
// UTF-16) is an ErrNotText error at once, naming the byte and its line; a
// line longer than
// MaxLineBytes (1 MiB) is an error as soon as it crosses the limit, never
// cut short or read to its end; input past MaxInputBytes, more than
// MaxRequests requests or MaxPrefixHashes prefix ids are ErrTooLarge
// errors (MaxRows reads the start of such a file). CSV columns are found
// by name (case-insensitive, spaces trimmed), in any order; columns not
// listed below are ignored; every row must have as many fields as the
// header. Quoted CSV fields are accepted but may not span lines.
//
// azure: the Azure LLM inference traces (Splitwise, 2023; DynamoLLM 2024).
//
//	TIMESTAMP,ContextTokens,GeneratedTokens
//	2023-11-16 18:15:46.6805900,374,44
//
// TIMESTAMP is a datetime with up to 9 fractional digits, naive (taken as
// UTC) or with an offset ("2024-05-10 00:00:00.009930+00:00"), years
// 1970-2100. Arrival is relative to the first row read. ContextTokens is
// the prompt, GeneratedTokens the output.
//
// mooncake: the Mooncake (FAST'25) JSONL traces, one object per line.
//
//	{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, ...]}
//
// timestamp is milliseconds from the start (integer in the real files; a
// decimal is accepted); input_length and output_length are the prompt and
// output; hash_ids, optional, has one id per 512-token block of the prompt
// (the last id covers a partial block) and becomes Request.PrefixHashes.
// The real files satisfy len(hash_ids) == ceil(input_length/512); Read
// does not enforce it, so other Mooncake releases (with smaller blocks)
// still read, but refuses more ids than input_length. Other keys
// are ignored; a repeated known key is an error. Arrival is relative to
// the first row read.
//
// vidur: the length-only CSVs of Sarathi-Serve and Vidur (ShareGPT,
// arXiv-summarization, LMSYS...), with no arrival time: the trace is
// untimed (Timed false, every Arrival 0) until AssignArrivals.
//
//	num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio
//	74,918,992,0.0806100217864923
//
// num_prefill_tokens is the prompt, num_decode_tokens the output;
// num_total_tokens, optional, must equal their sum; pd_ratio is ignored.
//
// fineserve: the FineServe replay CSVs.
//
//	input_length,output_length,latency,timestamp,architecture,scale
//	214,722,0.0015,0.0,Dense,30-100B
//
// input_length and output_length are the prompt and output; timestamp is
// the arrival in microseconds from the start. The upstream README says
// milliseconds, but the full file spans 0 to 2.88e10, which is 8 hours in
// microseconds and 333 days in milliseconds. latency, architecture and
// scale are ignored. The upstream file ends with rows whose timestamp is
// empty: when a file has timed rows, its untimed rows are dropped and
// counted in Trace.Untimed, with a warning (first in Trace.Warnings, and in
// Trace.Summary); when they outnumber the timed rows, that would keep a
// small part of the file as if it were the whole, and it is an ErrField
// error instead. A file of only untimed rows gives an untimed trace.
// Arrival is relative to the first timed row.
//
// burstgpt: the BurstGPT CSVs (KDD'25).
//
//	Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type
//	5,,2.1,ChatGPT,472,18,490,Conversation log
//
// Timestamp is seconds (decimal accepted); Request tokens and Response
// tokens are the prompt and output (a 0 response is a failed request and is
// kept); Total tokens, optional, must equal their sum; Session ID, optional
// (newest releases only), becomes Request.Session, and turns are numbered
// 1, 2, ... in file order within a session. Model, Elapsed time and Log
// Type are ignored. Arrival is relative to the first row read.
//
// jsonl: our own format, one JSON object per line:
//
//	{"id":"a","arrival_s":0.25,"prompt_tokens":1024,"output_tokens":200,"session":"chat-1","turn":1,"n":1,"prefix_hashes":[0,1]}
//
// prompt_tokens and output_tokens are required. arrival_s is seconds from
// the trace start (a non-negative decimal, kept to the nanosecond), given
// on every line or on none (then the trace is untimed); lines may come in
// any order and are sorted by arrival. id, optional, must be unique (the
// default is "r<line>"); session, optional, groups turns; turn, optional
// and only with a session, defaults to the order of appearance within the
// session; n (parallel samples or beam width, 1..MaxN) defaults to 1;
// prefix_hashes is a list of non-negative block ids with the meaning of
// Mooncake's hash_ids. Unknown or repeated keys are errors. WriteJSONL
// writes this format, and what it writes reads back to the same requests.
//
// vllm-bench: benchmark result files (see ReadBench): vLLM's
// benchmark_serving.py or vllm bench serve --save-result JSON, with or
// without --save-detailed, and SGLang's bench_serving JSONL. A file may hold
// several runs (ReadOptions.Run picks one); the trace has the run's
// per-request lengths and its arrivals as the client made them, with
// Trace.MaxConcurrency its cap on requests in flight and Trace.Bench the run
// (see BenchResult.Trace). Auto detects it from a JSON object whose first 4
// KiB hold the keys "backend" and "request_rate". A line may be as long as
// MaxBenchBytes (vLLM writes a run of any size on one line).
//
// # Decisions
//
//   - Token counts are decimal integers: "1.0", "1e3" and quoted numbers
//     are refused. A prompt must be 1..MaxTokens (no real trace has an
//     empty prompt, and a request without one has nothing to prefill); an
//     output may be 0..MaxTokens (FineServe and BurstGPT record failed and
//     prefill-only requests as 0).
//
//   - Timed CSV and Mooncake files must be sorted by time: a row earlier
//     than the row above is an ErrOrder error (the real files are sorted;
//     disorder means a damaged or concatenated file). Our JSONL may be in
//     any order.
//
//   - Arrivals of the CSV and Mooncake formats are relative to the first
//     row read, so every such trace starts at 0; our JSONL keeps arrival_s.
//
//   - Requests is sorted by arrival, ties by line.
//
//   - A bad row stops Read with an *Error naming the file, the line and the
//     field, for example
//
//     azure.csv: line 3: field "ContextTokens": must be a positive integer (got "-5")
//
//     whose kind (ErrSyntax, ErrColumn, ErrField, ErrOrder, ErrFormat, ...) is
//     matched with errors.Is. With ReadOptions.SkipBadRows the row is
//     dropped instead, counted in Trace.Skipped, and the first MaxWarnings
//     messages kept in Trace.Warnings; Trace.Summary says it in one line.
//     Header errors, binary input and the size limits always fail. A trace
//     that ends without a request is an ErrNoRows error: a CSV header
//     without rows, or every row skipped (the error names the first bad
//     row). The CLI exits with status 1 on an error.
//
//   - Values echoed in messages are quoted and cut to their first 64
//     bytes with their length ("999…… (5000000 bytes)"), so a huge field
//     never floods a terminal.
//
//   - Every number has a bound: token counts MaxTokens, N MaxN, ids and
//     sessions MaxIDBytes, times 2^62 ns (146 years; NaN, Inf, negative
//     and 1e308 are refused), prefix ids per row at most the prompt's
//     tokens and MaxPrefixHashes in all.
//
// # Generators
//
// Poisson and Gamma make arrival processes (rate in requests per second,
// Gamma with a coefficient of variation); AssignArrivals gives an untimed
// trace arrivals from one, and Rescale changes a timed trace's mean rate
// while keeping its shape. Sessions generates multi-turn chat whose
// context grows turn by turn (prompt = previous prompt + previous output +
// new user tokens) with Mooncake-style prefix ids. Bucket rounds prompts up
// to a multiple of k tokens; VaryBeam overlays parallel-sample or beam
// widths, since no public trace records n. Bad parameters give errors
// wrapping ErrConfig.
package workload
