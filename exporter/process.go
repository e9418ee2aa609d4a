// The process collector of the daemon's registry: client_golang's families,
// read on a cheaper path. See doc.go for the overview.

package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// RuntimeCollectors are the collectors the daemon registers beside its
// own metrics: client_golang's Go collector (default options) and
// NewProcessCollector. The benchmarks of the scrape register the same.
func RuntimeCollectors() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), NewProcessCollector()}
}

// The families of client_golang's process collector
// (collectors.NewProcessCollector with no namespace), with its names and
// help texts: Prometheus' dashboards and rules read them.
var (
	procCPUDesc = prometheus.NewDesc("process_cpu_seconds_total",
		"Total user and system CPU time spent in seconds.", nil, nil)
	procOpenFDsDesc = prometheus.NewDesc("process_open_fds",
		"Number of open file descriptors.", nil, nil)
	procMaxFDsDesc = prometheus.NewDesc("process_max_fds",
		"Maximum number of open file descriptors.", nil, nil)
	procVsizeDesc = prometheus.NewDesc("process_virtual_memory_bytes",
		"Virtual memory size in bytes.", nil, nil)
	procMaxVsizeDesc = prometheus.NewDesc("process_virtual_memory_max_bytes",
		"Maximum amount of virtual memory available in bytes.", nil, nil)
	procRSSDesc = prometheus.NewDesc("process_resident_memory_bytes",
		"Resident memory size in bytes.", nil, nil)
	procStartDesc = prometheus.NewDesc("process_start_time_seconds",
		"Start time of the process since unix epoch in seconds.", nil, nil)
	procInDesc = prometheus.NewDesc("process_network_receive_bytes_total",
		"Number of bytes received by the process over the network.", nil, nil)
	procOutDesc = prometheus.NewDesc("process_network_transmit_bytes_total",
		"Number of bytes sent by the process over the network.", nil, nil)
)

// procDescs are the process collector's Descs in the order client_golang
// describes them.
var procDescs = []*prometheus.Desc{
	procCPUDesc, procOpenFDsDesc, procMaxFDsDesc, procVsizeDesc, procMaxVsizeDesc,
	procRSSDesc, procStartDesc, procInDesc, procOutDesc,
}
