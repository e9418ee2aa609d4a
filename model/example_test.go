package model_test

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

func ExampleModel_KVBytesPerToken() {
	m, _ := model.Load("llama-3-70b")
	for _, tp := range []int{1, 2, 8} {
		fmt.Printf("tp=%d bf16 %s fp8 %s\n", tp,
			mem.FormatBytes(m.KVBytesPerToken(model.BF16, tp)),
			mem.FormatBytes(m.KVBytesPerToken(model.FP8E4M3, tp)))
	}
	ds, _ := model.Load("deepseek-v3")
	fmt.Println("deepseek-v3 tp=8 bf16", ds.KVBytesPerToken(model.BF16, 8))
	// Output:
	// tp=1 bf16 320KiB fp8 160KiB
	// tp=2 bf16 160KiB fp8 80KiB
	// tp=8 bf16 40KiB fp8 20KiB
	// deepseek-v3 tp=8 bf16 70272
}

// How many tokens of KV fit on an H100 next to Llama-3-8B's weights.
func ExampleLookupGPU() {
	g, _ := model.LookupGPU("H100-80G")
	m, _ := model.Load("llama-3-8b")
	free := g.Capacity - m.WeightBytes(1)
	fmt.Printf("%s: %s, weights %s, %d tokens of bf16 KV\n", g.Name,
		mem.FormatBytes(g.Capacity), mem.FormatBytes(m.WeightBytes(1)), free/m.KVBytesPerToken(model.BF16, 1))
	// Output:
	// h100-80g: 79.65GiB, weights 14.96GiB, 529939 tokens of bf16 KV
}

func ExampleReadHFConfig() {
	cfg := `{"model_type": "qwen2", "num_hidden_layers": 28, "num_attention_heads": 28,
		"num_key_value_heads": 4, "hidden_size": 3584, "intermediate_size": 18944,
		"vocab_size": 152064, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}`
	m, err := model.ReadHFConfig(strings.NewReader(cfg), "qwen.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.KVBytesPerToken(model.BF16, 1), m.Params, m.WeightDType)

	_, err = model.ReadHFConfig(strings.NewReader(`{"model_type": "qwen2", "num_hidden_layers": 0}`), "bad.json")
	fmt.Println(err)
	// Output:
	// 57344 7615616512 bf16
	// bad config: bad.json: field "num_hidden_layers": must be positive, got 0
}
