// Package awsclient builds the AWS configuration and the DynamoDB and SQS
// clients every binary uses, the same way against real AWS, kumo or
// LocalStack. It takes its settings as arguments; reading the environment
// is main's job. The clients only some roles need (Secrets Manager,
// DynamoDB Streams) are built by their adapters, so the other functions
// never link those SDKs.
package awsclient

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithymw "github.com/aws/smithy-go/middleware"
)

// Config says where AWS is. An empty Endpoint means real AWS; a set one
// means an emulator (kumo, LocalStack): it gets static dummy credentials
// (emulators accept any, and the default chain would probe EC2 metadata)
// and response checksum validation off (kumo sends no X-Amz-Crc32).
type Config struct {
	Region   string
	Endpoint string
	// Counter, when set, counts every API call by operation.
	Counter *Counter
	// CallTimeout, when set, bounds every DynamoDB, DynamoDB Streams, SQS
	// and Secrets Manager call, the SDK's retries included (a long poll's wait is
	// added): a stalled call fails instead of hanging its caller.
	CallTimeout time.Duration
	// APIOptions are added to every client's middleware stack after the
	// counter's (the chaos harness injects AWS faults with them); nil in
	// every production binary.
	APIOptions []func(*smithymw.Stack) error
}

// Load resolves the SDK configuration: credentials and region from the usual
// chain, endpoint from c. SDK retries stay at their default for AWS calls
// (they are idempotent or conditional); model calls never go through here.
func Load(ctx context.Context, c Config) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if c.Endpoint != "" {
		cfg.BaseEndpoint = aws.String(c.Endpoint)
		cfg.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	}
	if c.Counter != nil {
		cfg.APIOptions = append(cfg.APIOptions, c.Counter.middleware)
	}
	if c.CallTimeout > 0 {
		cfg.APIOptions = append(cfg.APIOptions, deadline(c.CallTimeout))
	}
	cfg.APIOptions = append(cfg.APIOptions, c.APIOptions...)
	return cfg, nil
}

// DynamoDB builds a DynamoDB client for cfg.
func DynamoDB(cfg aws.Config) *dynamodb.Client {
	local := cfg.BaseEndpoint != nil
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if local {
			o.DisableValidateResponseChecksum = true
		}
	})
}

// SQS builds an SQS client for cfg.
func SQS(cfg aws.Config) *sqs.Client { return sqs.NewFromConfig(cfg) }

// STS is the STS client (the caller's identity, for the console's action log).
func STS(cfg aws.Config) *sts.Client { return sts.NewFromConfig(cfg) }
