package openai_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// embedBatchRequest is an embedding job's request in the batch lane.
func embedBatchRequest(id string, in []string, dims int) model.Request {
	return model.Request{JobID: id, Model: "text-embedding-3-small", Texts: in, Dimensions: dims, Lane: job.Batch}
}

// submitAndEnd submits reqs as one batch of s and reads it until it ends.
func submitAndEnd(t *testing.T, s *openaitest.Server, key string, reqs ...model.Request) (map[string]model.Response, map[string]error) {
	t.Helper()
	c := batchClient(t, s)
	id, err := c.SubmitBatch(t.Context(), key, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if ended, err := c.BatchEnded(t.Context(), id); err != nil || !ended {
		t.Fatalf("ended %v, %v", ended, err)
	}
	resps, errs := map[string]model.Response{}, map[string]error{}
	if err := c.BatchResults(t.Context(), id, func(jobID string, resp model.Response, err error) error {
		if _, again := resps[jobID]; again {
			t.Errorf("%s answered twice", jobID)
		}
		resps[jobID], errs[jobID] = resp, err
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return resps, errs
}

// An embedding job of 5,000 texts is three lines of a /v1/embeddings
// batch, each a call's worth (2,048, 2,048, 904), named by the job and
// its texts; its one result joins them: every vector in input order, the
// usage the lines' prompt_tokens summed.
func TestAnEmbeddingJobInABatchIsOneLineAChunkJoinedInOrder(t *testing.T) {
	s := &openaitest.Server{}
	in := texts(5000, func(i int) string { return fmt.Sprintf("text number %d", i) })
	resps, errs := submitAndEnd(t, s, "b_embed", embedBatchRequest("job-e", in, 64))
	var ids []string
	var sizes []int
	for _, l := range s.Inputs() {
		if l.URL != openaitest.EmbeddingsEndpoint || l.Method != "POST" || l.Body.Model != "text-embedding-3-small" ||
			l.Body.EncodingFormat != "base64" || l.Body.Dimensions != 64 {
			t.Errorf("line %s: %s %s %+v", l.CustomID, l.Method, l.URL, l.Body.Model)
		}
		ids, sizes = append(ids, l.CustomID), append(sizes, len(l.Body.Input))
	}
	slices.Sort(ids)
	slices.Sort(sizes)
	if want := []string{"job-e#0-2048/5000", "job-e#2048-4096/5000", "job-e#4096-5000/5000"}; !slices.Equal(ids, want) {
		t.Errorf("custom ids %v, want %v", ids, want)
	}
	if want := []int{904, 2048, 2048}; !slices.Equal(sizes, want) {
		t.Errorf("lines of %v texts, want %v", sizes, want)
	}
	if errs["job-e"] != nil || len(resps) != 1 {
		t.Fatalf("results %v, errors %v", len(resps), errs)
	}
	r := resps["job-e"]
	wantVectors(t, r.Output, in, 64)
	if r.Usage != (model.Usage{InputTokens: tokens(in)}) {
		t.Errorf("usage %+v, want %d input tokens, exact", r.Usage, tokens(in))
	}
}

// OpenAI takes one endpoint a batch: a submit of chat and embedding
// requests together is refused before anything is uploaded or made.
func TestABatchNeverMixesChatAndEmbeddings(t *testing.T) {
	s := &openaitest.Server{}
	c := batchClient(t, s)
	_, err := c.SubmitBatch(t.Context(), "b_mix", []model.Request{batchRequest("job-c", "hi"), embedBatchRequest("job-e", []string{"a"}, 0)})
	if class, _ := model.Classify(err); err == nil || class != job.Internal {
		t.Fatalf("a mixed batch: %v (%s), want it refused", err, class)
	}
	if s.Batches() != 0 || len(s.Inputs()) != 0 {
		t.Errorf("%d batches, %d lines uploaded; want none", s.Batches(), len(s.Inputs()))
	}
	// Each kind alone is taken, on its own endpoint.
	resps, errs := submitAndEnd(t, s, "b_chat", batchRequest("job-c", "hi"))
	if errs["job-c"] != nil || resps["job-c"].Output == "" {
		t.Errorf("chat alone: %v", errs)
	}
	resps, errs = submitAndEnd(t, s, "b_emb", embedBatchRequest("job-e", []string{"a", "b"}, 8))
	if errs["job-e"] != nil {
		t.Errorf("embeddings alone: %v", errs)
	}
	wantVectors(t, resps["job-e"].Output, []string{"a", "b"}, 8)
}

// A failed line fails its job with that line's class, once every line
// was read; the usage is every answered line's, so what was billed stays
// on the record. The batch's other job is not touched by it.
func TestAFailedChunkFailsItsJobKeepingTheAnsweredLinesCost(t *testing.T) {
	s := &openaitest.Server{}
	in := texts(4100, func(i int) string { return fmt.Sprintf("t%d", i) })
	in[3000] = "" // in the second line of three: OpenAI refuses an empty input 400
	other := []string{"x", "y"}
	resps, errs := submitAndEnd(t, s, "b_fail", embedBatchRequest("job-f", in, 16), embedBatchRequest("job-g", other, 16))
	class, u := model.Classify(errs["job-f"])
	answered := tokens(in[:2048]) + tokens(in[4096:])
	if class != job.InvalidRequest || u != (model.Usage{InputTokens: answered}) {
		t.Errorf("failed job: %s %+v, want invalid_request billed the answered lines' %d", class, u, answered)
	}
	if resps["job-f"].Output != "" {
		t.Errorf("a failed job has vectors")
	}
	if errs["job-g"] != nil {
		t.Fatalf("the other job: %v", errs["job-g"])
	}
	wantVectors(t, resps["job-g"].Output, other, 16)
}
