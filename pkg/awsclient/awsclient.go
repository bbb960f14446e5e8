// Package awsclient builds the AWS configuration and the DynamoDB and SQS
// clients every binary uses, the same way against real AWS, kumo or
// LocalStack. It takes its settings as arguments; reading the environment
// is main's job. It does not link the SDK's default credential chain
// (aws-sdk-go-v2/config, with STS, SSO, SSO-OIDC and EC2 metadata): a
// Lambda function's credentials are in its environment (Env), and the
// binaries a person runs resolve profiles and SSO through
// pkg/awsclient/awsconfig, which the functions do not import
// (docs/benchmarks.md, "Cold start and size"). The clients only some roles
// need (Secrets Manager, DynamoDB Streams) are built by their adapters, so
// the other functions never link those SDKs.
package awsclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithymw "github.com/aws/smithy-go/middleware"
)

// Config says where AWS is. An empty Endpoint means real AWS; a set one
// means an emulator (kumo, LocalStack): it gets static dummy credentials
// (emulators accept any, and the default chain would probe EC2 metadata)
// and response checksum validation off (kumo sends no X-Amz-Crc32).
type Config struct {
	Region   string
	Endpoint string
	// Credentials sign the calls to real AWS; Load requires them when
	// Endpoint is empty. Env fills them from a Lambda's environment,
	// awsconfig.Load from the default chain.
	Credentials aws.CredentialsProvider
	// CABundle, when set, is the path of a PEM file whose certificates
	// replace the system's roots for every AWS and model call, as
	// AWS_CA_BUNDLE does for the SDK's default chain.
	CABundle string
	// Counter, when set, counts every API call by operation.
	Counter *Counter
	// CallTimeout, when set, bounds every DynamoDB, DynamoDB Streams, SQS,
	// Secrets Manager and S3 call, the SDK's retries included (a long
	// poll's wait is added): a stalled call fails instead of hanging its
	// caller.
	CallTimeout time.Duration
	// APIOptions are added to every client's middleware stack after the
	// counter's (the chaos harness injects AWS faults with them); nil in
	// every production binary.
	APIOptions []func(*smithymw.Stack) error
}

// ErrNoCredentials is Load's error for real AWS without credentials: a
// configuration mistake to report when the process starts, not at its
// first call.
var ErrNoCredentials = errors.New("no AWS credentials")

// Load builds the SDK configuration from c alone: it reads no shared
// config file and asks no metadata service, so it fails now, not at the
// first call, when real AWS has no credentials. It takes a context only
// to share its signature with Env's and awsconfig.Load's loaders. SDK
// retries stay at their default for AWS calls (they are idempotent or
// conditional); model calls never go through here.
func Load(_ context.Context, c Config) (aws.Config, error) {
	if c.Endpoint == "" && c.Credentials == nil {
		return aws.Config{}, ErrNoCredentials
	}
	hc := awshttp.NewBuildableClient()
	if c.CABundle != "" {
		roots, err := certPool(c.CABundle)
		if err != nil {
			return aws.Config{}, err
		}
		hc = hc.WithTransportOptions(func(tr *http.Transport) {
			if tr.TLSClientConfig == nil {
				tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			tr.TLSClientConfig.RootCAs = roots
		})
	}
	return Apply(aws.Config{Region: c.Region, HTTPClient: hc}, c), nil
}

// Apply puts c's endpoint, credentials and middleware on base, an already
// resolved configuration (awsconfig.Load's, from the default chain).
func Apply(base aws.Config, c Config) aws.Config {
	cfg := base
	if c.Region != "" {
		cfg.Region = c.Region
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if c.Credentials != nil {
		cfg.Credentials = c.Credentials
	}
	if c.Endpoint != "" {
		cfg.BaseEndpoint = aws.String(c.Endpoint)
		cfg.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	}
	// A fresh slice: base's may be shared with another configuration.
	cfg.APIOptions = append([]func(*smithymw.Stack) error(nil), base.APIOptions...)
	if c.Counter != nil {
		cfg.APIOptions = append(cfg.APIOptions, c.Counter.middleware)
	}
	if c.CallTimeout > 0 {
		cfg.APIOptions = append(cfg.APIOptions, deadline(c.CallTimeout))
	}
	cfg.APIOptions = append(cfg.APIOptions, c.APIOptions...)
	return cfg
}

// certPool reads a CA bundle as the SDK does: its certificates alone are
// trusted.
func certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("aws CA bundle: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("aws CA bundle %s: no PEM certificate in it", path)
	}
	return roots, nil
}

// DynamoDB builds a DynamoDB client for cfg. Each client resolves a
// retryer of its own (cfg sets none, or a constructor), so each has its
// own retry quota: two clients built here never stop each other's
// retries.
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
