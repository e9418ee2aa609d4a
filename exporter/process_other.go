//go:build !linux

package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewProcessCollector returns client_golang's process collector
// (collectors.NewProcessCollector with no options): the cheaper path of
// process_linux.go reads Linux's /proc.
func NewProcessCollector() prometheus.Collector {
	return collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
}

// newProcessReader returns nil: runtimeFamilies reads Linux's /proc, so
// elsewhere RuntimeCollectors are registered instead.
func newProcessReader() processReader { return nil }
