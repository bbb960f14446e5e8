package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/wire"
)

// uploadBytes is the uploaded input TestLargeInputsEndToEnd sends: 20 MB,
// and 6 MB under -race (race_test.go), still more than a create body may
// carry (5 MiB), so only an upload takes it.
func uploadBytes() int {
	if raceDetector {
		return 6 << 20
	}
	return 20 << 20
}

// TestLargeInputsEndToEnd: on the emulator, a 2 MB input sent inline and
// a 20 MB input sent through an upload (6 MB under -race: uploadBytes)
// each succeed with one generation,
// the fake model is sent the whole input (its usage counts every byte),
// and the records hold a pointer to the payload store, not the input
// (issue N item 1, docs/payloads.md).
func TestLargeInputsEndToEnd(t *testing.T) {
	t.Parallel()
	// A 20 MB create is validated, hashed and stored whole: on a loaded
	// machine that takes longer than the default 10 s API timeout.
	// The worker loads and reads the input under the claim's lease,
	// before its first heartbeat: a steady lease, as a one-second one
	// lapses while -race reads 6 MB.
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_WORKER_TIMEOUT": "60s", "AIJOBS_VISIBILITY_TIMEOUT": "61s", "AIJOBS_API_TIMEOUT": "29s"})
	s := startStack(t, env)

	inline := strings.Repeat("a", 2<<20)
	inlineID := s.submit("t", "payload-inline", jobBody(inline, `"budget_cents": 10000`))

	uploaded := strings.Repeat("b", uploadBytes())
	input := `{"messages":[{"role":"user","content":"` + uploaded + `"}],"max_tokens":50}`
	uploadID := s.upload("t", input)
	uploadJob := s.submit("t", "payload-upload", `{"input_upload":"`+uploadID+`","budget_cents":10000}`)

	// Another tenant naming the upload reaches nothing.
	r, _ := s.retried("POST", "/jobs", "u", map[string]string{"Idempotency-Key": "payload-theirs"}, `{"input_upload":"`+uploadID+`"}`)
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "upload_not_found" {
		t.Fatalf("another tenant's upload: %d %s, want 422 upload_not_found", r.status, r.raw)
	}

	for id, content := range map[string]string{inlineID: inline, uploadJob: uploaded} {
		v := s.wait("t", id, 90*time.Second, "succeeded", "failed", "abandoned")
		if v["state"] != "succeeded" {
			t.Fatalf("job %s: %v %v %v", id, v["state"], v["error_class"], v["error"])
		}
		if g := s.fake.Generations(id); g != 1 {
			t.Errorf("job %s: %d generations, want 1", id, g)
		}
		res, _ := json.Marshal(v["result"])
		var got wire.Result
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		// The fake counts a token per 4 bytes of the content it was sent.
		if want := int64(len(content)+3) / 4; got.Usage.InputTokens != want {
			t.Errorf("job %s: the model was sent %d input tokens, want %d (the whole input)", id, got.Usage.InputTokens, want)
		}
		if cost, billed := num(v, "cost_cents"), s.fake.Billed(id).String(); cost != billed {
			t.Errorf("job %s: cost_cents %s, the provider billed %s", id, cost, billed)
		}
		s.wantPointer(id)
	}
}

// upload asks for an upload of the input body as tenant, sends it with
// the link's method and headers, and answers its id.
func (s *stack) upload(tenant, body string) string {
	s.t.Helper()
	return s.uploadFile(tenant, "application/json", []byte(body))
}

// uploadFile is upload of body of any type POST /uploads takes (an
// image or a document a content part names).
func (s *stack) uploadFile(tenant, contentType string, body []byte) string {
	s.t.Helper()
	r, _ := s.retried("POST", "/uploads", tenant, nil, fmt.Sprintf(`{"size":%d,"content_type":%q}`, len(body), contentType))
	if r.status != http.StatusCreated {
		s.t.Fatalf("POST /uploads: %d %s", r.status, r.raw)
	}
	var u wire.Upload
	if err := json.Unmarshal(r.raw, &u); err != nil {
		s.t.Fatal(err)
	}
	req, err := http.NewRequest(u.Method, u.URL, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(body))
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("the upload's PUT: %d", resp.StatusCode)
	}
	return u.UploadID
}

// wantPointer fails unless job id's record keeps its input in the
// payload store: a pointer and no inline input.
func (s *stack) wantPointer(id string) {
	s.t.Helper()
	out, err := s.ddb.GetItem(context.Background(), &awsddb.GetItemInput{TableName: aws.String(s.app.Config.Table),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		s.t.Fatal(err)
	}
	key, ok := out.Item["in_key"].(*types.AttributeValueMemberS)
	if _, inline := out.Item["input"]; inline || !ok || !strings.HasPrefix(key.Value, "inputs/"+id+"/") {
		s.t.Errorf("job %s: record holds input %v, in_key %v; want only the pointer", id, inline, out.Item["in_key"])
	}
}
