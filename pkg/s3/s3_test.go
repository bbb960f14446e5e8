package s3_test

import (
	"os"
	"testing"

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
