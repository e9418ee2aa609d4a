// Results of a run: counters, distributions, the KV breakdown and the time
// series for plots. See doc.go for the overview.

package sim

import (
	"math"
	"slices"
)

// Quantiles summarise a distribution. Values use the nearest-rank method
// on the sorted samples; all are 0 when there were no samples.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Latency is a latency distribution in seconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// P50Band is P50's error band (Band), set by a command that reports
	// one; absent otherwise.
	P50Band *Band `json:"p50_band,omitempty"`
	// P99Band is P99's, where measured p99s judge it (ITL's under the
	// joint model: calib.ITLP99Band); absent otherwise.
	P99Band *Band `json:"p99_band,omitempty"`
}

// Shares is the vLLM paper's breakdown of KV memory (§2.3, Fig. 2) as
// fractions of 1, from the bytes averaged over the run's samples.
// TokenStates + Reservation + Internal + External = 1 whenever KV memory was
// held: they split the memory held for live sequences plus the free memory
// stranded in the allocator's segments. CachedIdle, beside them, is the share
// of the strategy's own footprint (a paged pool) that holds evictable
// prefix-cache blocks.
type Shares struct {
	TokenStates float64 `json:"token_states"`
	Reservation float64 `json:"reservation"`
	Internal    float64 `json:"internal"`
	External    float64 `json:"external"`
	CachedIdle  float64 `json:"cached_idle"`
}

// Event is a marker on the timeline.
type Event struct {
	Time    float64 `json:"t_s"`     // virtual seconds
	Kind    string  `json:"kind"`    // "preempt", "oom", "activation_oom", "reject"
	Request string  `json:"request"` // the request's id
}

// Series is the memory time series, one entry per sample.
type Series struct {
	Time      []float64 `json:"t_s"`
	Reserved  []int64   `json:"reserved_bytes"`
	Allocated []int64   `json:"allocated_bytes"`
	Requested []int64   `json:"requested_bytes"`
	KVHeld    []int64   `json:"kv_held_bytes"`
	Health    []float64 `json:"health"`
	Running   []int     `json:"running"`
	Waiting   []int     `json:"waiting"`
}

