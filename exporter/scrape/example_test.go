package scrape_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/gpufrag/gpufrag/exporter/scrape"
)

func ExampleParse() {
	page := `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="chat-8b"} 0.75
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="2048"} 1
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="chat-8b"} 3
`
	insts, err := scrape.Parse(strings.NewReader(page), "example")
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range insts {
		fmt.Printf("%s %s engine=%s: usage %.2f of %d blocks × %d tokens, %v preemptions\n",
			in.Engine, in.Model, in.Labels["engine"], in.Usage, in.Blocks, in.BlockSize, in.Preemptions)
	}
	// Output:
	// vllm chat-8b engine=0: usage 0.75 of 2048 blocks × 16 tokens, 3 preemptions
}
