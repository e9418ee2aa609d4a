package workload_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gpufrag/gpufrag/workload"
)

// Read a length-only trace, give it Poisson arrivals at 2 requests per
// second, pad prompts to 16-token buckets and give each request 1 or 4 parallel
// samples. Timed stays false: the arrivals are synthetic.
func Example() {
	const in = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\r\n" +
		"74,918,992,0.08\r\n290,905,1195,0.32\r\n3772,54,3826,69.85\r\n"
	tr, err := workload.Read(strings.NewReader(in), "sharegpt.csv", workload.Auto, workload.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rng := rand.New(rand.NewPCG(7, 2))
	p, _ := workload.Poisson(2, rng)
	_ = workload.AssignArrivals(tr, p)
	_ = workload.Bucket(tr, 16)
	_ = workload.VaryBeam(tr, []int{1, 4}, rng)
	fmt.Println(tr.Format, tr.Timed, len(tr.Requests))
	for _, r := range tr.Requests {
		fmt.Printf("%s prompt=%d output=%d n=%d arrival=%dms\n", r.ID, r.PromptTokens, r.OutputTokens, r.N, r.Arrival/1e6)
	}
	// Output:
	// vidur false 3
	// r2 prompt=80 output=918 n=4 arrival=0ms
	// r3 prompt=304 output=905 n=1 arrival=147ms
	// r4 prompt=3776 output=54 n=1 arrival=209ms
}

// A bad row names the file, the line (the header is line 1) and the field.
func ExampleRead_error() {
	const in = "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:46.6800000,100,20\n" +
		"2023-11-16 18:15:47.0000000,-5,20\n"
	_, err := workload.Read(strings.NewReader(in), "azure.csv", workload.Azure, workload.ReadOptions{})
	fmt.Println(err)
	// Output:
	// azure.csv: line 3: field "ContextTokens": must be a positive integer (got "-5")
}
