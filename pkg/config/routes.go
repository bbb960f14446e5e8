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
	// fetches the answer instead of paying again (docs/architecture.md,
	// "Resuming a paid generation").
	Background bool
	// PollEvery is how often a background generation is polled (zero:
	// the provider's default, a second).
	PollEvery time.Duration
	// Latency is the fake provider's delay per call.
	Latency time.Duration
}

// Routable classes are the error classes a route may fall back on: the
// ones a provider call ends with. The job's own limits (deadline, budget,
// cancel) end the attempt however many rungs are left.
func routable(c job.ErrorClass) bool {
	switch c {
	case job.DeadlineExceeded, job.BudgetExhausted, job.Cancelled, job.DeadLettered:
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
	// Limits are the key's rate limits, shared by every worker through
	// one bucket per provider entry (docs/architecture.md, "Provider rate
	// limits"); absent, the key is called without a take.
	Limits *limitsDoc `json:"limits"`
}

type limitsDoc struct {
	RequestsPerMinute int64 `json:"requests_per_minute"`
	TokensPerMinute   int64 `json:"tokens_per_minute"`
}

func (l *limitsDoc) limit() job.RateLimit {
	if l == nil {
		return job.RateLimit{}
	}
	return job.RateLimit{RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute}
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
}

// priceDoc is cents per million tokens, as a provider's price page says
// it; each amount may be a JSON string or number ("300" or 300, "7.5").
type priceDoc struct {
	Input  json.Number `json:"input"`
	Output json.Number `json:"output"`
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
		return nil, nil, fmt.Errorf("not the routes document (see README, Model routes): %w", err)
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
	if l := d.Limits; l != nil && (l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 || l.limit().IsZero()) {
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
	r.Limit = p.Limits.limit()
	if g.Model == "" && p.Kind != KindFake {
		return r, fmt.Errorf("no model")
	}
	if g.MaxTokens < 0 {
		return r, fmt.Errorf("max_tokens %d below 0", g.MaxTokens)
	}
	if g.Timeout != "" {
		d, err := time.ParseDuration(g.Timeout)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("timeout %q: want a positive duration like 60s", g.Timeout)
		}
		r.Timeout = d
	}
	if g.Price.Input == "" || g.Price.Output == "" {
		return r, fmt.Errorf("price needs input and output, in cents per million tokens")
	}
	price, err := job.PricePerMillion(string(g.Price.Input), string(g.Price.Output))
	if err != nil {
		return r, fmt.Errorf("price: want cents per million tokens, at most 3 decimals: %v", err)
	}
	r.Price = price
	return r, nil
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
