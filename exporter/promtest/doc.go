// Package promtest holds tests that check gpufrag's monitoring deliverables
// against real Prometheus tooling and against the exporter's metric names:
//
//   - deploy/prometheus: promtool check rules / test rules / check config,
//     and every metric and label an alert uses is one the exporter defines;
//   - deploy/grafana/gpufrag.json: the fields Grafana needs, the panels
//     operators asked for, and every metric a panel queries is defined;
//   - deploy/kubernetes: the manifests decode strictly into Kubernetes types;
//   - an integration test that starts a real prometheus binary, scrapes an
//     exporter.Collector served over HTTP, and reads the values and a
//     pending alert back through the HTTP API.
//
// Tests that need promtool or prometheus skip with a message when the
// binary is not on PATH (Debian and Ubuntu: apt-get install prometheus).
// The package has no API; this file only carries the documentation.
package promtest
