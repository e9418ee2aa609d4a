package cli

import (
	"testing"

	"github.com/gpufrag/gpufrag/sim/scenario"
)

func TestSimulateRunTitle(t *testing.T) {
	for _, tc := range []struct {
		o    scenario.Report
		want string
	}{
		{scenario.Report{Scenario: "long-context-chat", Model: "llama-3.1-8b", GPU: "h100-80g", TP: 1, Source: "43 generated chat turns", Duration: 600},
			"long-context-chat: llama-3.1-8b on h100-80g, TP 1, 10m00s simulated"},
		// applyRun's title of a --trace run names model and GPU already.
		{scenario.Report{Scenario: "azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2)", Model: "qwen2.5-7b", GPU: "l40s-48g", TP: 2,
			Source: "trace data/azure_conv.csv (azure, 20 requests)"},
			"azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2), to the end of the workload"},
		{scenario.Report{Scenario: "long-context-chat with --gpu a100-40g", Model: "llama-3.1-8b", GPU: "a100-40g", TP: 1, Duration: 180},
			"long-context-chat with --gpu a100-40g: llama-3.1-8b on a100-40g, TP 1, 3m00s simulated"},
	} {
		if got := simulateRunTitle(&tc.o); got != tc.want {
			t.Errorf("simulateRunTitle = %q, want %q", got, tc.want)
		}
	}
}