// Result is what one engine run reports. JSON field names are the
// `gpufrag simulate --json` contract (docs/json.md).
type Result struct {
	KV        string `json:"kv"`
	Allocator string `json:"allocator"`
	OnOOM     string `json:"on_oom"`

	KVPoolBytes   int64 `json:"kv_pool_bytes"`   // paged pool size; 0 for the others
	KVBudgetBytes int64 `json:"kv_budget_bytes"` // memory left for KV after weights, context and activations

	RequestsTotal      int   `json:"requests_total"` // arrived within the run
	RequestsCompleted  int   `json:"requests_completed"`
	RequestsFailedOOM  int   `json:"requests_failed_oom"`
	RequestsRejected   int   `json:"requests_rejected"`   // could never fit: too long or larger than memory
	RequestsUnfinished int   `json:"requests_unfinished"` // still queued or running when the run stopped
	OutputsTruncated   int   `json:"outputs_truncated"`   // outputs cut to max tokens or the context
	Preemptions        int64 `json:"preemptions"`
	ActivationOOMs     int64 `json:"activation_ooms"` // steps whose activation buffers ran out of memory
	// StoppedEarly says why Config.EarlyStop ended the run before its end
	// ("oom", "activation_oom", "ttft_p99", "tpot_p99", "itl_p99"); empty when it ran
	// to the end. The figures are then those of the run so far.
	StoppedEarly string `json:"stopped_early,omitempty"`

	PeakReservedBytes  int64     `json:"peak_reserved_bytes"`
	PeakAllocatedBytes int64     `json:"peak_allocated_bytes"`
	FragRate           Quantiles `json:"frag_rate"`
	HealthMin          float64   `json:"health_min"`
	KVBreakdown        Shares    `json:"kv_breakdown"`
	KVCopiedBytes      int64     `json:"kv_copied_bytes"`
	// Prompt tokens looked up in the prefix cache at admission and found
	// there (paged with prefix ids), vLLM's prefix_cache_queries and _hits.
	PrefixQueryTokens int64 `json:"prefix_query_tokens"`
	PrefixHitTokens   int64 `json:"prefix_hit_tokens"`

	OutputTokens     int64   `json:"output_tokens"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	// OutputTokensPerSBand is OutputTokensPerS's error band, set by a
	// command that reports one (Band); absent otherwise.
	OutputTokensPerSBand *Band `json:"output_tokens_per_s_band,omitempty"`
	// ArrivalDraws is how the run's figures move over draws of a
	// benchmark run's arrivals, set by simulate --arrival-draws; absent
	// otherwise.
	ArrivalDraws  *ArrivalDraws `json:"arrival_draws,omitempty"`
	BatchSizeMean float64       `json:"batch_size_mean"`
	TTFT          Latency       `json:"ttft_s"`
	TPOT          Latency       `json:"tpot_s"`
	// ITL is the inter-token latency: the p50 and p99 over every gap
	// between a request's successive output tokens, of every request, as
	// a streaming benchmark client measures them (within 0.1%: tally.itl).
	// TPOT is a mean per request; one prefill-laden step lengthens a few
	// gaps, so the ITL's p99 shows stalls TPOT averages away. Each token
	// counts as streamed when its step ends (not in vLLM multi-step's
	// bursts: Config.SchedulerSteps).
	ITL Latency `json:"itl_s"`
	E2E Latency `json:"e2e_s"`
	// NormalizedLatencyMean is the vLLM paper's normalized latency (§6.1,
	// Fig. 12): the mean over completed requests of their end-to-end
	// latency divided by their output tokens, in seconds per token. Not in
	// the JSON document (yet): calib's reproduction of Fig. 12a reads it.
	NormalizedLatencyMean float64 `json:"-"`
	// RequestTimes holds every completed request's figures, in completion
	// order, when Config.RequestTimes is set; not in the JSON document.
	RequestTimes []RequestTime `json:"-"`

	// Defrag is present when a defrag policy other than off was asked for.
	Defrag *DefragResult `json:"defrag,omitempty"`

	Steps            int64   `json:"steps"`
	SimulatedSeconds float64 `json:"simulated_s"`
	// SampleIntervalS is the virtual time between two samples of the memory
	// series (frag_rate and health_min are over those samples): the
	// configured interval, widened on traces without a duration so they
	// keep about 20,000 samples, and doubled each time the series reaches
	// MaxSamples.
	SampleIntervalS float64 `json:"sample_interval_s"`
	// SamplesThinned says the series reached MaxSamples and was thinned
	// (every second sample dropped, the interval doubled), so that memory
	// stays bounded on long runs.
	SamplesThinned bool `json:"samples_thinned,omitempty"`

	// Series and Events feed the plots; they are not part of the JSON.
	Series Series  `json:"-"`
	Events []Event `json:"-"`
}

// nearestRank returns the p-quantile (0 < p ≤ 1) of sorted xs by the
// nearest-rank method: the smallest value with at least p of the samples at
// or below it.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func quantiles(xs []float64) Quantiles {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return Quantiles{}
	}
	return Quantiles{P50: nearestRank(s, 0.5), P99: nearestRank(s, 0.99), Max: s[len(s)-1]}
}

func latency(xs []float64) Latency {
	q := quantiles(xs)
	return Latency{P50: q.P50, P99: q.P99}
}

// LatencyOf is the p50 and p99 of xs (seconds) by the nearest-rank method,
// as Result's latencies are taken: for a subset of Result.RequestTimes.
func LatencyOf(xs []float64) Latency { return latency(xs) }

// RequestTime is one completed request's figures (Config.RequestTimes).
type RequestTime struct {
	// Output is the request's output tokens.
	Output int
	// TTFT and TPOT are in seconds, as Result.TTFT and Result.TPOT count
	// them; HasTTFT and HasTPOT say whether the request has each (no TTFT
	// without an output token, no TPOT with fewer than two).
	TTFT, TPOT       float64
	HasTTFT, HasTPOT bool
}

// share returns a ÷ b, or 0 when b is 0.
func share(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
