package awsclient

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Env returns the loader of a Lambda function: Load, with what c leaves
// unset taken from getenv, the function's environment. Lambda puts the
// execution role's credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
// and AWS_SESSION_TOKEN and the function's region in AWS_REGION (AWS
// Lambda Developer Guide, "Defined runtime environment variables"), which
// is where the SDK's default chain finds them there too: as static
// credentials, which Lambda renews by starting new environments, not by a
// refresh the chain would do. AWS_CA_BUNDLE is honoured as the chain
// does. Without an emulator endpoint, missing credentials are an error
// now, when the function starts.
func Env(getenv func(string) string) func(context.Context, Config) (aws.Config, error) {
	return func(ctx context.Context, c Config) (aws.Config, error) {
		if c.Region == "" {
			c.Region = getenv("AWS_REGION")
		}
		if c.CABundle == "" {
			c.CABundle = getenv("AWS_CA_BUNDLE")
		}
		if c.Credentials == nil && c.Endpoint == "" {
			creds, err := envCredentials(getenv)
			if err != nil {
				return aws.Config{}, err
			}
			c.Credentials = creds
		}
		return Load(ctx, c)
	}
}

// envCredentials are the credentials in getenv, named (never shown) when
// one is missing.
func envCredentials(getenv func(string) string) (aws.CredentialsProvider, error) {
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	var missing []string
	if id == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID")
	}
	if secret == "" {
		missing = append(missing, "AWS_SECRET_ACCESS_KEY")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %v unset in the environment (Lambda sets them from the function's role)", ErrNoCredentials, missing)
	}
	return credentials.StaticCredentialsProvider{
		Value:  aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: getenv("AWS_SESSION_TOKEN"), Source: "EnvConfigCredentials"},
		Source: []aws.CredentialSource{aws.CredentialSourceEnvVars},
	}, nil
}
