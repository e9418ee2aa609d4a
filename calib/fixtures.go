// The benchmark runs the fidelity page and the joint fit replay, as
// trimmed copies in calib/testdata/fidelity (its README.md says what was
// kept), so that both run without the shared checkout.

package calib

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FidelityFixtures maps the local copies of the figures replayed here to
// their trimmed copies in calib/testdata/fidelity.
var FidelityFixtures = map[string]string{
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json":  "surajssd-llama-3.3-70b-tp8-sharegpt-qps-01.lens.json",
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_16.json":  "surajssd-llama-3.3-70b-tp8-sharegpt-qps-16.lens.json",
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json": "surajssd-llama-3.3-70b-tp8-sharegpt-qps-inf.lens.json",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_3_3_70b_online_output.jsonl":                                                                  "datacrunch-llama-3.3-70b-online.jsonl",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_3_3_70b_offline_output.jsonl":                                                                 "datacrunch-llama-3.3-70b-offline.jsonl",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_405b_online_output.jsonl":                                                                     "datacrunch-llama-3.1-405b-online.jsonl",
}

// OpenFixture returns an opener (FidelityOptions.Open) of the figures'
// local copies for calib's directory dir: a copy kept in calib itself
// ("calib/testdata/bench/NAME") from dir/testdata/bench, one of
// FidelityFixtures from dir/testdata/fidelity. Any other is an error
// wrapping fs.ErrNotExist.
func OpenFixture(dir string) func(localCopy string) (io.ReadCloser, error) {
	return func(localCopy string) (io.ReadCloser, error) {
		if name, ok := strings.CutPrefix(localCopy, "calib/testdata/bench/"); ok && name != "" && !strings.ContainsAny(name, `/\`) {
			return os.Open(filepath.Join(dir, "testdata", "bench", name))
		}
		name, ok := FidelityFixtures[localCopy]
		if !ok {
			return nil, fmt.Errorf("%s: no fixture in %s: %w", localCopy, filepath.Join(dir, "testdata", "fidelity"), fs.ErrNotExist)
		}
		return os.Open(filepath.Join(dir, "testdata", "fidelity", name))
	}
}
