package s3

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// CreateBucket makes the parking bucket if it does not exist, as the dev
// server and the tests do on an emulator; a deployment gets it from the
// stack, with its lifecycle rule and encryption (docs/deploy.md).
func CreateBucket(ctx context.Context, c *s3.Client, name string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if r := c.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := c.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("s3: create bucket %s: %w", name, err)
	}
	return nil
}
