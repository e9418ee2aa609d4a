// Parsing of vLLM and SGLang expositions. See doc.go for the overview and the
// metric mapping.

package scrape

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Engine names, the values of Instance.Engine.
const (
	VLLM   = "vllm"
	SGLang = "sglang"
)

// ErrNoMetrics means an exposition parsed but had none of the vLLM or SGLang
// metrics this package maps: usually a URL that is not an inference server, or
// a server that has not finished starting.
var ErrNoMetrics = errors.New("scrape: no vLLM or SGLang KV-cache metrics")

// Instance is the KV-cache state one inference server exports for one model.
// Each Has flag says whether the fields after it were found; fields without
// their flag are zero.
type Instance struct {
	Engine string            `json:"engine"` // VLLM or SGLang
	Model  string            `json:"model"`  // the model_name label
	Labels map[string]string `json:"labels,omitempty"`

	HasUsage bool    `json:"has_usage"`
	Usage    float64 `json:"usage"` // fraction of KV-cache capacity in use, 0..1

	HasBlocks bool `json:"has_blocks"`
	Blocks    int  `json:"blocks"`     // KV pool size in blocks (pages)
	BlockSize int  `json:"block_size"` // tokens per block

	HasPreemptions bool    `json:"has_preemptions"`
	Preemptions    float64 `json:"preemptions"` // counter: requests preempted (retracted)

	HasPrefix     bool    `json:"has_prefix"`
	PrefixQueries float64 `json:"prefix_queries"` // counter, tokens looked up in the prefix cache
	PrefixHits    float64 `json:"prefix_hits"`    // counter, tokens found

	HasPrefixHitRate bool    `json:"has_prefix_hit_rate"`
	PrefixHitRate    float64 `json:"prefix_hit_rate"` // SGLang's 0..1 gauge
}

// field is one input of an Instance, before preferences are applied.
type field int

const (
	fUsage field = iota
	fUsageOld
	fPreempt
	fPreemptOld
	fQueries
	fHits
	fQueriesOld
	fHitsOld
	fSGUsage
	fSGUsed
	fSGTotal
	fSGPageSize
	fSGPages
	fSGRetracted
	fSGHitRate
	numFields
)

// check says which values a field accepts.
type check int

const (
	fraction check = iota // 0..1
	counter               // ≥ 0
	count                 // a whole number ≥ 0
)

type metricSpec struct {
	engine string
	f      field
	check  check
}

// metricsByName are the scalar metrics read; vllm:cache_config_info is read
// separately for its labels.
var metricsByName = map[string]metricSpec{
	"vllm:kv_cache_usage_perc":            {VLLM, fUsage, fraction},
	"vllm:gpu_cache_usage_perc":           {VLLM, fUsageOld, fraction},
	"vllm:num_preemptions_total":          {VLLM, fPreempt, counter},
	"vllm:num_preemptions":                {VLLM, fPreemptOld, counter},
	"vllm:prefix_cache_queries_total":     {VLLM, fQueries, counter},
	"vllm:prefix_cache_hits_total":        {VLLM, fHits, counter},
	"vllm:gpu_prefix_cache_queries_total": {VLLM, fQueriesOld, counter},
	"vllm:gpu_prefix_cache_hits_total":    {VLLM, fHitsOld, counter},
	"sglang:token_usage":                  {SGLang, fSGUsage, fraction},
	"sglang:num_used_tokens":              {SGLang, fSGUsed, count},
	"sglang:max_total_num_tokens":         {SGLang, fSGTotal, count},
	"sglang:page_size":                    {SGLang, fSGPageSize, count},
	"sglang:num_pages":                    {SGLang, fSGPages, count},
	"sglang:num_retracted_requests_total": {SGLang, fSGRetracted, counter},
	"sglang:cache_hit_rate":               {SGLang, fSGHitRate, fraction},
}

const (
	cacheConfigInfo = "vllm:cache_config_info"
	modelLabel      = "model_name"
	engineLabel     = "engine" // vLLM V1's engine (data-parallel rank) index
)

// maxCount bounds token and block counts: above 2^53 a float64 no longer holds
// every integer, and no KV cache is that large.
const maxCount = 1 << 53

