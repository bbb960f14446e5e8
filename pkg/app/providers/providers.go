// Package providers builds the model providers a configuration names and,
// on them, the handlers of the two roles that call models: the worker's
// and the batch lane's collector's. It is the one package that links the
// provider SDKs and clients (OpenAI-compatible, Anthropic, Bedrock, the
// fake), so only those two functions (and the dev server) carry them
// (docs/benchmarks.md, "Cold start and size").
package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/aijobs/aijobs/pkg/app/lot"
	"github.com/aijobs/aijobs/pkg/app/roles"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/collector"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/s3"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
)

// Options are what tests and tools change about the providers.
type Options struct {
	// Replace replaces the configured providers of the same names; Every,
	// when set, replaces every one of them.
	Replace map[string]model.Provider
	Every   model.Provider
	// Transport, when set, wraps the HTTP transport of the HTTP model
	// providers (the chaos harness observes what each call received).
	Transport func(http.RoundTripper) http.RoundTripper
	// Only, when not nil, names the only providers built: the collector's
	// (NewCollector), so that it reads no key its lanes do not use.
	Only []string
}

// WorkerHandler is the worker function's role: its providers as
// configured, and the worker over them.
func WorkerHandler(ctx context.Context, b *roles.Base) (any, error) {
	p, err := New(ctx, b, Options{})
	if err != nil {
		return nil, err
	}
	return b.Worker(p, lot.New(b)).Handle, nil
}

// CollectorHandler is the collector function's role (docs/architecture.md,
// "The batch lane"): the providers the routes' batch lanes call, the
// collector over them, and one collector run per scheduled invocation.
// A failed run is the invocation's error, so Lambda counts it in the
// function's Errors (the CollectorErrors alarm); the next run carries on
// from the batch records. Without a batch lane there is nothing to
// collect, and the function fails at init rather than run idle.
func CollectorHandler(ctx context.Context, b *roles.Base) (any, error) {
	c, _, err := NewCollector(ctx, b, Options{})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("collector: no route offers a batch lane, so there is nothing to collect")
	}
	return func(ctx context.Context) error { return c.Run(ctx) }, nil
}

// NewCollector builds the providers the routes' batch lanes call
// (job.BatchLaneProviders), and no other, so the collector reads only
// their keys, and the collector over them; nil when no route offers a
// batch lane. o's replacements apply as for New.
func NewCollector(ctx context.Context, b *roles.Base, o Options) (*collector.Collector, map[string]model.Provider, error) {
	names := job.BatchLaneProviders(b.Config.Routes)
	if len(names) == 0 {
		return nil, nil, nil
	}
	o.Only = names
	p, err := New(ctx, b, o)
	if err != nil {
		return nil, nil, err
	}
	return Collector(b, p), p, nil
}

// Collector is the batch lane's collector over providers, its batch
// records on the buckets table; nil when no route offers a batch lane.
// The dev server's collector shares the worker's providers.
func Collector(b *roles.Base, providers map[string]model.Provider) *collector.Collector {
	if !job.AnyBatchLane(b.Config.Routes) {
		return nil
	}
	s := b.Config.Settings
	// A nil *emf.Writer in the interface would not be nil: metrics off
	// leave it unset, and the collector counts into nothing.
	var m collector.Metrics
	if b.Metrics != nil {
		m = b.Metrics
	}
	// The next run reaches a job up to a period and a run's longest time
	// after this one: a job must be handed back before that.
	cfg := collector.Config{Store: b.Store, Batches: dynamodb.NewBatches(b.DynamoDB, b.Config.BucketsTable), Queue: b.Queue,
		Providers: providers, Routes: b.Config.Routes, Clock: b.Clock, Retention: s.Retention, Logger: b.Logger,
		Every: s.CollectEvery + s.CollectorTimeout, Metrics: m}
	if b.Quarantines != nil { // a nil *Quarantines in the interface would not be nil
		cfg.Quarantine, cfg.QuarantineFor = b.Quarantines, s.QuarantineFor
	}
	return collector.New(cfg)
}

