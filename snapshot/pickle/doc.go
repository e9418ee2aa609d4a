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
//   - the whole input is capped (Options.MaxInputBytes), and Decode checks
//     the first two bytes (CheckStart), then decodes the first PrefixLen
//     (16 KiB: CheckPrefix), before it reads the rest, so random bytes
//     after a PROTO fail within a few opcodes, not after 1 GiB of reading;
//   - a PROTO of a protocol other than 2 to 5 is refused naming the
//     protocol and its offset;
//   - every declared length (strings, bytes, big integers, FRAME) is checked
//     against the bytes that remain before any buffer is made, so a 12-byte
//     file that declares a 1 TiB string fails at once; a bytes object can
//     be capped further (Options.MaxBytesObject: a reader of a format
//     without them sets it, so that a random length cannot make it read
//     on);
//   - nesting depth of the decoded values (Options.MaxDepth), open MARKs
//     (same limit), memo entries (Options.MaxMemo, by default one per 2
//     input bytes) and an estimate of the bytes the decoded values occupy
//     (Options.MaxDecodedBytes) are capped.
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
