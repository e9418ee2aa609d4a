package strategy

import (
	"testing"
)

// The vLLM paper's Orca baselines on a buddy allocator over token slots
// (Kwon et al., SOSP'23, §6.1; docs/scenarios/vllm-paper-fig13a.yaml): the
// reservation each scheme makes, the buddy's rounding of it to 2^k tokens,
// and where Usage puts that rounding. The paper's Fig. 2 counts the
// rounding in "external frag. & others" and over-provisioning alone as
// "internal frag."; Usage counts both as internal (Breakdown's convention),
// so the paper's shares are recovered as the Usage doc says: for :oracle,
// whose reservation is exactly prompt + output, internal is the rounding
// alone.
func TestOrcaOnBuddy(t *testing.T) {
	type seq struct{ prompt, output, reserved, block int } // tokens
	for _, c := range []struct {
		spec string
		seqs []seq
	}{
		{"contiguous-max:oracle", []seq{
			{100, 200, 300, 512},   // rounded up by 212 slots
			{7, 25, 32, 32},        // a power of two already: no rounding
			{1024, 30, 1054, 2048}, // §6.5: a 1,024-token prompt takes a 2,048-slot block
		}},
		{"contiguous-max:pow2", []seq{
			{40, 25, 72, 128},      // §6.1: "if the true output length is 25, it reserves 32 positions for outputs"
			{7, 25, 39, 64},        // 7 over-provisioned slots, then 25 of rounding
			{1024, 30, 1056, 2048}, // §6.5 again
		}},
		{"contiguous-max", []seq{
			{100, 200, 2048, 2048}, // §6.1: "up to the maximum sequence length of the model, i.e., 2048 tokens"
		}},
	} {
		// One token's KV is the buddy's unit, as "min:819200" is for
		// OPT-13B: blocks are 2^k tokens.
		env := newEnv(t, "buddy:64MiB,min:8KiB", 1<<30, 0)
		env.MaxContext = 2048
		s, err := Parse(c.spec, env)
		if err != nil {
			t.Fatal(err)
		}
		rs := s.(Reserving)
		var overProv, rounding, held int64
		for i, q := range c.seqs {
			r := Request{Prompt: q.prompt, TrueOutput: q.output, N: 1}
			if got, whole := rs.ReservedTokens(r); got != q.reserved || !whole {
				t.Errorf("%s: prompt %d, output %d: reserves %d tokens (whole %v), want %d", c.spec, q.prompt, q.output, got, whole, q.reserved)
			}
			if err := s.Admit(SeqID(i), r); err != nil {
				t.Fatalf("%s: admit %+v: %v", c.spec, q, err)
			}
			overProv += int64(q.reserved-q.prompt-q.output) * tinyBPT
			rounding += int64(q.block-q.reserved) * tinyBPT
			held += int64(q.block) * tinyBPT
		}
		if err := checkUsage(s, env.Alloc, 0); err != nil {
			t.Errorf("%s: %v", c.spec, err)
		}
		u := s.Usage()
		if u.Held() != held {
			t.Errorf("%s: held %d bytes, want %d: the buddy's blocks of 2^k tokens", c.spec, u.Held(), held)
		}
		if u.Internal != overProv+rounding {
			t.Errorf("%s: internal %d bytes, want over-provisioning %d + buddy rounding %d", c.spec, u.Internal, overProv, rounding)
		}
		if c.spec == "contiguous-max:oracle" && u.Internal != rounding {
			t.Errorf("%s: internal %d bytes, want the buddy's rounding alone (%d): Fig. 2's external share is internal + external", c.spec, u.Internal, rounding)
		}
	}
}