// raw collects one instance's inputs.
type raw struct {
	inst Instance
	vals [numFields]float64
	has  [numFields]bool
}

// blockConfig is one vllm:cache_config_info series.
type blockConfig struct {
	blocks, blockSize int
	known             bool // num_gpu_blocks was a number
	series            string
}

// Parse reads a Prometheus text exposition from r. name identifies the source
// (a URL or file name) in errors.
func Parse(r io.Reader, name string) ([]Instance, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		err = boundedError{err}
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("scrape: %s:%d: %w", name, pe.Line, err)
		}
		return nil, fmt.Errorf("scrape: %s: %w", name, err)
	}
	insts, err := fromFamilies(families)
	if err != nil {
		return nil, fmt.Errorf("scrape: %s: %w", name, err)
	}
	if len(insts) == 0 {
		return nil, fmt.Errorf("%w in %s (%d other metric families)", ErrNoMetrics, name, len(families))
	}
	return insts, nil
}

func fromFamilies(families map[string]*dto.MetricFamily) ([]Instance, error) {
	byKey := map[string]*raw{}
	// Sorted names make the first error reported deterministic.
	for _, name := range slices.Sorted(maps.Keys(families)) {
		spec, ok := metricsByName[name]
		if !ok {
			continue
		}
		mf := families[name]
		for _, m := range mf.GetMetric() {
			v, err := scalar(name, mf.GetType(), m)
			if err != nil {
				return nil, err
			}
			if err := validate(spec.check, v); err != nil {
				return nil, fmt.Errorf("%s: %w", seriesName(name, m), err)
			}
			inst, key, err := identify(spec.engine, m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", seriesName(name, m), err)
			}
			rw := byKey[key]
			if rw == nil {
				rw = &raw{inst: inst}
				byKey[key] = rw
			}
			if rw.has[spec.f] {
				if rw.vals[spec.f] != v && !(math.IsNaN(v) && math.IsNaN(rw.vals[spec.f])) {
					return nil, fmt.Errorf("%s: conflicting duplicate series: %v and %v", seriesName(name, m), rw.vals[spec.f], v)
				}
				continue
			}
			rw.vals[spec.f], rw.has[spec.f] = v, true
		}
	}
	configs, err := cacheConfigs(families[cacheConfigInfo])
	if err != nil {
		return nil, err
	}

	insts := make([]Instance, 0, len(byKey))
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		rw := byKey[key]
		inst := rw.inst
		var err error
		if inst.Engine == VLLM {
			err = rw.resolveVLLM(&inst, configs)
		} else {
			err = rw.resolveSGLang(&inst)
		}
		if err != nil {
			return nil, err
		}
		insts = append(insts, inst)
	}
	slices.SortFunc(insts, compareInstances)
	return insts, nil
}

// scalar returns the value of a counter, gauge or untyped sample.
func scalar(name string, t dto.MetricType, m *dto.Metric) (float64, error) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), nil
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), nil
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), nil
	}
	return 0, fmt.Errorf("%s: type %s, want a gauge or counter", seriesName(name, m), t)
}

func validate(c check, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("value %v is not finite", v)
	}
	switch c {
	case fraction:
		if v < 0 || v > 1 {
			return fmt.Errorf("value %v is outside 0..1", v)
		}
	case counter:
		if v < 0 {
			return fmt.Errorf("value %v is negative", v)
		}
	case count:
		if v < 0 || v != math.Trunc(v) || v > maxCount {
			return fmt.Errorf("value %v is not a whole number of tokens or pages in 0..2^53", v)
		}
	}
	return nil
}

