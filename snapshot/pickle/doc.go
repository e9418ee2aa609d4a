// Package pickle is a small, bounded decoder for the subset of Python's
// pickle format (protocols 2 to 5) that PyTorch memory snapshots use: plain
// dicts, lists, tuples, strings, bytes, integers, floats, booleans and None.
//
// # Safety
//
// Nothing in the input is ever executed or looked up. Every opcode that would
// name a Python object or call one (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST,
// OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4) is refused with an
// error that names the opcode and its byte offset, as is every opcode this
// package does not know. Input is bounded before anything is allocated:
//
//   - the input is read in one pass, a piece at a time, never whole: Decode
//     checks the first two bytes (CheckStart), then decodes the first
//     PrefixLen (16 KiB: CheckPrefix), before it reads the rest, so random
//     bytes after a PROTO fail within a few opcodes; the input's size is
//     not capped (Options.MaxInputBytes can), what decoding builds and
//     holds is;
//   - a PROTO of a protocol other than 2 to 5 is refused naming the
//     protocol and its offset;
//   - every declared length (strings, bytes, big integers, FRAME) is checked
//     against the bytes that remain before any buffer is made, so a 12-byte
//     file that declares a 1 TiB string fails at once; a bytes object can
//     be capped further (Options.MaxBytesObject: a reader of a format
//     without them sets it, so that a random length cannot make it read
//     on);
//   - nesting depth of the decoded values (Options.MaxDepth), open MARKs
//     (same limit), memo entries (one per 2 input bytes, as Python writes
//     at most; Options.MaxMemo held at once) and an estimate of the bytes
//     the decoded values occupy (Options.MaxDecodedBytes, by default 48
//     per input byte) are capped.
//
// # Streaming
//
// With Options.Stream, the items of the lists under one key of the
// top-level dict (a snapshot's device_traces) go to a callback batch by
// batch as they are appended, and the decoder forgets each item dict (and
// the lists memoized while it was built) from its memo: a later memo
// reference to one yields a Forgotten value, and a chunk of the memo whose
// entries are all forgotten is freed. A snapshot's trace is thus decoded
// in memory that follows its distinct strings, frames, segments and
// blocks, not its length.
//
// Malformed input gives an *Error, never a panic.
//
// # Shared values
//
// A memo reference (BINGET, LONG_BINGET) shares the value it names: the
// decoded result is a directed acyclic graph, and a reference costs one
// slot of the container that holds it, which is all it costs in memory. A
// caller that walks the result as a tree and builds something per visit
// (a typed copy, a JSON document) can therefore build far more than
// MaxDecodedBytes: a 4 MB file of references to one list of 1000 dicts
// names billions of dicts. Such a caller must bound what it builds by its
// own budget, or share what it builds for a shared value; package snapshot
// does both (snapshot.Options.MaxBuiltBytes).
//
// # Values
//
// Decoded values are nil, bool, int64 (uint64 for integers in
// [2^63, 2^64)), float64, string, []byte, []any (a list), Tuple and *Dict
// (insertion order kept, lookup by string key).
//
// Strings are valid UTF-8. Python pickles a str with the surrogatepass
// handler, so a lone surrogate (U+D800 to U+DFFF; os.fsdecode makes one of
// each byte of a file name that is not UTF-8) arrives as ED A0 80 to
// ED BF BF: it decodes to the six characters \udcff, as Python's
// backslashreplace handler writes it. Other invalid UTF-8 is refused.
//
// Two departures from Python, both irrelevant to snapshots:
//   - a container may not be changed after it was put into another one, and
//     may not contain itself, so decoded values are always acyclic trees
//     (shared sub-values are allowed); pickles of recursive structures are
//     refused;
//   - dict keys are compared by Go type and value: 1, 1.0 and True are three
//     keys, not one; tuple and bytes keys are never merged.
package pickle
