package s3_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/s3"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestLot parks, reads back and deletes an outcome on the emulator's S3,
// and tells a key never parked (NotFound) from a lot that cannot be read
// (Unavailable: a bucket that does not exist).
func TestLot(t *testing.T) {
	c := s3.NewClient(awstest.Config(t, nil))
	bucket := awstest.Prefix(t) + "-parked"
	if err := s3.CreateBucket(t.Context(), c, bucket); err != nil {
		t.Fatal(err)
	}
	if err := s3.CreateBucket(t.Context(), c, bucket); err != nil {
		t.Fatalf("creating it again: %v", err)
	}
	lot := s3.New(c, bucket)
	key := "parked/j_1/w_owner"
	if _, err := lot.Get(t.Context(), key); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("get before a put: %v, want not found", err)
	}
	body := []byte(`{"succeed":{"ID":"j_1"}}`)
	if err := lot.Put(t.Context(), key, body); err != nil {
		t.Fatal(err)
	}
	got, err := lot.Get(t.Context(), key)
	if err != nil || string(got) != string(body) {
		t.Fatalf("get: %q, %v; want %q", got, err, body)
	}
	for range 2 { // a second delete of a key gone is no error
		if err := lot.Delete(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lot.Get(t.Context(), key); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("get after the delete: %v, want not found", err)
	}
	missing := s3.New(c, bucket+"-missing")
	if _, err := missing.Get(t.Context(), key); job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("get from a bucket that does not exist: %v, want unavailable", err)
	}
	if err := missing.Put(t.Context(), key, body); job.ErrorCode(err) != job.CodeUnavailable {
		t.Fatalf("put to a bucket that does not exist: %v, want unavailable", err)
	}
}

// TestPayloads stores and reads back a payload, refuses one over the
// reader's limit, and hands out links that work over plain HTTP: an
// upload of the size granted lands, its length signed, and a read link
// returns the object.
func TestPayloads(t *testing.T) {
	c := s3.NewClient(awstest.Config(t, nil))
	bucket := awstest.Prefix(t) + "-payloads"
	if err := s3.CreateBucket(t.Context(), c, bucket); err != nil {
		t.Fatal(err)
	}
	p := s3.NewPayloads(c, bucket)
	if _, err := p.Get(t.Context(), "inputs/j_1", 10); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("get before a put: %v, want not found", err)
	}
	body := bytes.Repeat([]byte("0123456789"), 100)
	if err := p.Put(t.Context(), "inputs/j_1", body, "application/json"); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(t.Context(), "inputs/j_1", int64(len(body))); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("get: %d bytes, %v; want %d", len(got), err, len(body))
	}
	if _, err := p.Get(t.Context(), "inputs/j_1", int64(len(body)-1)); job.ErrorCode(err) != job.CodeTooLarge {
		t.Fatalf("get over the limit: %v, want too large", err)
	}

	up, err := p.PresignPut(t.Context(), "uploads/u_1", "application/pdf", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code := send(t, up, []byte("%PDF-")); code != http.StatusOK {
		t.Fatalf("upload of the size granted: HTTP %d", code)
	}
	// S3 refuses a body of another length, as the signature covers it
	// (SignatureDoesNotMatch); kumo checks no presigned signature, so
	// the link's signed headers are what is checked here, and whoever
	// reads an upload bounds it again (Get's limit).
	if !strings.Contains(up.URL, "content-length") || up.Headers.Get("Content-Length") != "5" {
		t.Fatalf("the upload link does not sign its length: %s %v", up.URL, up.Headers)
	}
	down, err := p.PresignGet(t.Context(), "uploads/u_1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(down.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(got) != "%PDF-" {
		t.Fatalf("read link: HTTP %d %q", res.StatusCode, got)
	}
	for range 2 {
		if err := p.Delete(t.Context(), "uploads/u_1"); err != nil {
			t.Fatal(err)
		}
	}
}

// send calls link with body and the headers its signature covers.
func send(t *testing.T, link s3.Link, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), link.Method, link.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range link.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.ContentLength = int64(len(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}