// identify returns the instance a series belongs to, and its map key. Its
// labels become label values of gpufrag's series (model_name the model,
// the others together the pool), so each name and value must be plain
// text (untrusted.CheckName: the exposition format lets a quoted name or a value
// hold ESC or NUL) of at most MaxLabelBytes, and the labels other than
// model_name at most MaxLabelBytes together.
func identify(engine string, m *dto.Metric) (Instance, string, error) {
	inst := Instance{Engine: engine}
	others := 0
	for _, lp := range m.GetLabel() {
		name, v := lp.GetName(), lp.GetValue()
		if err := untrusted.CheckName(name); err != nil {
			return Instance{}, "", fmt.Errorf("label name %s: %w", untrusted.Quote(name), err)
		}
		if err := untrusted.CheckName(v); err != nil {
			return Instance{}, "", fmt.Errorf("label %s value %s: %w", labelName(name), untrusted.Quote(v), err)
		}
		if len(v) > MaxLabelBytes {
			return Instance{}, "", fmt.Errorf("label %s value %s: %d bytes, over %d", labelName(name), untrusted.Quote(v), len(v), MaxLabelBytes)
		}
		if name == modelLabel {
			inst.Model = v
			continue
		}
		if others += len(name) + len(v) + 2; others > MaxLabelBytes {
			return Instance{}, "", fmt.Errorf("the labels other than %s are over %d bytes together (they make one label value, pool)", modelLabel, MaxLabelBytes)
		}
		if inst.Labels == nil {
			inst.Labels = map[string]string{}
		}
		inst.Labels[name] = v
	}
	return inst, instanceKey(inst), nil
}

// labelName renders a label name for a message: as it is when it is short
// plain text (every name the engines use), else quoted and cut (untrusted.Quote).
func labelName(name string) string {
	if len(name) <= untrusted.QuoteBytes && untrusted.CheckName(name) == nil {
		return name
	}
	return untrusted.Quote(name)
}

// instanceKey is unambiguous: every part is quoted.
func instanceKey(inst Instance) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(inst.Engine))
	b.WriteString(strconv.Quote(inst.Model))
	for _, k := range slices.Sorted(maps.Keys(inst.Labels)) {
		b.WriteString(strconv.Quote(k))
		b.WriteString(strconv.Quote(inst.Labels[k]))
	}
	return b.String()
}

func compareInstances(a, b Instance) int {
	if c := cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Model, b.Model)); c != 0 {
		return c
	}
	return cmp.Compare(instanceKey(a), instanceKey(b))
}

// seriesName renders name{labels} for messages, labels sorted.
func seriesName(name string, m *dto.Metric) string {
	labels := slices.Clone(m.GetLabel())
	slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, lp := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", labelName(lp.GetName()), untrusted.Quote(lp.GetValue()))
	}
	b.WriteByte('}')
	return b.String()
}

// cacheConfigs reads vllm:cache_config_info, keyed by the engine label value;
// hasEngine distinguishes engine="" from no engine label.
type configKey struct {
	engine    string
	hasEngine bool
}

func cacheConfigs(mf *dto.MetricFamily) (map[configKey]blockConfig, error) {
	configs := map[configKey]blockConfig{}
	if mf == nil {
		return configs, nil
	}
	for _, m := range mf.GetMetric() {
		series := seriesName(cacheConfigInfo, m)
		var key configKey
		var blocksText, sizeText string
		var hasBlocks, hasSize bool
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case engineLabel:
				key = configKey{lp.GetValue(), true}
			case "num_gpu_blocks":
				blocksText, hasBlocks = lp.GetValue(), true
			case "block_size":
				sizeText, hasSize = lp.GetValue(), true
			}
		}
		c := blockConfig{series: series}
		if hasBlocks && hasSize && blocksText != "None" && blocksText != "" {
			var err error
			if c.blocks, err = countLabel("num_gpu_blocks", blocksText, 0); err != nil {
				return nil, fmt.Errorf("%s: %w", series, err)
			}
			if c.blockSize, err = countLabel("block_size", sizeText, 1); err != nil {
				return nil, fmt.Errorf("%s: %w", series, err)
			}
			c.known = true
		}
		if old, dup := configs[key]; dup {
			if old.known != c.known || old.blocks != c.blocks || old.blockSize != c.blockSize {
				return nil, fmt.Errorf("%s: conflicting duplicate series: %s says num_gpu_blocks=%d block_size=%d", series, old.series, old.blocks, old.blockSize)
			}
			continue
		}
		configs[key] = c
	}
	return configs, nil
}

func countLabel(label, text string, min int) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < min || n > maxCount {
		return 0, fmt.Errorf("label %s=%s is not an integer in %d..2^53", label, untrusted.Quote(text), min)
	}
	return n, nil
}

