// Package s3 is aijobs' two uses of Amazon S3. The parking lot
// (pkg/parking, Lot): a worker whose finishing writes DynamoDB keeps
// refusing parks the paid outcome here, in another service, and whoever
// finds the attempt dead reads it back. Objects are small (an outcome and
// its result) and short lived: read once, deleted once settled, expired
// by the bucket's lifecycle rule otherwise (docs/deploy.md). S3 is
// strongly consistent for a read after a write (the S3 user guide,
// "Amazon S3 data consistency model"), so an outcome parked before the
// attempt's lease ends is seen by anyone who looks after it. And the
// payload store (Payloads, payloads.go): what does not fit a job's
// record.
package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aijobs/aijobs/pkg/job"
)

// Client is the part of the S3 API the lot calls.
type Client interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// NewClient builds an S3 client for cfg (pkg/awsclient.Load's). Against an
// emulator (an endpoint set) it addresses buckets by path, since a bucket
// name as a subdomain of 127.0.0.1 resolves nowhere, and skips response
// checksums, as the DynamoDB client does for kumo.
func NewClient(cfg aws.Config) *s3.Client {
	local := cfg.BaseEndpoint != nil
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if local {
			o.UsePathStyle = true
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
}

// Lot keeps parked outcomes in one bucket.
type Lot struct {
	c      Client
	bucket string
}

// New returns the lot in bucket.
func New(c Client, bucket string) *Lot { return &Lot{c: c, bucket: bucket} }

// maxObject bounds what Get reads: an outcome is at most a record's size
// (DynamoDB's 400 KB), so anything far larger is not one of ours.
const maxObject = 4 << 20

// Put stores body at key.
func (l *Lot) Put(ctx context.Context, key string, body []byte) error {
	_, err := l.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(l.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String("application/json")})
	if err != nil {
		return unavailable("put", err)
	}
	return nil
}

// Get reads key; a key that does not exist is job.NotFound.
func (l *Lot) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := l.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(l.bucket), Key: aws.String(key)})
	if err != nil {
		if missing(err) {
			return nil, job.NotFound()
		}
		return nil, unavailable("get", err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxObject))
	if err != nil {
		return nil, unavailable("get", err)
	}
	return body, nil
}

// Delete removes key; S3 answers a key that does not exist with success.
func (l *Lot) Delete(ctx context.Context, key string) error {
	if _, err := l.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(l.bucket), Key: aws.String(key)}); err != nil {
		return unavailable("delete", err)
	}
	return nil
}

// unavailable is any other failure: the caller may try again later. The
// message names no bucket or key.
func unavailable(what string, err error) error {
	return &job.Error{Code: job.CodeUnavailable, Message: "the parking lot is unavailable", Err: fmt.Errorf("s3: %s: %w", what, err)}
}
