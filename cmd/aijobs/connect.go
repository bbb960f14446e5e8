package main

import (
	"context"

	"github.com/aijobs/aijobs/pkg/client"
)

// userAgent names the CLI in the API's access logs.
const userAgent = "aijobs-cli"

// connect is the prelude of every command that calls the API: the output
// format, then the client, so a bad --output is refused before any
// credential is looked at.
func (c *cli) connect(ctx context.Context) (format string, cl *client.Client, err error) {
	if format, err = c.format(); err != nil {
		return "", nil, err
	}
	cl, err = c.client(ctx)
	return format, cl, err
}

// client builds the API client from the global flags and the environment:
// --endpoint or AIJOBS_ENDPOINT; --sigv4 (credentials and region from the
// AWS config) or --token / AIJOBS_TOKEN (bearer). Every refusal is a usage
// or configuration error (exit 2), and none shows a credential.
func (c *cli) client(ctx context.Context) (*client.Client, error) {
	endpoint := c.g.endpoint
	if endpoint == "" {
		endpoint = c.env.getenv("AIJOBS_ENDPOINT")
	}
	if endpoint == "" {
		return nil, usageErrorf("no endpoint: give --endpoint or set AIJOBS_ENDPOINT")
	}
	cfg := client.Config{BaseURL: endpoint, UserAgent: userAgent, HTTP: c.env.http, Now: c.env.now, Sleep: c.env.sleep}
	switch {
	case c.g.sigv4 && c.g.token != "":
		return nil, usageErrorf("--token and --sigv4 exclude each other")
	case c.g.sigv4:
		auth, doer, err := c.sigv4(ctx)
		if err != nil {
			return nil, err
		}
		cfg.Auth = auth
		if cfg.HTTP == nil {
			cfg.HTTP = doer
		}
	case c.g.region != "":
		return nil, usageErrorf("--region goes with --sigv4")
	default:
		token := c.g.token
		if token == "" {
			token = c.env.getenv("AIJOBS_TOKEN")
		}
		if token != "" {
			cfg.Auth = client.BearerToken(token)
		}
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return cl, nil
}

// sigv4 loads the AWS configuration and checks that it has credentials
// now, so a missing profile is a configuration error (exit 2), not a
// failure of the first request. The SDK's HTTP client is used when the
// configuration made one (it honours AWS_CA_BUNDLE).
func (c *cli) sigv4(ctx context.Context) (client.Authorizer, client.Doer, error) {
	awsCfg, err := c.env.loadAWS(ctx, c.g.region)
	if err != nil {
		return nil, nil, usageErrorf("load the AWS config: %v", err)
	}
	if awsCfg.Region == "" {
		return nil, nil, usageErrorf("--sigv4 needs a region: give --region or set AWS_REGION (or a profile's region)")
	}
	if awsCfg.Credentials == nil {
		return nil, nil, usageErrorf("--sigv4: the AWS config has no credentials")
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return nil, nil, usageErrorf("--sigv4: no AWS credentials: %v", err)
	}
	var doer client.Doer // nil: the client's default
	if awsCfg.HTTPClient != nil {
		doer = awsCfg.HTTPClient
	}
	return client.SigV4{Region: awsCfg.Region, Credentials: awsCfg.Credentials}, doer, nil
}
