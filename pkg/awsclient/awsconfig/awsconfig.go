// Package awsconfig resolves the AWS configuration through the SDK's
// default chain (environment, shared config and credentials files and
// their profiles, SSO, web identity, container and EC2 metadata), for the
// binaries a person runs (the CLI, the dev server) and the tests. It is
// the one package that imports aws-sdk-go-v2/config, which links STS, SSO
// and SSO-OIDC: the Lambda functions, whose credentials are in their
// environment, load theirs with awsclient.Env instead and do not link it
// (docs/benchmarks.md, "Cold start and size").
package awsconfig

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/aijobs/aijobs/pkg/awsclient"
)

// Load resolves credentials, region and the SDK's other settings
// (AWS_CA_BUNDLE, retry mode, profile options) from the default chain,
// then applies c as awsclient.Load does: c's region wins, an emulator
// endpoint gets dummy credentials. c.CABundle is not read: the chain
// reads AWS_CA_BUNDLE itself.
func Load(ctx context.Context, c awsclient.Config) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	base, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	return awsclient.Apply(base, c), nil
}
