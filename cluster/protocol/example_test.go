package protocol_test

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/cluster/lists"
	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// The FGD protocol on a toy cluster: two 4-GPU nodes, pods of half a GPU,
// one GPU and two GPUs, for seeds 1 to 3.
func ExampleExperiment() {
	nodes, _ := lists.ReadNodesCSV(strings.NewReader(`sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,4,G2
n1,32000,131072,4,G2
`), "nodes.csv")
	pods, _ := lists.ReadPodsCSV(strings.NewReader(`name,cpu_milli,memory_mib,num_gpu,gpu_milli
half,2000,4096,1,500
one,4000,8192,1,1000
two,8000,16384,2,1000
`), "pods.csv")
	for _, policy := range []string{"random", "fgd"} {
		var runs []*protocol.Run
		for seed := uint64(1); seed <= 3; seed++ {
			r, err := protocol.Experiment(nodes, pods, policy, seed, protocol.Options{})
			if err != nil {
				fmt.Println(err)
				return
			}
			runs = append(runs, r)
		}
		s := protocol.Aggregate(runs)
		// Each pod is 6% or more of this cluster: take the last percent
		// with samples from every seed.
		last := 0
		for x, p := range s.Curve {
			if p.Seeds == len(runs) {
				last = x
			}
		}
		p := s.Curve[last]
		fmt.Printf("%s: %.1f%% of GPUs allocated at %d%% arrived demand, %.1f pods failed\n",
			s.Policy, 100*p.AllocRatio.Mean, last, s.Failed.Mean)
	}
	// Output:
	// random: 43.8% of GPUs allocated at 45% arrived demand, 1.7 pods failed
	// fgd: 43.8% of GPUs allocated at 45% arrived demand, 1.3 pods failed
}
