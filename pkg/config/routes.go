package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The fields an openai entry may send its output cap in.
const (
	MaxCompletionTokens = "max_completion_tokens"
	MaxTokens           = "max_tokens"
)

// The provider kinds a provider table entry may name.
const (
	KindFake      = "fake"
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
	KindBedrock   = "bedrock"
)

// ProviderSpec is one entry of the provider table: how to reach one
// provider, and with which credentials. Rungs name entries, so a key lives
// in one place however many routes use it.
type ProviderSpec struct {
	Kind string
	// BaseURL is the API root: required for openai, optional for anthropic
	// (default https://api.anthropic.com).
	BaseURL string
	// APIKey is a secret read from the variable the entry's api_key_env
	// names; it is never logged or printed.
	APIKey string
	// APIKeySecret names a Secrets Manager secret (id or ARN) whose string
	// is the key, fetched once when a binary starts: the way to give a
	// deployed worker a key without putting it into its environment.
	APIKeySecret string
	// Region and Endpoint address Bedrock; empty means the function's own
	// region and the SDK's endpoint (never the emulator of AWS_ENDPOINT_URL).
	Region   string
	Endpoint string
	// Stream asks for a streamed answer (progress while tokens arrive).
	Stream bool
	// Background makes an openai entry speak the Responses API in
	// background mode: the provider keeps each generation by id, which
	// the worker records on the job, so a worker that takes the job over
	// fetches the answer instead of paying again (docs/resume.md,
	// "Resuming a paid generation").
	Background bool
	// PollEvery is how often a background generation is polled (zero:
	// the provider's default, a second).
	PollEvery time.Duration
	// Latency is the fake provider's delay per call.
	Latency time.Duration
	// MaxTokensField is the openai body field of the output cap:
	// max_completion_tokens or max_tokens (providerDoc.MaxTokensField).
	MaxTokensField string
}

// Routable classes are the error classes a route may fall back on: the
// ones a provider call ends with. The job's own limits (deadline, budget,
// cancel) end the attempt however many rungs are left.
func routable(c job.ErrorClass) bool {
	switch c {
	case job.DeadlineExceeded, job.BudgetExhausted, job.SpendLimit, job.Cancelled, job.DeadLettered:
		return false
	}
	return c.Valid()
}

// routesDoc is AIJOBS_ROUTES as written.
type routesDoc struct {
	Providers map[string]providerDoc `json:"providers"`
	Routes    map[string]routeDoc    `json:"routes"`
}

type providerDoc struct {
	Kind         string `json:"kind"`
	BaseURL      string `json:"base_url"`
	APIKeyEnv    string `json:"api_key_env"`
	APIKeySecret string `json:"api_key_secret"`
	Region       string `json:"region"`
	Endpoint     string `json:"endpoint"`
	Stream       *bool  `json:"stream"`
	Background   bool   `json:"background"`
	PollEvery    string `json:"poll_every"`
	Latency      string `json:"latency"`
	// MaxTokensField is the body field an openai entry's output cap is
	// sent in: max_completion_tokens (the default: OpenAI's current
	// models refuse max_tokens) or max_tokens, for an OpenAI-compatible
	// server that knows only the older name.
	MaxTokensField string `json:"max_tokens_field"`
	// Limits are the key's rate limits, shared by every worker through
	// its bucket (docs/ratelimits.md, "Provider rate limits"); absent,
	// the bucket learns them from the provider's answers (a fake entry
	// without them has no bucket).
	Limits *limitsDoc `json:"limits"`
}

type limitsDoc struct {
	RequestsPerMinute int64 `json:"requests_per_minute"`
	TokensPerMinute   int64 `json:"tokens_per_minute"`
}

// limit is the rate limit of a rung on an entry of kind with these
// limits declared (nil: none): every keyed entry has a bucket, at the
// grain its provider limits calls (docs/ratelimits.md, "Provider rate
// limits"): OpenAI's per model, the others' per entry; Bedrock, whose
// answers state no limits, learns one from its throttles. The local fake
// has no key, and a bucket only when it declares limits.
func (l *limitsDoc) limit(kind string) job.RateLimit {
	var r job.RateLimit
	if l != nil {
		r = job.RateLimit{RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute}
	}
	switch kind {
	case KindOpenAI:
		r.Grain = job.GrainModel
	case KindAnthropic:
		r.Grain = job.GrainEntry
	case KindBedrock:
		r.Grain, r.Throttles = job.GrainEntry, true
	}
	return r
}

