// Generators and transforms: arrival processes, sessions, bucketing, beam
// width. See package workload for the overview. All randomness comes from
// the *rand.Rand the caller passes; nothing here reads a clock.

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// ArrivalProcess yields inter-arrival gaps.
type ArrivalProcess interface {
	// Gap returns the time from one arrival to the next in ns: at least
	// 0 and at most MaxArrival/2, so that a time of at most MaxArrival
	// plus a gap cannot overflow; a caller summing gaps stops the sum at
	// MaxArrival (AssignArrivals does).
	Gap() int64
}

// MaxArrival is the latest arrival a trace or a generator gives, in ns:
// 2^62, 146 years, the bound on a parsed time (maxTime). Arrivals drawn
// past it are put at it.
const MaxArrival = maxTime

type poisson struct {
	mean float64 // mean gap in ns
	rng  *rand.Rand
}

func (p *poisson) Gap() int64 { return gapNS(p.rng.ExpFloat64() * p.mean) }

// Poisson returns a Poisson process of rate arrivals per second:
// exponential gaps of mean 1/rate s. rate must be positive and finite.
func Poisson(rate float64, rng *rand.Rand) (ArrivalProcess, error) {
	if !(rate > 0) || math.IsInf(rate, 0) || rng == nil {
		return nil, configErr("Poisson: rate must be a positive number of requests per second (got %v)", rate)
	}
	return &poisson{mean: 1e9 / rate, rng: rng}, nil
}

type gamma struct {
	shape, scale float64 // scale in ns
	rng          *rand.Rand
}

func (g *gamma) Gap() int64 { return gapNS(gammaSample(g.rng, g.shape) * g.scale) }

