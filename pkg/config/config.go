// Package config turns environment variables into the settings every binary
// runs with. It is the only package that reads the environment, and it
// reads it through an injected lookup, so tests never touch the process's
// environment. Every variable is declared once, in vars, which also renders
// docs/configuration.md's table (a test keeps the two in step); the
// defaults of the deployment's numbers come from settings.Defaults().
package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// Shortcut is the single-provider configuration: when AIJOBS_ROUTES is unset,
// these variables describe the one `default` route and its provider.
type Shortcut struct {
	// Kind is "fake" or "openai".
	Kind    string
	BaseURL string
	// APIKey is a secret: it is never logged or printed.
	APIKey string
	Model  string
	Stream bool
	Price  job.Price
	// Prices is the per-model price table; the route's model is priced
	// from it when it is listed there, else from Price.
	Prices  map[string]job.Price
	Timeout time.Duration
	// FakeLatency is the fake provider's delay per call.
	FakeLatency time.Duration
}

// Config is everything a binary needs to start.
type Config struct {
	Settings settings.Settings
	Region   string
	// Endpoint is AWS_ENDPOINT_URL: kumo, LocalStack, or empty for AWS.
	Endpoint string
	Table    string
	QueueURL string
	DLQURL   string
	// ParkBucket is the parking lot's S3 bucket (pkg/parking).
	ParkBucket string
	// PayloadBucket is the payload store's S3 bucket: the inputs and
	// answers too large for a record, and uploads (docs/payloads.md).
	PayloadBucket string
	// BatchBucket and BatchRoleARN are where a Bedrock batch lane's
	// batches go: the bucket holding their input and output, and the
	// service role Bedrock assumes to read and write it.
	BatchBucket  string
	BatchRoleARN string
	// QuarantineTable is the quarantine table (job.Quarantine).
	QuarantineTable string
	// BucketsTable is the providers' rate-limit buckets (job.Bucket),
	// used when a provider entry declares limits.
	BucketsTable string
	// BucketPartRPM is the requests a minute one part of a key's bucket
	// carries (job.RateLimit.Parts).
	BucketPartRPM int
	// TenantsTable is the tenants table: which versions of each tenant's
	// webhook signing key are in use (docs/webhooks.md).
	TenantsTable string
	// CallbackQueueURL and CallbackDLQURL are the notifier's queues;
	// WebhookSecretID names its signing secrets; Callbacks says whether a
	// create may ask for a callback at all.
	CallbackQueueURL string
	CallbackDLQURL   string
	WebhookSecretID  string
	Callbacks        bool
	Listen           string
	LogLevel         string
	// Metrics is "emf" or "off".
	Metrics string
	// RoutesJSON is AIJOBS_ROUTES as given (empty when unset).
	RoutesJSON string
	// InFlightText is AIJOBS_TENANT_IN_FLIGHT as given, and InFlight what
	// it says.
	InFlightText string
	InFlight     TenantLimits
	// QueuedText is AIJOBS_TENANT_QUEUED as given, and Queued what it
	// says.
	QueuedText string
	Queued     TenantLimits
	// SpendText is AIJOBS_TENANT_SPEND as given, and Spend what it says.
	SpendText string
	Spend     SpendLimits
	// SpendAlarmShare is AIJOBS_SPEND_ALARM_SHARE: the share of a
	// tenant's limit whose passing the worker counts (SpendShareReached).
	SpendAlarmShare float64
	// Shortcut is the single-provider shortcut the variables describe.
	Shortcut Shortcut

	// Providers and Routes are what the worker runs: from
	// AIJOBS_ROUTES, or from Shortcut as one `default` route whose
	// provider is named `default`.
	Providers map[string]ProviderSpec
	Routes    map[string]job.Route
}

// Var is one environment variable: its name, its default as shown to a
// user, what it means, and how it is applied.
type Var struct {
	Name string
	// Default is the text Load applies when the variable is unset. For a
	// variable that sets a settings field it is written from that field's
	// value in settings.Defaults(), never stated here a second time.
	Default string
	Doc     string
	set     func(c *Config, v string) error
}