type routeDoc struct {
	Rungs      []rungDoc `json:"rungs"`
	FallbackOn []string  `json:"fallback_on"`
}

type rungDoc struct {
	Provider  string   `json:"provider"`
	Model     string   `json:"model"`
	Price     priceDoc `json:"price"`
	MaxTokens int      `json:"max_tokens"`
	Timeout   string   `json:"timeout"`
	// P99 is the standard lane's p99 completion time (default: the
	// timeout), what the worker's choice of lane holds to a job's deadline.
	P99 string `json:"p99"`
	// Lanes are the other lanes the rung offers (docs/lanes.md,
	// "Cost lanes"), by name: flex, priority.
	Lanes map[string]laneDoc `json:"lanes"`
	// Detached runs the rung's calls detached (docs/resume.md, "Detached
	// routes"): only on an entry whose provider keeps generations by id.
	Detached bool `json:"detached"`
}

// laneDoc is one lane of a rung: its own price (required), timeout
// (default: the rung's) and p99 (default: its timeout).
type laneDoc struct {
	Price   priceDoc `json:"price"`
	Timeout string   `json:"timeout"`
	P99     string   `json:"p99"`
	// Window, MinJobs and MaxJobs are the batch lane's: how long the
	// first job enlisted waits for others before its batch is submitted
	// (default one minute), the fewest a batch is submitted with (default
	// the provider's minimum: 100 for Bedrock, else 1), and the most it
	// holds (default 1,000, or the provider's fewer).
	Window  string `json:"window"`
	MinJobs int    `json:"min_jobs"`
	MaxJobs int    `json:"max_jobs"`
}

// priceDoc is cents per million tokens, as a provider's price page says
// it; each amount may be a JSON string or number ("300" or 300, "7.5").
//
// CachedInput and CacheWrite price the input tokens the provider read
// from and wrote to its prompt cache; absent, each takes the provider's
// documented rate as a share of the input price (cacheRates).
type priceDoc struct {
	Input       json.Number `json:"input"`
	Output      json.Number `json:"output"`
	CachedInput json.Number `json:"cached_input"`
	CacheWrite  json.Number `json:"cache_write"`
}

