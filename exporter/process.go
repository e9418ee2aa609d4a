// The process collector of the daemon's registry: client_golang's families,
// read on a cheaper path. See doc.go for the overview.

package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// RuntimeCollectors are the collectors whose families the daemon serves
// beside its own metrics: client_golang's Go collector (default options)
// and NewProcessCollector. Collector.GathererWithRuntime serves the same
// families without them where it can (runtime_families.go), and registers
// them otherwise.
func RuntimeCollectors() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), NewProcessCollector()}
}

// The families of client_golang's process collector
// (collectors.NewProcessCollector with no namespace), with its names and
// help texts: Prometheus' dashboards and rules read them.
var (
	procCPUDesc = procDesc("process_cpu_seconds_total",
		"Total user and system CPU time spent in seconds.", prometheus.CounterValue)
	procOpenFDsDesc = procDesc("process_open_fds",
		"Number of open file descriptors.", prometheus.GaugeValue)
	procMaxFDsDesc = procDesc("process_max_fds",
		"Maximum number of open file descriptors.", prometheus.GaugeValue)
	procVsizeDesc = procDesc("process_virtual_memory_bytes",
		"Virtual memory size in bytes.", prometheus.GaugeValue)
	procMaxVsizeDesc = procDesc("process_virtual_memory_max_bytes",
		"Maximum amount of virtual memory available in bytes.", prometheus.GaugeValue)
	procRSSDesc = procDesc("process_resident_memory_bytes",
		"Resident memory size in bytes.", prometheus.GaugeValue)
	procStartDesc = procDesc("process_start_time_seconds",
		"Start time of the process since unix epoch in seconds.", prometheus.GaugeValue)
	procInDesc = procDesc("process_network_receive_bytes_total",
		"Number of bytes received by the process over the network.", prometheus.CounterValue)
	procOutDesc = procDesc("process_network_transmit_bytes_total",
		"Number of bytes sent by the process over the network.", prometheus.CounterValue)
)

// procFam is what a process family's Desc holds (Desc has no getters):
// runtimeFamilies makes the families from it.
type procFam struct {
	name, help string
	typ        prometheus.ValueType
}

// procFams are the process collector's families by Desc.
var procFams = map[*prometheus.Desc]procFam{}

func procDesc(name, help string, t prometheus.ValueType) *prometheus.Desc {
	d := prometheus.NewDesc(name, help, nil, nil)
	procFams[d] = procFam{name: name, help: help, typ: t}
	return d
}

// procDescs are the process collector's Descs in the order client_golang
// describes them.
var procDescs = []*prometheus.Desc{
	procCPUDesc, procOpenFDsDesc, procMaxFDsDesc, procVsizeDesc, procMaxVsizeDesc,
	procRSSDesc, procStartDesc, procInDesc, procOutDesc,
}
