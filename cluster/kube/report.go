package kube

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// maxNodeName is the widest node name the text's table prints whole; a
// longer one keeps its end (human.ClipName), as diff's outlier table does.
// Kubernetes allows names of 253 characters.
const maxNodeName = 40

// maxModelName is the widest GPU model the table prints whole on a
// terminal (WriteTextWidth): the labels NVIDIA's GPU feature discovery sets
// ("NVIDIA-A100-SXM4-80GB", "NVIDIA-GeForce-RTX-4090") print whole, a longer
// one keeps its end. A pipe or a file, and a terminal wide enough for the
// table, get the model whole.
const maxModelName = 24

// WriteText prints the report for people (the text of gpufrag cluster
// inspect): the totals, a table of the GPU nodes with idle GPUs (every GPU
// node with all), the node counts, the fragmentation, and the pending pods
// that fit nowhere with the reason; from names the cluster. Node, pod and
// model names (and the names in a pending pod's reason) come from the
// cluster, so every one goes through untrusted.Printable (the table's cells do).
func (r *Report) WriteText(w io.Writer, from string, all bool) error {
	return r.WriteTextWidth(w, from, all, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): the table stacks where it is wider
// (human.Table's Width), its GPU models then clipped to maxModelName as its
// node names are to maxNodeName, and a sentence longer than width wraps at its
// spaces, its further lines indented (human.WrapLong).
func (r *Report) WriteTextWidth(w io.Writer, from string, all bool, width int) error {
	var b strings.Builder
	sb := &b
	wrap := func(format string, args ...any) { sb.WriteString(human.WrapLong(fmt.Sprintf(format, args...), width)) }
	wrap("%s: %d nodes, %d with GPUs, %d GPUs; %.2f GPUs requested (%.1f%%).\n\n", untrusted.Printable(from), r.Nodes, r.GPUNodes, r.GPUs,
		float64(r.RequestedMilli)/cluster.MilliGPU, 100*float64(r.RequestedMilli)/float64(max(r.GPUs*cluster.MilliGPU, 1)))
	t := human.Table{Head: []string{"node", "model", "GPUs", "requested", "whole free", "free CPU", "pods", "frag", "note"}, Width: width}
	for _, n := range r.PerNode {
		idle := int64(n.GPUs)*cluster.MilliGPU - n.RequestedMilli
		if !all && idle == 0 {
			continue
		}
		note := ""
		if n.Stranded {
			note = "stranded"
		}
		if n.Cordoned {
			note = strings.TrimSpace(note + " cordoned")
		}
		t.Rows = append(t.Rows, []string{human.ClipName(untrusted.Printable(n.Name), maxNodeName), n.Model, fmt.Sprint(n.GPUs), fmt.Sprintf("%.2f", float64(n.RequestedMilli)/cluster.MilliGPU),
			fmt.Sprint(n.WholeFreeGPUs), fmt.Sprintf("%.1f", float64(n.FreeCPUMilli)/1000), fmt.Sprint(n.Pods),
			fmt.Sprintf("%.2f", n.FragMilli/cluster.MilliGPU), note})
	}
	if width > 0 && len(t.Rows) > 0 {
		// A table wider than the terminal clips its models.
		wide := t
		wide.Width = 0
		var wb strings.Builder
		wide.Write(&wb)
		if human.Widest(wb.String()) > width {
			for _, row := range t.Rows {
				row[1] = human.ClipName(untrusted.Printable(row[1]), maxModelName)
			}
		}
	}
	if len(t.Rows) > 0 {
		t.Write(sb)
		sb.WriteString("\n")
	}
	wrap("whole-free GPU nodes: %d; partly used: %d; stranded (idle GPUs no task type can use): %d\n",
		r.WholeFreeNodes, r.PartlyUsedNodes, r.StrandedNodes)
	wrap("FGD fragmentation for the cluster's own pod mix (%d task types): %.2f GPUs, %.1f%% of all GPUs, %.1f%% of idle GPUs\n",
		r.TaskTypes, r.FragMilli/cluster.MilliGPU, 100*r.FragTotal, 100*r.FragRate)
	stuck := 0
	for _, p := range r.Pending {
		if p.Fits == 0 {
			stuck++
		}
	}
	fmt.Fprintf(sb, "pending pods: %d, of which %d fit nowhere\n", len(r.Pending), stuck)
	for _, p := range r.Pending {
		if p.Fits == 0 {
			wrap("  %s (%s): %s\n", untrusted.Printable(p.Pod), untrusted.Printable(p.Shape), untrusted.Printable(p.Reason))
		}
	}
	for _, u := range r.Unplaceable {
		wrap("not modelled: %s\n", untrusted.Printable(u))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
