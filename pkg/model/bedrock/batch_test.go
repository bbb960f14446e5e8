package bedrock_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/s3"
)

// The batch tests read and write a real S3 API: the emulator's (kumo's),
// started on first use.
func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// batchClient is a provider whose batches go to a bucket on the emulator
// and whose control plane is a local bedrocktest server over it.
func batchClient(t *testing.T, polls int) (*bedrock.Client, *bedrocktest.Server) {
	t.Helper()
	objects := s3.NewClient(awstest.Config(t, nil))
	bucket := strings.ToLower(awstest.Prefix(t)) + "-batch"
	if err := s3.CreateBucket(t.Context(), objects, bucket); err != nil {
		t.Fatal(err)
	}
	srv := bedrocktest.New(objects)
	srv.Polls = polls
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c, err := bedrock.New(bedrock.Config{
		AWS:      aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")},
		Endpoint: hs.URL, Model: "anthropic.claude-test",
		Batch: &bedrock.Batch{Bucket: bucket, RoleARN: "arn:aws:iam::123456789012:role/aijobs-batch", Objects: objects},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

func batchRequest(id, prompt string) model.Request {
	return model.Request{JobID: id, Lane: job.Batch, MaxTokens: 40,
		Messages: []job.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: prompt}}}
}

// A batch is one input file in the bucket and one model invocation job
// over it, made with the batch's id as its client request token: a
// second submit under the id (its first answer lost, or the collector
// dead before it recorded it) answers the same job, never a second.
func TestABedrockBatchIsOneJobUnderItsToken(t *testing.T) {
	c, srv := batchClient(t, 1)
	reqs := []model.Request{batchRequest("job_a", "hi"), batchRequest("job_b", "there")}
	id, err := c.SubmitBatch(t.Context(), "b_one", reqs)
	if err != nil || !strings.Contains(id, ":model-invocation-job/") {
		t.Fatalf("submit: %q, %v", id, err)
	}
	again, err := c.SubmitBatch(t.Context(), "b_one", reqs)
	if err != nil || again != id || srv.Jobs() != 1 {
		t.Fatalf("a second submit: %q, %v, %d jobs; want %q, one job", again, err, srv.Jobs(), id)
	}
	for i, want := range []bool{false, true} {
		if ended, err := c.BatchEnded(t.Context(), id); err != nil || ended != want {
			t.Errorf("read %d: ended %v, %v; want %v", i+1, ended, err, want)
		}
	}
}

// Each record's outcome is read from the job's output in the bucket: an
// answer with its counts, one without (estimated from its output), an
// error record classified by its code (billed nothing); a record left
// out (the job ended before it) has no result.
func TestEachBedrockBatchRecordIsAnsweredOrClassified(t *testing.T) {
	c, srv := batchClient(t, 0)
	reqs := []model.Request{batchRequest("job_ok", "a plain question"), batchRequest("job_bad", "[[bedrock:error=400]]"),
		batchRequest("job_busy", "[[bedrock:error=429]]"), batchRequest("job_late", "[[bedrock:expire]]"),
		batchRequest("job_nocount", "[[bedrock:nousage]]")}
	id, err := c.SubmitBatch(t.Context(), "b_mixed", reqs)
	if err != nil {
		t.Fatal(err)
	}
	got := modeltest.BatchOutcomes(t, c, id, "scripted")
	want := map[string]string{
		"job_ok":      " 5/2 est=false",
		"job_bad":     "invalid_request 0/0 est=false",
		"job_busy":    "rate_limited 0/0 est=false",
		"job_nocount": " 0/7 est=true", // the collector adds the prompt's share
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || srv.Generated("job_ok") != 1 || srv.Generated("job_bad") != 0 {
		t.Errorf("results\n%v\nwant\n%v", got, want)
	}
}

// Without a bucket and role the provider takes no batch, and says so.
func TestABedrockProviderWithoutABatchBucketTakesNoBatch(t *testing.T) {
	c, err := bedrock.New(bedrock.Config{AWS: aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "B", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubmitBatch(t.Context(), "b_x", []model.Request{batchRequest("job_a", "hi")}); err == nil {
		t.Error("a batch was submitted with no bucket")
	}
}