// New builds the provider table's entries, once per process: keys named
// by api_key_secret are read from Secrets Manager here (a cold start), and
// entries the options replace, or leave out (Only), are not built at all.
func New(ctx context.Context, b *roles.Base, o Options) (map[string]model.Provider, error) {
	cfg := b.Config
	out := map[string]model.Provider{}
	var secrets *secretsmanager.Reader
	var bedrockAWS *aws.Config
	for name, pc := range cfg.Providers {
		if o.Only != nil && !slices.Contains(o.Only, name) {
			continue
		}
		if p, ok := o.Replace[name]; ok {
			out[name] = p
			continue
		}
		if o.Every != nil {
			out[name] = o.Every
			continue
		}
		if pc.APIKeySecret != "" {
			if secrets == nil {
				secrets = secretsmanager.New(secretsmanager.NewClient(b.AWS))
			}
			key, err := secrets.String(ctx, pc.APIKeySecret)
			if err != nil {
				return nil, fmt.Errorf("app: provider %s: api key: %w", name, err)
			}
			pc.APIKey = key
		}
		if pc.Kind == config.KindBedrock && bedrockAWS == nil {
			// Bedrock is real AWS even when the table and queues are an
			// emulator's: its own configuration, real credentials (the
			// function's environment, or the default chain in the dev
			// server and tests), no emulator endpoint.
			c, err := b.LoadAWS(ctx, awsclient.Config{Region: cfg.Region})
			if err != nil {
				return nil, fmt.Errorf("app: provider %s: %w", name, err)
			}
			bedrockAWS = &c
		}
		var batch *bedrock.Batch
		if slices.Contains(cfg.BedrockBatchProviders(), name) {
			batch = batchOf(b, cfg, pc, *bedrockAWS)
		}
		p, err := newProvider(pc, cfg, modelHTTPClient(b.AWS, o.Transport), bedrockAWS, batch)
		if err != nil {
			return nil, fmt.Errorf("app: provider %s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

// newProvider builds entry pc; bedrockAWS and batch are a bedrock
// entry's configuration and where its batches go (nil: it takes none).
func newProvider(pc config.ProviderSpec, cfg config.Config, hc *http.Client, bedrockAWS *aws.Config, batch *bedrock.Batch) (model.Provider, error) {
	switch pc.Kind {
	case config.KindFake:
		// The fake's invoice (fake.Billed) prices its calls at
		// AIJOBS_PRICE_INPUT/OUTPUT (the shortcut's price), whichever routes
		// name it; tests compare that invoice with the record, so a route
		// over the fake should carry the same price.
		return fake.New(fake.Config{Latency: pc.Latency, Price: cfg.Shortcut.Price}), nil
	case config.KindOpenAI:
		return openai.New(openai.Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Stream: pc.Stream, Background: pc.Background, PollEvery: pc.PollEvery, MaxTokensField: pc.MaxTokensField, HTTPClient: hc})
	case config.KindAnthropic:
		return anthropic.New(anthropic.Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Stream: pc.Stream, HTTPClient: hc})
	case config.KindBedrock:
		return bedrock.New(bedrock.Config{AWS: *bedrockAWS, Region: pc.Region, Endpoint: pc.Endpoint, Stream: pc.Stream, Batch: batch})
	}
	return nil, fmt.Errorf("kind %q is not built into this binary", pc.Kind)
}

// CreateBatchBucket makes the Bedrock batch lane's bucket on the emulator
// when a bedrock rung offers a batch lane, as the dev server and the tests
// do; a deployment gets it from the stack (docs/deploy.md).
func CreateBatchBucket(ctx context.Context, b *roles.Base) error {
	if len(b.Config.BedrockBatchProviders()) == 0 {
		return nil
	}
	return s3.CreateBucket(ctx, s3.NewClient(b.AWS), b.Config.BatchBucket)
}

// batchOf is where bedrock entry pc's batches go: the batch bucket, in
// Bedrock's region on Bedrock's credentials, or on the emulator when pc
// names a local Bedrock (an endpoint: the tests' bedrocktest server,
// which reads and writes the emulator's S3).
func batchOf(b *roles.Base, cfg config.Config, pc config.ProviderSpec, bedrockAWS aws.Config) *bedrock.Batch {
	objects := bedrockAWS.Copy()
	if pc.Region != "" {
		objects.Region = pc.Region
	}
	if pc.Endpoint != "" {
		objects = b.AWS
	}
	return &bedrock.Batch{Bucket: cfg.BatchBucket, RoleARN: cfg.BatchRoleARN, Objects: s3.NewClient(objects)}
}

// modelHTTPClient is the client for model providers: the SDK's transport
// (it honours AWS_CA_BUNDLE and proxies like every AWS call), wrapped by
// wrap when set (the chaos harness's ModelTransport), with no overall
// timeout (each call's context bounds it) and, as every provider's, no
// redirects (model.NoRedirects).
func modelHTTPClient(awsCfg aws.Config, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	t := http.DefaultTransport
	if b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		t = b.GetTransport()
	}
	if wrap != nil {
		t = wrap(t)
	}
	return model.NoRedirects(&http.Client{Transport: t})
}
