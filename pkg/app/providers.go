package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
)

// newProviders builds the provider table's entries, once per process:
// keys named by api_key_secret are read from Secrets Manager here (a cold
// start), and entries the options replace are not built at all.
func newProviders(ctx context.Context, cfg config.Config, awsCfg aws.Config, o Options) (map[string]model.Provider, error) {
	out := map[string]model.Provider{}
	var secrets *secretsmanager.Reader
	var bedrockAWS *aws.Config
	for name, pc := range cfg.Providers {
		if p, ok := o.Providers[name]; ok {
			out[name] = p
			continue
		}
		if o.EveryProvider != nil {
			out[name] = o.EveryProvider
			continue
		}
		if pc.APIKeySecret != "" {
			if secrets == nil {
				secrets = secretsmanager.New(awsclient.SecretsManager(awsCfg))
			}
			key, err := secrets.String(ctx, pc.APIKeySecret)
			if err != nil {
				return nil, fmt.Errorf("app: provider %s: api key: %w", name, err)
			}
			pc.APIKey = key
		}
		if pc.Kind == config.KindBedrock && bedrockAWS == nil {
			// Bedrock is real AWS even when the table and queues are an
			// emulator's: its own configuration, the default credential
			// chain, no emulator endpoint.
			c, err := awsclient.Load(ctx, awsclient.Config{Region: cfg.Region})
			if err != nil {
				return nil, fmt.Errorf("app: provider %s: %w", name, err)
			}
			bedrockAWS = &c
		}
		p, err := newProvider(pc, cfg, modelHTTPClient(awsCfg, o.ModelTransport), bedrockAWS)
		if err != nil {
			return nil, fmt.Errorf("app: provider %s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

func newProvider(pc config.ProviderSpec, cfg config.Config, hc *http.Client, bedrockAWS *aws.Config) (model.Provider, error) {
	switch pc.Kind {
	case config.KindFake:
		// The fake's invoice (fake.Billed) prices its calls at
		// AIJOBS_PRICE_INPUT/OUTPUT (the shortcut's price), whichever routes
		// name it; tests compare that invoice with the record, so a route
		// over the fake should carry the same price.
		return fake.New(fake.Config{Latency: pc.Latency, Price: cfg.Shortcut.Price}), nil
	case config.KindOpenAI:
		return openai.New(openai.Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Stream: pc.Stream, HTTPClient: hc})
	case config.KindAnthropic:
		return anthropic.New(anthropic.Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Stream: pc.Stream, HTTPClient: hc})
	case config.KindBedrock:
		return bedrock.New(bedrock.Config{AWS: *bedrockAWS, Region: pc.Region, Endpoint: pc.Endpoint, Stream: pc.Stream})
	}
	return nil, fmt.Errorf("kind %q is not built into this binary", pc.Kind)
}
