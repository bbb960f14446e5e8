package secretsmanager

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// CreateClient is the part of the API EnsureString calls.
type CreateClient interface {
	Client
	CreateSecret(context.Context, *sm.CreateSecretInput, ...func(*sm.Options)) (*sm.CreateSecretOutput, error)
}

// EnsureString returns the secret id's value, creating the secret with
// make()'s value when it does not exist: the dev server's first run makes
// its webhook signing secret this way (in AWS the stack creates it). created
// says which happened.
func EnsureString(ctx context.Context, c CreateClient, id string, make func() string) (value string, created bool, err error) {
	v, err := New(c).String(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return v, false, err
	}
	v = make()
	_, err = c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(v)})
	var exists *types.ResourceExistsException
	if errors.As(err, &exists) { // another process made it first
		v, err = New(c).String(ctx, id)
		return v, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("secretsmanager: create secret %s: %w", id, err)
	}
	return v, true, nil
}
