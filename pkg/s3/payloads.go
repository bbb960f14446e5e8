package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	s3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/aijobs/aijobs/pkg/job"
)

// Payloads keeps the parts of a job too large for its record (the
// claim-check pattern, docs/payloads.md): a large input, a large answer,
// and what a caller uploads before the create that names it. The record
// holds the key, the size and the SHA-256 of each; the object is written
// before the record that points at it, and the bucket's lifecycle rules
// expire whatever no record points at any more.
type Payloads struct {
	c      Client
	sign   Presigner
	bucket string
}

// Presigner is the part of the S3 presign client Payloads calls: a
// caller's upload, and a poll's link to a large answer, go to S3
// directly, never through the API's 6 MB Lambda payload.
type Presigner interface {
	PresignPutObject(context.Context, *s3.PutObjectInput, ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
	PresignGetObject(context.Context, *s3.GetObjectInput, ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// NewPayloads returns the payload store on bucket, with c (NewClient's)
// for both the calls and the links.
func NewPayloads(c *s3.Client, bucket string) *Payloads {
	return &Payloads{c: c, sign: s3.NewPresignClient(c), bucket: bucket}
}

// Link is a presigned request: the method and URL to call, the headers
// the signature covers (which the caller must send as given), and when
// it stops working.
type Link struct {
	Method  string
	URL     string
	Headers http.Header
	Expires time.Time
}

// Put stores body at key with its SHA-256, which S3 checks on arrival
// (a body cut or changed in transit is refused, not stored).
func (p *Payloads) Put(ctx context.Context, key string, body []byte, contentType string) error {
	sum := sha256.Sum256(body)
	_, err := p.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String(contentType),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	if err != nil {
		return payloadsUnavailable("put", err)
	}
	return nil
}

// Get reads key, at most limit bytes: a key that does not exist is
// job.NotFound, one larger than limit job.CodeTooLarge (read no further:
// the caller bounds what it holds in memory).
func (p *Payloads) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	out, err := p.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)})
	if err != nil {
		if missing(err) {
			return nil, job.NotFound()
		}
		return nil, payloadsUnavailable("get", err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > limit {
		return nil, job.Errorf(job.CodeTooLarge, "the object is larger than %d bytes", limit)
	}
	body, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, payloadsUnavailable("get", err)
	}
	if int64(len(body)) > limit {
		return nil, job.Errorf(job.CodeTooLarge, "the object is larger than %d bytes", limit)
	}
	return body, nil
}

// Delete removes key; S3 answers a key that does not exist with success.
func (p *Payloads) Delete(ctx context.Context, key string) error {
	if _, err := p.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)}); err != nil {
		return payloadsUnavailable("delete", err)
	}
	return nil
}

// PresignPut is a link that stores exactly size bytes of contentType at
// key for ttl: the signature covers the Content-Length and Content-Type
// (X-Amz-SignedHeaders; a request whose signed headers differ fails
// SignatureDoesNotMatch: S3 API Reference, "Authenticating Requests:
// Using Query Parameters (AWS Signature Version 4)",
// docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html),
// so an upload cannot be larger than the size it was granted for. A
// presigned PUT has no content-length-range, which only POST policies
// take; kumo checks no presigned signature at all (s3_test.go).
func (p *Payloads) PresignPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (Link, error) {
	req, err := p.sign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key),
		ContentLength: aws.Int64(size), ContentType: aws.String(contentType)}, s3.WithPresignExpires(ttl))
	if err != nil {
		return Link{}, payloadsUnavailable("presign put", err)
	}
	return Link{Method: req.Method, URL: req.URL, Headers: req.SignedHeader, Expires: time.Now().Add(ttl)}, nil
}

// PresignGet is a link that reads key for ttl.
func (p *Payloads) PresignGet(ctx context.Context, key string, ttl time.Duration) (Link, error) {
	req, err := p.sign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return Link{}, payloadsUnavailable("presign get", err)
	}
	return Link{Method: req.Method, URL: req.URL, Headers: req.SignedHeader, Expires: time.Now().Add(ttl)}, nil
}

// missing reports an S3 answer that the key does not exist.
func missing(err error) bool {
	var nsk *types.NoSuchKey
	var api smithy.APIError
	return errors.As(err, &nsk) || (errors.As(err, &api) && api.ErrorCode() == "NotFound")
}

// payloadsUnavailable is any other failure: the caller may try again
// later. The message names no bucket or key.
func payloadsUnavailable(what string, err error) error {
	return &job.Error{Code: job.CodeUnavailable, Message: "the payload store is unavailable", Err: fmt.Errorf("s3: payloads: %s: %w", what, err)}
}
