package defrag

import (
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/model"
)

// Report is the document `gpufrag defrag --json` prints (docs/json.md): a
// plan, what it would cost on a GPU, and the metrics before and after.
type Report struct {
	File            string          `json:"file"`
	Source          string          `json:"source"` // "snapshot" or "layout"
	Device          int             `json:"device"`
	Allocator       string          `json:"allocator"`
	GPU             string          `json:"gpu"`
	Goal            string          `json:"goal"`
	Reached         bool            `json:"reached"`
	Moves           int             `json:"moves"`
	BytesMoved      int64           `json:"bytes_moved"`
	LowerBoundBytes int64           `json:"lower_bound_bytes"`
	FreedBytes      int64           `json:"freed_bytes"`
	UnmapPages      int64           `json:"unmap_pages"`
	UnmapBytes      int64           `json:"unmap_bytes"`
	PauseS          float64         `json:"pause_s"`
	CostModel       ReportCostModel `json:"cost_model"`
	Before          frag.Metrics    `json:"before"`
	After           frag.Metrics    `json:"after"`
	Notes           []string        `json:"notes"`
	MoveList        []ReportMove    `json:"move_list"`
}

// ReportCostModel is the cost model a Report priced its pause with, in
// seconds and bytes per second.
type ReportCostModel struct {
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	Efficiency         float64 `json:"efficiency"`
	LaunchS            float64 `json:"launch_s"`
	PageS              float64 `json:"page_s"`
}

// ReportMove is one move of a Report's move list.
type ReportMove struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	Size int64  `json:"size"`
}

// NewReport describes plan p of the layout in file (source "snapshot", with
// its device, or "layout") priced on gpu with cm, listing at most maxMoves
// moves (-1: all). Notes and the move list are never null in JSON.
func NewReport(file, source string, device int, gpu model.GPU, cm CostModel, p *Plan, maxMoves int) *Report {
	r := &Report{
		File: file, Source: source, Device: device, Allocator: p.Allocator, GPU: gpu.Name, Goal: p.Goal.String(),
		Reached: p.Reached, Moves: len(p.Moves), BytesMoved: p.BytesMoved, LowerBoundBytes: p.LowerBound,
		FreedBytes: p.FreedBytes, UnmapPages: p.UnmapPages, UnmapBytes: p.UnmapBytes,
		PauseS: float64(Cost(*p, gpu, cm)) / 1e9,
		CostModel: ReportCostModel{BandwidthBytesPerS: gpu.MemBandwidth, Efficiency: cm.Efficiency,
			LaunchS: float64(cm.LaunchNs) / 1e9, PageS: float64(cm.PageNs) / 1e9},
		Before: p.Before, After: p.After, Notes: p.Notes, MoveList: []ReportMove{},
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	if source != "snapshot" {
		r.Device = 0
	}
	for i, m := range p.Moves {
		if maxMoves >= 0 && i >= maxMoves {
			break
		}
		r.MoveList = append(r.MoveList, ReportMove{From: m.From, To: m.To, Size: m.Size})
	}
	return r
}