// pick returns the preferred of two fields that carry the same quantity.
func (rw *raw) pick(preferred, fallback field) (float64, bool) {
	if rw.has[preferred] {
		return rw.vals[preferred], true
	}
	return rw.vals[fallback], rw.has[fallback]
}

func (rw *raw) resolveVLLM(inst *Instance, configs map[configKey]blockConfig) error {
	inst.Usage, inst.HasUsage = rw.pick(fUsage, fUsageOld)
	inst.Preemptions, inst.HasPreemptions = rw.pick(fPreempt, fPreemptOld)
	q, hasQ := rw.pick(fQueries, fQueriesOld)
	h, hasH := rw.pick(fHits, fHitsOld)
	if hasQ && hasH {
		inst.PrefixQueries, inst.PrefixHits, inst.HasPrefix = q, h, true
	}
	engine, hasEngine := inst.Labels[engineLabel]
	c, ok := configs[configKey{engine, hasEngine}]
	if !ok {
		c, ok = configs[configKey{}]
	}
	if ok && c.known {
		inst.Blocks, inst.BlockSize, inst.HasBlocks = c.blocks, c.blockSize, true
	}
	return nil
}

func (rw *raw) resolveSGLang(inst *Instance) error {
	total, hasTotal := rw.vals[fSGTotal], rw.has[fSGTotal]
	switch {
	case rw.has[fSGUsage]:
		inst.Usage, inst.HasUsage = rw.vals[fSGUsage], true
	case rw.has[fSGUsed] && hasTotal && total > 0:
		used := rw.vals[fSGUsed]
		if used > total {
			return fmt.Errorf("sglang:num_used_tokens %v exceeds sglang:max_total_num_tokens %v for %s", used, total, describe(*inst))
		}
		inst.Usage, inst.HasUsage = used/total, true
	}
	pageSize := 1
	if rw.has[fSGPageSize] {
		if rw.vals[fSGPageSize] < 1 {
			return fmt.Errorf("sglang:page_size is 0 for %s", describe(*inst))
		}
		pageSize = int(rw.vals[fSGPageSize])
	}
	switch {
	case rw.has[fSGPages] && rw.has[fSGPageSize]:
		inst.Blocks, inst.BlockSize, inst.HasBlocks = int(rw.vals[fSGPages]), pageSize, true
	case hasTotal:
		inst.Blocks, inst.BlockSize, inst.HasBlocks = int(total)/pageSize, pageSize, true
	}
	inst.Preemptions, inst.HasPreemptions = rw.vals[fSGRetracted], rw.has[fSGRetracted]
	inst.PrefixHitRate, inst.HasPrefixHitRate = rw.vals[fSGHitRate], rw.has[fSGHitRate]
	return nil
}

// describe names an instance in messages.
func describe(inst Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s model_name=%s", inst.Engine, untrusted.Quote(inst.Model))
	for _, k := range slices.Sorted(maps.Keys(inst.Labels)) {
		fmt.Fprintf(&b, " %s=%s", labelName(k), untrusted.Quote(inst.Labels[k]))
	}
	return b.String()
}

// maxErrorBytes bounds the text of an error of the exposition parser,
// which quotes the offending token whole (a megabyte label value); its
// control characters are escaped as in a Go string.
const maxErrorBytes = 300

// boundedError is an error whose text is cut to maxErrorBytes; it unwraps
// to the original.
type boundedError struct{ err error }

func (e boundedError) Error() string {
	msg := e.err.Error()
	if untrusted.CheckName(msg) != nil { // a token of the page, not quoted by the parser
		q := strconv.Quote(msg)
		msg = q[1 : len(q)-1]
	}
	if len(msg) <= maxErrorBytes {
		return msg
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes of message)", msg[:cut], len(msg))
}

func (e boundedError) Unwrap() error { return e.err }

// MaxLabelBytes bounds a label value read from an engine: model_name and
// the other labels become label values of gpufrag's series, and the
// longest real ones (model paths) are a few hundred bytes; 4 KiB leaves
// room and keeps a megabyte label out of Prometheus.
const MaxLabelBytes = 4 << 10
