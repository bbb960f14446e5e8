// Package secretsmanager reads provider API keys from AWS Secrets Manager,
// so a deployed worker gets its keys at start from a secret its role may
// read, never from its environment or the template. A key is fetched once
// per process (a Lambda cold start), not per call.
package secretsmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// Client is the part of the Secrets Manager API the reader calls.
type Client interface {
	GetSecretValue(context.Context, *sm.GetSecretValueInput, ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
}

// Reader reads secret strings.
type Reader struct{ c Client }

// NewClient builds a Secrets Manager client for cfg (pkg/awsclient.Load's).
func NewClient(cfg aws.Config) *sm.Client { return sm.NewFromConfig(cfg) }

// New returns a reader over c.
func New(c Client) *Reader { return &Reader{c: c} }

// ErrNotFound is a secret that does not exist (or that the caller may not
// know exists).
var ErrNotFound = errors.New("secretsmanager: no such secret")

// String returns the current string value of the secret id (a name or an
// ARN), trimmed of surrounding whitespace: a key pasted into the console
// with a newline still works. The value never appears in an error.
func (r *Reader) String(ctx context.Context, id string) (string, error) {
	out, err := r.c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return "", fmt.Errorf("secret %s: %w", id, ErrNotFound)
		}
		return "", fmt.Errorf("secretsmanager: get secret %s: %w", id, err)
	}
	v := strings.TrimSpace(aws.ToString(out.SecretString))
	if v == "" {
		return "", fmt.Errorf("secretsmanager: secret %s has no string value", id)
	}
	return v, nil
}