// Vars lists every variable, in documentation order.
func Vars() []Var { return vars }

// Load reads the configuration through getenv (os.Getenv in a main).
func Load(getenv func(string) string) (Config, error) {
	c := Config{Settings: settings.Defaults()}
	var errs []string
	for _, v := range vars {
		val := getenv(v.Name)
		if val == "" {
			val = v.Default
		}
		if val == "" {
			continue
		}
		if err := v.set(&c, val); err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", v.Name, redact(v.Name, val), err))
		}
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	if c.Shortcut.Kind == "" {
		c.Shortcut.Kind = "fake"
		if c.Shortcut.BaseURL != "" {
			c.Shortcut.Kind = "openai"
		}
	}
	if c.Shortcut.Kind != "fake" && c.Shortcut.Kind != "openai" {
		return Config{}, fmt.Errorf("config: AIJOBS_MODEL_PROVIDER=%q: want fake or openai", c.Shortcut.Kind)
	}
	if c.Shortcut.Kind == "openai" && c.Shortcut.BaseURL == "" {
		return Config{}, fmt.Errorf("config: the openai provider needs OPENAI_BASE_URL")
	}
	if c.Metrics != "emf" && c.Metrics != "off" {
		return Config{}, fmt.Errorf("config: AIJOBS_METRICS=%q: want emf or off", c.Metrics)
	}
	if c.Shortcut.Timeout == 0 {
		c.Shortcut.Timeout = c.Settings.RouteTimeout
	}
	if p, ok := c.Shortcut.Prices[c.Shortcut.Model]; ok && c.Shortcut.Kind == "openai" {
		c.Shortcut.Price = p
	}
	var err error
	if c.RoutesJSON == "" {
		c.Providers, c.Routes = c.Shortcut.table()
	} else if c.Providers, c.Routes, err = parseRoutes(c.RoutesJSON, getenv, c.Shortcut.Timeout); err != nil {
		return Config{}, fmt.Errorf("config: AIJOBS_ROUTES: %w", err)
	}
	if c.InFlight, err = parseTenantLimits(c.InFlightText); err != nil {
		return Config{}, fmt.Errorf("config: AIJOBS_TENANT_IN_FLIGHT: %w", err)
	}
	if c.Queued, err = parseTenantLimits(c.QueuedText); err != nil {
		return Config{}, fmt.Errorf("config: AIJOBS_TENANT_QUEUED: %w", err)
	}
	if c.Spend, err = parseSpendLimits(c.SpendText); err != nil {
		return Config{}, fmt.Errorf("config: AIJOBS_TENANT_SPEND: %w", err)
	}
	if _, ok := c.Routes[c.Settings.Limits.DefaultModel]; !ok {
		return Config{}, fmt.Errorf("config: AIJOBS_ROUTES: no %q route (the model of a job that names none)", c.Settings.Limits.DefaultModel)
	}
	c.Settings.Limits.Models = sortedKeys(c.Routes)
	c.Settings.RouteTimeout = 0
	for _, r := range c.Routes {
		c.Settings.RouteTimeout = max(c.Settings.RouteTimeout, r.Timeout())
	}
	c.nameDefaults()
	if c.BatchRoleARN == "" && len(c.BedrockBatchProviders()) > 0 {
		return Config{}, fmt.Errorf("config: a bedrock rung offers a batch lane: AIJOBS_BATCH_ROLE_ARN must name the role Bedrock assumes to read and write AIJOBS_BATCH_BUCKET")
	}
	if err := c.Settings.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// BedrockBatchProviders are the bedrock entries a batch lane calls: the
// ones that need the batch bucket and role.
func (c Config) BedrockBatchProviders() []string {
	var out []string
	for _, name := range job.BatchLaneProviders(c.Routes) {
		if c.Providers[name].Kind == KindBedrock {
			out = append(out, name)
		}
	}
	return out
}

// nameDefaults names each resource left unnamed after the deployment's
// prefix, as the dev server creates it.
func (c *Config) nameDefaults() {
	for _, d := range []struct {
		v    *string
		name string
	}{
		{&c.Table, c.Settings.TableName()}, {&c.ParkBucket, c.Settings.ParkBucketName()}, {&c.PayloadBucket, c.Settings.PayloadBucketName()},
		{&c.BatchBucket, c.Settings.BatchBucketName()},
		{&c.TenantsTable, c.Settings.TenantsTableName()}, {&c.QuarantineTable, c.Settings.QuarantineTableName()},
		{&c.BucketsTable, c.Settings.BucketsTableName()}, {&c.WebhookSecretID, c.Settings.WebhookSecretName()},
	} {
		if *d.v == "" {
			*d.v = d.name
		}
	}
}

// table is the shortcut's one `default` route, on a provider named
// `default`.
func (p Shortcut) table() (map[string]ProviderSpec, map[string]job.Route) {
	pc := ProviderSpec{Kind: p.Kind, BaseURL: p.BaseURL, APIKey: p.APIKey, Stream: p.Stream, Latency: p.FakeLatency}
	model := p.Model
	if p.Kind == KindFake {
		model = "fake"
	}
	rung := job.Rung{Provider: "default", Model: model, Price: cacheRates(p.Kind, model, p.Price), Timeout: p.Timeout,
		Limit: (*limitsDoc)(nil).limit(p.Kind), FixedTemperature: fixedTemperature(p.Kind, model), Reasons: reasons(p.Kind, model),
		NoTemperature: noTemperature(p.Kind, model), Takes: takes(p.Kind, model, false), Embeds: embeds(p.Kind, model, false)}
	return map[string]ProviderSpec{"default": pc}, map[string]job.Route{"default": {Rungs: []job.Rung{rung}}}
}

func redact(name, v string) string {
	if strings.Contains(name, "KEY") || strings.Contains(name, "SECRET") || strings.Contains(name, "TOKEN") {
		return "<redacted>"
	}
	return v
}

// priceTable reads "model=input:output,..." in cents per million tokens.
func priceTable(c *Config, v string) error {
	c.Shortcut.Prices = map[string]job.Price{}
	for _, entry := range strings.Split(v, ",") {
		name, prices, ok := strings.Cut(strings.TrimSpace(entry), "=")
		in, out, ok2 := strings.Cut(prices, ":")
		if !ok || !ok2 || name == "" {
			return fmt.Errorf("want model=input:output[,model=input:output], got %q", entry)
		}
		p, err := job.PricePerMillion(in, out)
		if err != nil {
			return fmt.Errorf("%s: want cents per million tokens, at most 3 decimals: %w", name, err)
		}
		c.Shortcut.Prices[name] = p
	}
	return nil
}

func price(out bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		p, err := job.PricePerMillion(v, v)
		if err != nil {
			return fmt.Errorf("want cents per million tokens, at most 3 decimals: %w", err)
		}
		if out {
			c.Shortcut.Price.OutputPerToken = p.OutputPerToken
		} else {
			c.Shortcut.Price.InputPerToken = p.InputPerToken
		}
		return nil
	}
}

// RateLimited reports whether any rung's calls take from a bucket of the
// buckets table: every keyed provider's do (their limits learned from
// the answers, if not declared), and the fake's when it declares limits.
func (c Config) RateLimited() bool {
	for _, r := range c.Routes {
		for _, g := range r.Rungs {
			if g.Limit.Bucket(g.Provider, g.Model) != "" {
				return true
			}
		}
	}
	return false
}

// SharedLimits reports whether workers share limits through the buckets
// table: a provider declares rate limits, or tenants have a limit in
// flight or queued, or a spend limit.
func (c Config) SharedLimits() bool {
	return c.RateLimited() || c.InFlight.Any() || c.Queued.Any() || c.Spend.Any()
}
