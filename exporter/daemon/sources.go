// The readers of exporter/nvml, exporter/scrape and cluster/kube/live as the
// exporter's sources. All are slow (a driver call per GPU, an HTTP round
// trip, the API server), so Run polls them in the background.

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/gpufrag/gpufrag/cluster/kube/live"
	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/exporter/nvml"
	"github.com/gpufrag/gpufrag/exporter/scrape"
)

// nvmlSource returns the GPU source and a close function. Without a driver
// the source still exists and reports itself down on every scrape
// (gpufrag_source_up{source="nvml"} 0) after one warning in the log, so the
// other sources keep being served and the operator sees why GPUs are missing.
// A binary without the NVML reader (-tags nonvml, or not linux/amd64 or
// linux/arm64) is an error instead (nvml.ErrNotBuilt): --nvml can never
// work in it.
func nvmlSource(libraryPath string, logger *slog.Logger, open func(string) (nvml.Reader, error)) (exporter.ContextSource, func(), error) {
	if open == nil {
		open = func(libraryPath string) (nvml.Reader, error) {
			if libraryPath != "" {
				return nvml.Open(nvml.WithLibraryPath(libraryPath))
			}
			return nvml.Open()
		}
	}
	r, err := open(libraryPath)
	if errors.Is(err, nvml.ErrNotBuilt) {
		return nil, nil, err
	}
	if err != nil {
		logger.Warn("GPU source off: NVML could not be opened; the other sources are served", "source", "nvml", "err", err)
		return exporter.NewOffSource("nvml", err), func() {}, nil
	}
	src := exporter.NewGPUSource("nvml", func(ctx context.Context) ([]exporter.GPUDevice, error) {
		devs, err := r.Devices(ctx)
		if err != nil && (len(devs) == 0 || ctx.Err() != nil) {
			return nil, err
		}
		if err != nil {
			// Some GPUs answered: export them; the failed ones are absent
			// from the gpu series and named in the log.
			logger.Debug("some GPUs could not be read", "source", "nvml", "err", err)
		}
		return gpuDevices(devs), nil
	})
	return src, func() { _ = r.Close() }, nil
}

// gpuDevices converts NVML devices to the exporter's kind. Processes whose
// usage NVML does not know are left out rather than exported as 0 bytes.
func gpuDevices(devs []nvml.Device) []exporter.GPUDevice {
	out := make([]exporter.GPUDevice, len(devs))
	for i, d := range devs {
		g := exporter.GPUDevice{Index: d.Index, UUID: d.UUID, Name: d.Name,
			TotalBytes: d.TotalBytes, UsedBytes: d.UsedBytes, FreeBytes: d.FreeBytes}
		for _, p := range d.Processes {
			if p.UsedKnown {
				g.Processes = append(g.Processes, exporter.GPUProcess{PID: p.PID, UsedBytes: p.UsedBytes})
			}
		}
		out[i] = g
	}
	return out
}

// scrapeInstance checks one --scrape value and returns the instance label
// for it (host:port).
func scrapeInstance(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("--scrape %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--scrape %q: want an http(s) URL such as http://127.0.0.1:8000/metrics", raw)
	}
	if err := exporter.CheckLabel("instance", u.Host); err != nil {
		return "", fmt.Errorf("--scrape: the host is the instance label: %w", err)
	}
	return u.Host, nil
}

// scrapeSource returns the source over one inference server's /metrics
// (exporter.NewScrapeSource decides its series), named "scrape:URL" and
// labelled instance = host:port.
func scrapeSource(rawURL, instance string, client *http.Client) exporter.ContextSource {
	return exporter.NewScrapeSource("scrape:"+rawURL, instance, func(ctx context.Context) ([]scrape.Instance, error) {
		return scrape.Fetch(ctx, client, rawURL)
	})
}

// clusterSource returns the source over a live cluster's GPU figures,
// labelled cluster=name. A cluster that cannot be reached at start (no
// kubeconfig, not in a pod) is an error: --cluster asked for it explicitly.
func clusterSource(name, kubeconfig string, connect func(live.Config) (live.Client, error)) (exporter.ContextSource, error) {
	if connect == nil {
		connect = live.Connect
	}
	c, err := connect(live.Config{Kubeconfig: kubeconfig})
	if err != nil {
		return nil, fmt.Errorf("--cluster %s: %w", name, err)
	}
	read := live.Source(c, live.Options{}, 0)
	return exporter.NewClusterSource("cluster", name, func(ctx context.Context) (exporter.ClusterState, error) {
		st, err := read(ctx)
		if err != nil {
			return exporter.ClusterState{}, err
		}
		return exporter.ClusterState(st), nil
	}), nil
}
