package lists

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// WritePodsCSV writes pods as an openb pod list with the first six
// columns (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec),
// the form ReadPodsCSV reads back to the same pods less their times and
// jobs. A pod that Pod.Check refuses, or whose name or GPU models would
// need CSV quoting (a comma, a quote, a line break) or has white space
// around it, which the reader trims, is an error, and
// nothing after it is written.
func WritePodsCSV(w io.Writer, pods []cluster.Pod) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(podColumns[:6], ",") + "\n")
	var b []byte
	for i := range pods {
		p := &pods[i]
		if f, msg := p.Check(); f != "" {
			return fmt.Errorf("%w: pod %d (%s): field %q %s", cluster.ErrBadInput, i, untrusted.Quote(p.Name), f, msg)
		}
		if strings.ContainsAny(p.Name, ",\"\r\n") || strings.TrimSpace(p.Name) != p.Name {
			return fmt.Errorf("%w: pod %d: name %s needs CSV quoting or trimming, which the openb form does not use", cluster.ErrBadInput, i, untrusted.Quote(p.Name))
		}
		for _, m := range p.GPUSpec {
			if strings.ContainsAny(m, ",\"\r\n") {
				return fmt.Errorf("%w: pod %d (%s): GPU model %s needs CSV quoting", cluster.ErrBadInput, i, untrusted.Quote(p.Name), untrusted.Quote(m))
			}
		}
		b = append(b[:0], p.Name...)
		for _, v := range []int64{p.MilliCPU, p.MemoryMiB, int64(p.NumGPU), p.MilliGPU} {
			b = strconv.AppendInt(append(b, ','), v, 10)
		}
		b = append(append(b, ','), strings.Join(p.GPUSpec, "|")...)
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