// Gamma returns a renewal process of rate arrivals per second whose gaps
// follow a Gamma law with coefficient of variation cv (standard deviation
// over mean): cv 1 is Poisson, cv > 1 is bursty (Azure code has 13), cv < 1
// is more regular. Shape is 1/cv², scale 1/(rate·shape).
func Gamma(rate, cv float64, rng *rand.Rand) (ArrivalProcess, error) {
	if !(rate > 0) || math.IsInf(rate, 0) || rng == nil {
		return nil, configErr("Gamma: rate must be a positive number of requests per second (got %v)", rate)
	}
	// cv in [0.01, 100]: outside it the shape is so large or so small that
	// float64 sampling degenerates (all gaps equal, or nearly all zero).
	if !(cv >= 0.01 && cv <= 100) {
		return nil, configErr("Gamma: cv must be from 0.01 to 100 (got %v)", cv)
	}
	shape := 1 / (cv * cv)
	return &gamma{shape: shape, scale: 1e9 / (rate * shape), rng: rng}, nil
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method,
// boosting shapes below 1 with U^(1/shape).
func gammaSample(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gammaSample(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// MaxArrivalSpan bounds the mean span of arrivals drawn at random, in ns:
// n arrivals at rate a second span (n−1)/rate seconds on average, which
// must be at most 2^56 ns, about 2.3 years, a 64th of MaxArrival, so that
// they pass MaxArrival, where they would pile up, against odds of e^-64
// for Poisson gaps (one gap of 64 times its mean). Callers refuse lower
// rates (MinRate).
const MaxArrivalSpan = MaxArrival / 64

// MinRate is the lowest rate, in arrivals per second, at which n arrivals
// drawn at random fit in MaxArrivalSpan: (n−1) / MaxArrivalSpan seconds;
// 0 for fewer than two, whose one arrival is at 0.
func MinRate(n int) float64 {
	if n < 2 {
		return 0
	}
	return float64(n-1) / (float64(MaxArrivalSpan) / 1e9)
}

// gapNS rounds a gap to ns, at most maxGap.
func gapNS(ns float64) int64 {
	if !(ns <= maxGap) { // and NaN, from 0 × an infinite mean
		ns = maxGap
	}
	return int64(math.Round(ns))
}

// maxGap bounds one gap between arrivals: MaxArrival/2 ns (73 years), so
// that a time of at most MaxArrival plus a gap cannot overflow (addGap).
// It was MaxArrival/2^20, so that sums of a million gaps could not
// overflow: 2^42 ns, 73 minutes (the comment said "about 51 days"), which
// cut a Poisson process's gaps where its rate is low (1.2% of them at
// 0.001 requests per second, 41% at 0.0002, their mean to a third at
// 0.0001), so that rate was never the one simulated; the sums now stop at
// MaxArrival instead.
const maxGap = float64(MaxArrival / 2)

// addGap returns at + gap, at most MaxArrival (at <= MaxArrival, gap <=
// maxGap: no overflow).
func addGap(at, gap int64) int64 { return min(at+gap, MaxArrival) }

// AssignArrivals gives an untimed trace arrival times from p: the first
// request arrives at 0 and each later one one Gap after the one before, in
// the trace's order (line order). It refuses a timed trace, whose arrivals
// are real data (use Rescale to change its load).
func AssignArrivals(t *Trace, p ArrivalProcess) error {
	if t.Timed {
		return configErr("AssignArrivals: %s already has arrivals from its file (use Rescale)", displayName(t.Name))
	}
	var at int64
	for i := range t.Requests {
		if i > 0 {
			at = addGap(at, p.Gap())
		}
		t.Requests[i].Arrival = at
	}
	return nil
}

// Rescale stretches or squeezes a timed trace's arrivals so that its mean
// rate, (requests − 1) / (last arrival − first arrival), becomes rate
// requests per second; the first arrival stays where it is and the order is
// kept. It needs a timed trace of at least two requests spread over time.
func Rescale(t *Trace, rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return configErr("a rate must be a positive number of requests per second (got %v)", rate)
	}
	n := len(t.Requests)
	if !t.Timed || n < 2 || t.Requests[n-1].Arrival == t.Requests[0].Arrival {
		return configErr("%s has no arrivals spread over time to respace to a rate (its requests are all sent at once, or it has no times)", displayName(t.Name))
	}
	first := t.Requests[0].Arrival
	span := float64(t.Requests[n-1].Arrival - first)
	newSpan := float64(n-1) / rate * 1e9
	if first+int64(math.Min(newSpan, float64(maxTime))) >= maxTime {
		over := fmt.Sprintf("%.3g hours", newSpan/float64(time.Hour))
		if math.IsInf(newSpan, 1) {
			over = "more hours than a float holds"
		}
		return configErr("a rate of %g requests/s spreads the %d requests of %s over %s, past the %.0f hours a simulation can span: give a higher rate",
			rate, n, displayName(t.Name), over, float64(maxTime)/float64(time.Hour))
	}
	f := newSpan / span
	for i := range t.Requests {
		r := &t.Requests[i]
		r.Arrival = first + int64(math.Round(float64(r.Arrival-first)*f))
	}
	return nil
}

// Bucket rounds every prompt length up to a multiple of k tokens (k >= 1),
// as engines that pad to bucket sizes do; prompts never shrink and grow by
// less than k. A rounded prompt may exceed MaxTokens by less than k (which
// is at most MaxTokens, so nothing overflows).
func Bucket(t *Trace, k int) error {
	if k < 1 || k > MaxTokens {
		return configErr("Bucket: k must be from 1 to %d tokens (got %d)", MaxTokens, k)
	}
	for i := range t.Requests {
		p := t.Requests[i].PromptTokens
		t.Requests[i].PromptTokens = (p + k - 1) / k * k
	}
	return nil
}

// VaryBeam sets each request's N (parallel samples or beam width) to a
// width drawn uniformly from widths; repeat a width to weight it, for
// example {1, 1, 1, 4} gives a quarter of the requests four branches.
func VaryBeam(t *Trace, widths []int, rng *rand.Rand) error {
	if len(widths) == 0 || rng == nil {
		return configErr("VaryBeam: need at least one width")
	}
	for _, w := range widths {
		if w < 1 || w > MaxN {
			return configErr("VaryBeam: widths must be from 1 to %d (got %d)", MaxN, w)
		}
	}
	for i := range t.Requests {
		t.Requests[i].N = widths[rng.IntN(len(widths))]
	}
	return nil
}

// SessionConfig describes synthetic multi-turn chat sessions. Lengths are
// drawn uniformly from [Min, Max] inclusive.
type SessionConfig struct {
	Sessions int     // number of sessions (>= 1)
	Rate     float64 // session starts per second (Poisson)
	// Turns per session, uniform in [MinTurns, MaxTurns] (>= 1).
	MinTurns, MaxTurns int
	// SystemTokens is a system prompt shared by every session's first
	// turn (0: none); its full 512-token blocks get the same prefix ids in
	// every session.
	SystemTokens int
	// New user tokens per turn, uniform in [MinUser, MaxUser] (>= 1).
	MinUser, MaxUser int
	// Output tokens per turn, uniform in [MinOutput, MaxOutput] (>= 0).
	MinOutput, MaxOutput int
	// ThinkSeconds is the mean gap between a turn's arrival and the next
	// turn's (exponential); Mooncake's implied sessions have a median of
	// 126 s.
	ThinkSeconds float64
	// MaxContext ends a session before a turn whose prompt would exceed
	// it (0: MaxTokens).
	MaxContext int
}

// PrefixBlockTokens is the span of one Request.PrefixHashes entry: Mooncake's
// 512-token hash blocks, which generated sessions use too.
const PrefixBlockTokens = 512

// PrefixIDMix is a fixed mix of (prompt i, block k) for prefix ids made up
// where a trace has none: SplitMix64's finalizer (Steele, Lea, Flood 2014)
// over i<<20 ^ k. Callers set top bits of their own, so that made-up ids
// never meet a trace's (Mooncake's hash_ids are small counters).
func PrefixIDMix(i, k int) uint64 {
	x := uint64(i)<<20 ^ uint64(k)
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// prefixBlock is the block size of generated prefix ids.
const prefixBlock = PrefixBlockTokens

// Sessions generates multi-turn chat: turn 1's prompt is SystemTokens plus
// new user tokens; turn k's prompt is turn k−1's prompt plus its output
// plus new user tokens, so the context grows turn by turn. Each request
// gets prefix ids per 512-token block in Mooncake's style: full blocks that
// lie inside the previous turn's prompt keep its ids, later blocks get new
// ones. The result is sorted by arrival, ties by session and turn; Line is 0.
// As for a read trace, more than MaxRequests turns or MaxPrefixHashes
// prefix ids in all is an ErrConfig error (the ids of a long session grow
// with the square of its turns).
func Sessions(cfg SessionConfig, rng *rand.Rand) ([]Request, error) {
	if err := cfg.validate(rng); err != nil {
		return nil, err
	}
	maxCtx := cfg.MaxContext
	if maxCtx == 0 {
		maxCtx = MaxTokens
	}
	starts, _ := Poisson(cfg.Rate, rng)
	think := 1e9 * cfg.ThinkSeconds
	uni := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	var (
		out    []Request
		nextID uint64
		start  int64
		nids   int // prefix ids of every turn so far
	)
	sysBlocks := cfg.SystemTokens / prefixBlock
	nextID = uint64(sysBlocks)
	for s := 0; s < cfg.Sessions; s++ {
		if s > 0 {
			start = addGap(start, starts.Gap())
		}
		turns := uni(cfg.MinTurns, cfg.MaxTurns)
		at := start
		var prev *Request
		for k := 1; k <= turns; k++ {
			prompt := cfg.SystemTokens + uni(cfg.MinUser, cfg.MaxUser)
			keep := sysBlocks // blocks whose ids carry over
			var ids []uint64
			if prev == nil {
				for b := 0; b < sysBlocks; b++ {
					ids = append(ids, uint64(b))
				}
			} else {
				prompt = prev.PromptTokens + prev.OutputTokens + uni(cfg.MinUser, cfg.MaxUser)
				keep = prev.PromptTokens / prefixBlock
				ids = append(ids, prev.PrefixHashes[:keep]...)
				at = addGap(at, gapNS(rng.ExpFloat64()*think))
			}
			if prompt > maxCtx {
				break
			}
			if len(out) >= requestLimit {
				return nil, configErr("more than %d turns in all (workload.MaxRequests): fewer sessions, or fewer turns each", requestLimit)
			}
			if nids += (prompt + prefixBlock - 1) / prefixBlock; nids > hashLimit {
				return nil, configErr("more than %d prefix ids in all (workload.MaxPrefixHashes): "+
					"the sessions' contexts grow too long; fewer sessions, fewer turns each or a shorter max context", hashLimit)
			}
			for b := keep; b < (prompt+prefixBlock-1)/prefixBlock; b++ {
				ids = append(ids, nextID)
				nextID++
			}
			out = append(out, Request{
				ID:           "s" + strconv.Itoa(s) + ".t" + strconv.Itoa(k),
				Arrival:      at,
				PromptTokens: prompt,
				OutputTokens: uni(cfg.MinOutput, cfg.MaxOutput),
				Session:      "s" + strconv.Itoa(s),
				Turn:         k,
				PrefixHashes: ids,
				N:            1,
			})
			prev = &out[len(out)-1]
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Arrival < out[j].Arrival })
	return out, nil
}

func (c *SessionConfig) validate(rng *rand.Rand) error {
	switch {
	case rng == nil:
		return configErr("Sessions: nil rng")
	case c.Sessions < 1:
		return configErr("Sessions: Sessions must be at least 1 (got %d)", c.Sessions)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return configErr("Sessions: Rate must be a positive number of sessions per second (got %v)", c.Rate)
	case c.MinTurns < 1 || c.MaxTurns < c.MinTurns:
		return configErr("Sessions: need 1 <= MinTurns <= MaxTurns (got %d, %d)", c.MinTurns, c.MaxTurns)
	case c.SystemTokens < 0 || c.SystemTokens > MaxTokens:
		return configErr("Sessions: SystemTokens must be from 0 to %d (got %d)", MaxTokens, c.SystemTokens)
	case c.MinUser < 1 || c.MaxUser < c.MinUser || c.MaxUser > MaxTokens:
		return configErr("Sessions: need 1 <= MinUser <= MaxUser <= %d (got %d, %d)", MaxTokens, c.MinUser, c.MaxUser)
	case c.MinOutput < 0 || c.MaxOutput < c.MinOutput || c.MaxOutput > MaxTokens:
		return configErr("Sessions: need 0 <= MinOutput <= MaxOutput <= %d (got %d, %d)", MaxTokens, c.MinOutput, c.MaxOutput)
	case !(c.ThinkSeconds >= 0) || math.IsInf(c.ThinkSeconds, 0):
		return configErr("Sessions: ThinkSeconds must be a non-negative number (got %v)", c.ThinkSeconds)
	case c.MaxContext < 0 || c.MaxContext > MaxTokens:
		return configErr("Sessions: MaxContext must be from 0 to %d (got %d)", MaxTokens, c.MaxContext)
	}
	return nil
}