// parseRoutes reads AIJOBS_ROUTES. Unknown fields are refused, so a typo
// ("fallback" for "fallback_on") is an error at start, not a route that
// silently never falls back. getenv resolves api_key_env.
func parseRoutes(text string, getenv func(string) string, defaultTimeout time.Duration) (map[string]ProviderSpec, map[string]job.Route, error) {
	var doc routesDoc
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("not the routes document (see docs/routes.md): %w", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("trailing data after the routes document")
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	providers := map[string]ProviderSpec{}
	for _, name := range sortedKeys(doc.Providers) {
		if strings.Contains(name, "#") {
			bad("provider %q: a name may not hold '#' (the buckets table keys tenants by it)", name)
			continue
		}
		p, err := providerFrom(doc.Providers[name], getenv)
		if err != nil {
			bad("provider %q: %v", name, err)
			continue
		}
		providers[name] = p
	}
	routes := map[string]job.Route{}
	if len(doc.Routes) == 0 {
		bad("no routes")
	}
	for _, name := range sortedKeys(doc.Routes) {
		r, err := routeFrom(doc.Routes[name], doc.Providers, defaultTimeout)
		if err != nil {
			bad("route %q: %v", name, err)
			continue
		}
		routes[name] = r
	}
	for _, name := range sortedKeys(providers) {
		if !usedBy(name, routes) {
			bad("provider %q: no rung uses it", name)
		}
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return providers, routes, nil
}

func providerFrom(d providerDoc, getenv func(string) string) (ProviderSpec, error) {
	p := ProviderSpec{Kind: d.Kind, BaseURL: d.BaseURL, APIKeySecret: d.APIKeySecret, Region: d.Region, Endpoint: d.Endpoint, Stream: true}
	if d.Stream != nil {
		p.Stream = *d.Stream
	}
	if d.APIKeyEnv != "" {
		if d.APIKeySecret != "" {
			return p, fmt.Errorf("api_key_env and api_key_secret are exclusive")
		}
		if p.APIKey = getenv(d.APIKeyEnv); p.APIKey == "" {
			return p, fmt.Errorf("api_key_env names %s, which is empty", d.APIKeyEnv)
		}
	}
	keyed := d.APIKeyEnv != "" || d.APIKeySecret != ""
	switch d.Kind {
	case KindFake:
		if d.Latency != "" {
			l, err := time.ParseDuration(d.Latency)
			if err != nil || l < 0 {
				return p, fmt.Errorf("latency %q: want a duration like 500ms", d.Latency)
			}
			p.Latency = l
		}
	case KindOpenAI:
		if d.BaseURL == "" {
			return p, fmt.Errorf("an openai provider needs base_url")
		}
	case KindAnthropic:
		if p.BaseURL == "" {
			p.BaseURL = "https://api.anthropic.com"
		}
	case KindBedrock:
		if keyed || d.BaseURL != "" {
			return p, fmt.Errorf("bedrock signs with the function's AWS credentials: no api key, no base_url (use endpoint)")
		}
	default:
		return p, fmt.Errorf("kind %q: want fake, openai, anthropic or bedrock", d.Kind)
	}
	if d.Kind != KindBedrock && (d.Region != "" || d.Endpoint != "") {
		return p, fmt.Errorf("region and endpoint are for bedrock")
	}
	if l := d.Limits; l != nil && (l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 || l.limit(d.Kind).IsZero()) {
		return p, fmt.Errorf("limits: want requests_per_minute and/or tokens_per_minute above 0")
	}
	if d.Kind != KindFake && d.Latency != "" {
		return p, fmt.Errorf("latency is for the fake provider")
	}
	if d.Background && d.Kind != KindOpenAI {
		return p, fmt.Errorf("background is for openai (the Responses API)")
	}
	if d.Background && d.Stream != nil && *d.Stream {
		return p, fmt.Errorf("background and stream are exclusive: a background response is polled, not streamed")
	}
	if d.Background {
		p.Background, p.Stream = true, false
	}
	switch d.MaxTokensField {
	case "", MaxCompletionTokens, MaxTokens:
		if d.MaxTokensField != "" && d.Kind != KindOpenAI {
			return p, fmt.Errorf("max_tokens_field is for openai")
		}
		p.MaxTokensField = d.MaxTokensField
	default:
		return p, fmt.Errorf("max_tokens_field %q: want %s or %s", d.MaxTokensField, MaxCompletionTokens, MaxTokens)
	}
	if d.PollEvery != "" {
		e, err := time.ParseDuration(d.PollEvery)
		if !d.Background || err != nil || e <= 0 {
			return p, fmt.Errorf("poll_every %q: want a duration like 1s, on a background entry", d.PollEvery)
		}
		p.PollEvery = e
	}
	return p, nil
}

func routeFrom(d routeDoc, providers map[string]providerDoc, defaultTimeout time.Duration) (job.Route, error) {
	var r job.Route
	if len(d.Rungs) == 0 {
		return r, fmt.Errorf("no rungs")
	}
	for i, g := range d.Rungs {
		rung, err := rungFrom(g, providers, defaultTimeout)
		if err != nil {
			return r, fmt.Errorf("rung %d: %v", i, err)
		}
		r.Rungs = append(r.Rungs, rung)
	}
	for _, c := range d.FallbackOn {
		class := job.ErrorClass(c)
		if !routable(class) {
			return r, fmt.Errorf("fallback_on %q: not a class a provider call ends with", c)
		}
		if slices.Contains(r.FallbackOn, class) {
			return r, fmt.Errorf("fallback_on %q twice", c)
		}
		r.FallbackOn = append(r.FallbackOn, class)
	}
	if len(r.Rungs) > 1 && len(r.FallbackOn) == 0 {
		return r, fmt.Errorf("several rungs but no fallback_on: the later rungs could never run")
	}
	return r, nil
}

func rungFrom(g rungDoc, providers map[string]providerDoc, defaultTimeout time.Duration) (job.Rung, error) {
	r := job.Rung{Provider: g.Provider, Model: g.Model, MaxTokens: g.MaxTokens, Timeout: defaultTimeout}
	p, ok := providers[g.Provider]
	if !ok {
		return r, fmt.Errorf("provider %q is not in the provider table", g.Provider)
	}
	r.Limit = p.Limits.limit(p.Kind)
	if g.Model == "" && p.Kind != KindFake {
		return r, fmt.Errorf("no model")
	}
	if g.MaxTokens < 0 {
		return r, fmt.Errorf("max_tokens %d below 0", g.MaxTokens)
	}
	if g.Detached && (p.Kind != KindOpenAI || !p.Background) {
		// Only a generation the provider keeps by id can be left running
		// and reattached by a later invocation.
		return r, fmt.Errorf("detached needs a provider that keeps generations by id: an openai entry with \"background\": true")
	}
	r.Detached = g.Detached
	var err error
	if r.Price, r.Timeout, r.Completion, err = termsFrom(g.Price, g.Timeout, g.P99, r.Timeout); err != nil {
		return r, err
	}
	r.Price = cacheRates(p.Kind, g.Model, r.Price)
	r.FixedTemperature, r.NoTemperature = fixedTemperature(p.Kind, g.Model), noTemperature(p.Kind, g.Model)
	r.Reasons = reasons(p.Kind, g.Model)
	r.Takes = takes(p.Kind, g.Model, p.Background)
	r.Embeds = embeds(p.Kind, g.Model, p.Background)
	for _, name := range sortedKeys(g.Lanes) {
		lane, err := laneFrom(r, job.Lane(name), g.Lanes[name], p.Kind)
		if err != nil {
			return r, fmt.Errorf("lane %q: %v", name, err)
		}
		r.Lanes = append(r.Lanes, lane)
	}
	return r, nil
}

// laneFrom is rung g served in lane l as d prices it, for an entry of
// kind: the lanes a kind's provider can be asked for are its service
// tiers.
func laneFrom(g job.Rung, l job.Lane, d laneDoc, kind string) (job.Rung, error) {
	switch {
	case l == job.Standard:
		return g, fmt.Errorf("the rung's own price and timeout are its standard lane")
	case !l.Valid():
		return g, fmt.Errorf("want batch, flex or priority")
	case l == job.Batch:
		return batchLaneFrom(g, d, kind)
	case kind == KindAnthropic:
		return g, fmt.Errorf("an anthropic entry has no service tiers to ask for")
	case d.Window != "" || d.MinJobs != 0 || d.MaxJobs != 0:
		return g, fmt.Errorf("window, min_jobs and max_jobs are the batch lane's")
	}
	lane := g
	lane.Lane, lane.Base, lane.Lanes = l, g.Price, nil
	var err error
	lane.Price, lane.Timeout, lane.Completion, err = termsFrom(d.Price, d.Timeout, d.P99, g.Timeout)
	lane.Price = cacheRates(kind, g.Model, lane.Price)
	return lane, err
}

// batchLaneFrom is rung g's batch lane as d prices it: no call is made
// in it (a collector submits the job in a provider batch), so its p99 is
// required (the wait a job's deadline must allow) and its timeout unused.
func batchLaneFrom(g job.Rung, d laneDoc, kind string) (job.Rung, error) {
	most, ok := batchJobs[kind]
	if !ok {
		return g, fmt.Errorf("no batch lane for a %s entry (docs/lanes.md, \"The batch lane\")", kind)
	}
	if d.P99 == "" || d.Timeout != "" {
		return g, fmt.Errorf("a batch lane needs a p99 (how long its batches take) and takes no timeout")
	}
	lane := g
	lane.Lane, lane.Base, lane.Lanes = job.Batch, g.Price, nil
	var err error
	if lane.Price, _, lane.Completion, err = termsFrom(d.Price, d.P99, d.P99, 0); err != nil {
		return g, err
	}
	lane.Price = cacheRates(kind, g.Model, lane.Price)
	lane.Timeout = 0
	if lane.Window, err = positive("window", d.Window, time.Minute); err != nil {
		return g, err
	}
	// A lane whose batches the provider refuses for their size would
	// fail every batch it makes: refused here, not at the first submit.
	least, why := batchMinJobs(kind)
	if lane.MaxJobs = d.MaxJobs; lane.MaxJobs == 0 {
		lane.MaxJobs = min(1000, most)
	}
	if lane.MaxJobs < least || lane.MaxJobs > most {
		return g, fmt.Errorf("max_jobs %d: want %d to %d%s", d.MaxJobs, least, most, why)
	}
	if lane.MinJobs = d.MinJobs; lane.MinJobs == 0 {
		lane.MinJobs = least
	}
	if lane.MinJobs < least || lane.MinJobs > lane.MaxJobs {
		return g, fmt.Errorf("min_jobs %d: want %d to max_jobs (%d)%s", d.MinJobs, least, lane.MaxJobs, why)
	}
	return lane, nil
}

// batchMinJobs is the fewest requests a batch of kind takes, and why
// when more than one: Bedrock refuses a batch inference job of fewer
// records than its quota "Minimum number of records per batch inference
// job" (Bedrock user guide, "Format and upload your batch inference
// data"), 100 by default; the others take one.
func batchMinJobs(kind string) (int, string) {
	if kind == KindBedrock {
		return 100, `: a bedrock batch inference job takes at least 100 records (Bedrock's quota "Minimum number of records per batch inference job")`
	}
	return 1, ""
}

// batchJobs is the most jobs one batch of each kind that batches may
// hold: what a batch record keeps (job.MaxBatchJobs), and what the
// provider's batch takes with every job's input at 256 KiB (a stored
// input may now be larger: docs/payloads.md, "Known gaps"), with room for each request's own fields: OpenAI's 200 MB
// input file (780), Anthropic's 256 MB create (976), Bedrock's 1 GB
// input file (4,096).
var batchJobs = map[string]int{KindFake: job.MaxBatchJobs, KindOpenAI: 750, KindAnthropic: 950, KindBedrock: 3800}

// termsFrom reads a rung's or a lane's price, timeout (else def) and p99
// (0 when absent: Rung.P99 is then the timeout; never above the timeout,
// where the call is cut).
func termsFrom(pd priceDoc, timeout, p99 string, def time.Duration) (job.Price, time.Duration, time.Duration, error) {
	t, err := positive("timeout", timeout, def)
	if err != nil {
		return job.Price{}, 0, 0, err
	}
	q, err := positive("p99", p99, 0)
	if err != nil {
		return job.Price{}, 0, 0, err
	}
	if q > t {
		return job.Price{}, 0, 0, fmt.Errorf("p99 %s above the timeout %s: a call is cut at its timeout", q, t)
	}
	if pd.Input == "" || pd.Output == "" {
		return job.Price{}, 0, 0, fmt.Errorf("price needs input and output, in cents per million tokens")
	}
	price, err := job.PricePerMillion(string(pd.Input), string(pd.Output))
	if err != nil {
		return job.Price{}, 0, 0, fmt.Errorf("price: want cents per million tokens, at most 3 decimals: %v", err)
	}
	for _, c := range []struct {
		name string
		text json.Number
		rate *job.Nanocents
	}{{"cached_input", pd.CachedInput, &price.CachedInputPerToken}, {"cache_write", pd.CacheWrite, &price.CacheWritePerToken}} {
		if c.text == "" {
			continue
		}
		r, err := job.PricePerMillion(string(c.text), "0")
		if err != nil {
			return job.Price{}, 0, 0, fmt.Errorf("price: %s: want cents per million tokens, at most 3 decimals: %v", c.name, err)
		}
		*c.rate = r.InputPerToken
	}
	return price, t, q, nil
}

// positive reads a positive duration named name, def when absent.
func positive(name, text string, def time.Duration) (time.Duration, error) {
	if text == "" {
		return def, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration like 60s", name, text)
	}
	return d, nil
}

func usedBy(provider string, routes map[string]job.Route) bool {
	for _, r := range routes {
		for _, g := range r.Rungs {
			if g.Provider == provider {
				return true
			}
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CompactRoutes re-encodes a routes document without insignificant
// whitespace, for an environment variable (Lambda allows 4 KB in all).
func CompactRoutes(text string) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return "", fmt.Errorf("compact routes: %w", err)
	}
	return b.String(), nil
}
