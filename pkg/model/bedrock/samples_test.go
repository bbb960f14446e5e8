package bedrock_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsbedrock "github.com/aws/aws-sdk-go-v2/service/bedrock"
	btypes "github.com/aws/aws-sdk-go-v2/service/bedrock/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// The samples in testdata/samples are answers as Bedrock's API reference
// shows them, the cache's counts and the serving tier included: a Converse
// response (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html),
// a ConverseStream metadata event
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamMetadataEvent.html)
// and a batch job's output records, one a Converse response, one an
// Anthropic model's own body, one an error
// (https://docs.aws.amazon.com/bedrock/latest/userguide/batch-inference-results.html).
// Each must parse into the response or error it stands for.

// sample is testdata/samples/name.
var sample = modeltest.Sample

func TestConverseSample(t *testing.T) {
	body := sample(t, "converse_cache.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	got, err := newClient(t, srv.URL, false).Generate(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Output: "The document describes the three service tiers and when to use each.",
		Model: modelID, FinishReason: "end_turn", Served: job.Priority,
		// inputTokens leaves the cache write out: 22 + 3088.
		Usage: model.Usage{InputTokens: 3110, OutputTokens: 368, CacheWriteTokens: 3088}}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestConverseStreamMetadataSample(t *testing.T) {
	meta := string(sample(t, "converse_stream_metadata.json"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s := startStream(w)
		s.messageStart()
		s.delta("Hello")
		s.stop("end_turn")
		s.event("metadata", meta)
	}))
	defer srv.Close()
	r := request()
	r.Lane = job.Priority // asked for priority, served at the default tier
	got, err := newClient(t, srv.URL, true).Generate(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Output: "Hello", Model: modelID, FinishReason: "end_turn", Served: job.Standard,
		Usage: model.Usage{InputTokens: 3110, OutputTokens: 15, CachedInputTokens: 3088}}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// outputJob is a batch control plane whose every job has ended, its
// output under out/.
type outputJob struct{}

func (outputJob) CreateModelInvocationJob(context.Context, *awsbedrock.CreateModelInvocationJobInput, ...func(*awsbedrock.Options)) (*awsbedrock.CreateModelInvocationJobOutput, error) {
	return &awsbedrock.CreateModelInvocationJobOutput{}, nil
}

func (outputJob) GetModelInvocationJob(context.Context, *awsbedrock.GetModelInvocationJobInput, ...func(*awsbedrock.Options)) (*awsbedrock.GetModelInvocationJobOutput, error) {
	return &awsbedrock.GetModelInvocationJobOutput{Status: btypes.ModelInvocationJobStatusCompleted,
		OutputDataConfig: &btypes.ModelInvocationJobOutputDataConfigMemberS3OutputDataConfig{
			Value: btypes.ModelInvocationJobS3OutputDataConfig{S3Uri: aws.String("s3://bucket/out/")}}}, nil
}

// outputFile is a bucket holding one output file.
type outputFile []byte

func (outputFile) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return &s3.PutObjectOutput{}, nil
}

func (f outputFile) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(f))}, nil
}

func (outputFile) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{Contents: []s3types.Object{{Key: aws.String(aws.ToString(in.Prefix) + "input.jsonl.out")},
		{Key: aws.String(aws.ToString(in.Prefix) + "manifest.json.out")}}}, nil
}

func TestBatchOutputSample(t *testing.T) {
	c, err := bedrock.New(bedrock.Config{API: &stubAPI{}, Model: modelID,
		Batch: &bedrock.Batch{Bucket: "bucket", RoleARN: "arn:aws:iam::123456789012:role/r", API: outputJob{}, Objects: outputFile(sample(t, "batch_output.jsonl"))}})
	if err != nil {
		t.Fatal(err)
	}
	got, errs := map[string]model.Response{}, map[string]error{}
	err = c.BatchResults(context.Background(), "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc", func(id string, r model.Response, err error) error {
		got[id], errs[id] = r, err
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.Response{
		"job-a": {Output: "A summary.", FinishReason: "end_turn", Usage: model.Usage{InputTokens: 1036, OutputTokens: 4, CachedInputTokens: 1024}},
		"job-b": {Output: "Another summary.", FinishReason: "end_turn", Usage: model.Usage{InputTokens: 1036, OutputTokens: 5, CacheWriteTokens: 1024}},
	}
	for id, w := range want {
		if got[id] != w || errs[id] != nil {
			t.Fatalf("%s: %+v, %v\nwant %+v", id, got[id], errs[id], w)
		}
	}
	if class, u := model.Classify(errs["job-c"]); class != job.InvalidRequest || u != (model.Usage{}) {
		t.Fatalf("job-c: class %q usage %+v (%v), want invalid_request billed nothing", class, u, errs["job-c"])
	}
}
