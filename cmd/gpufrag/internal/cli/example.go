package cli

import _ "embed"

// exampleTrace is the trace `gpufrag replay` runs when given none: the first
// 5,000 ops of a Llama-3-8B-like server on one 80 GiB GPU (synth.Example).
// It is generated, not hand-written; regenerate it after changing package
// synth with
//
//	go generate ./cmd/gpufrag/internal/cli
//
// (TestExampleUpToDate fails when it is stale).
//
//go:generate go run ./internal/genexample -o examples/serving.jsonl
//go:embed examples/serving.jsonl
var exampleTrace []byte

// exampleName labels the embedded trace in messages and JSON output.
const exampleName = "(embedded example) serving.jsonl"

// exampleAbout describes the embedded trace for the help and the table.
const exampleAbout = `a Llama-3-8B-like server on one 80GiB GPU: 15GiB of weights, up to
256 requests whose KV caches grow by re-allocation in 256-token chunks, and
activation buffers whose sizes change with the batch at every step`
