package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// fakePayloads is the payload store in memory, whose presigned upload
// is "sent" by the test putting its key.
type fakePayloads struct{ *memstore.Payloads }

func (p fakePayloads) PresignUpload(_ context.Context, key, contentType string, size int64, ttl time.Duration) (UploadLink, error) {
	return UploadLink{Method: http.MethodPut, URL: "https://payloads.example/" + key,
		Headers: http.Header{"Content-Length": {fmt.Sprint(size)}, "Content-Type": {contentType}}, Expires: t0.Add(ttl)}, nil
}

func (p fakePayloads) object(key string) ([]byte, bool) {
	b, _, ok := p.Object(key)
	return b, ok
}

// withPayloads is an env whose handler has a payload store.
func withPayloads(t *testing.T) (*env, fakePayloads) {
	e := newEnv(t)
	p := fakePayloads{memstore.NewPayloads()}
	e.h.payloads = p
	return e, p
}

// largeBody is a create body whose input is n bytes of content.
func largeBody(n int, char string) string {
	return `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat(char, n) + `"}]}}`
}

func TestALargeInputIsStoredBeforeItsRecordAndTheRecordPointsAtIt(t *testing.T) {
	e, p := withPayloads(t)
	resp := e.do(t, createReq(t, "big", largeBody(2<<20, "a")))
	if resp.StatusCode != 202 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	j, err := e.store.Get(t.Context(), decodeView(t, resp).ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.InputRef == nil || len(j.Input) != 0 {
		t.Fatalf("record keeps input of %d bytes, ref %+v; want only the ref", len(j.Input), j.InputRef)
	}
	if want := "inputs/" + j.ID + "/" + strings.TrimPrefix(j.InputHash, "sha256:"); j.InputRef.Key != want {
		t.Fatalf("key %q, want %q", j.InputRef.Key, want)
	}
	obj, ok := p.object(j.InputRef.Key)
	if !ok {
		t.Fatal("no object at the record's key")
	}
	if err := j.InputRef.Check(obj); err != nil {
		t.Fatal(err)
	}
	var in job.Input
	if err := json.Unmarshal(obj, &in); err != nil || len(in.Messages[0].Content) != 2<<20 {
		t.Fatalf("the object is not the whole input: %v", err)
	}
}

func TestASmallInputStaysInline(t *testing.T) {
	e, p := withPayloads(t)
	j, err := e.store.Get(t.Context(), e.mustCreate(t, "small"))
	if err != nil {
		t.Fatal(err)
	}
	if j.InputRef != nil || len(j.Input) == 0 || puts(p) != 0 {
		t.Fatalf("a small input: ref %+v, %d inline bytes, %d puts; want inline and no put", j.InputRef, len(j.Input), puts(p))
	}
}

func TestAnInputThePayloadStoreCannotKeepIs503AndNoRecord(t *testing.T) {
	e, p := withPayloads(t)
	p.SetDown(true)
	resp := e.do(t, createReq(t, "big", largeBody(100<<10, "a")))
	wantProblem(t, resp, 503, wire.CodeUnavailable, "")
	req, err := ParseCreate("jwt:tenant-a", "big", []byte(largeBody(100<<10, "a")), e.h.limits)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Get(t.Context(), req.NewJob(t0, time.Hour).ID); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("a record after a failed input write: %v", err)
	}
	p.SetDown(false)
	if resp := e.do(t, createReq(t, "big", largeBody(100<<10, "a"))); resp.StatusCode != 202 {
		t.Fatalf("the retry: %d %s", resp.StatusCode, resp.Body)
	}
}

// A repeat is still a repeat, and a reused key with other input writes
// another object: the first job's is never overwritten.
func TestALargeInputsRepeatAndAReusedKey(t *testing.T) {
	e, p := withPayloads(t)
	first := e.do(t, createReq(t, "k", largeBody(50<<10, "a")))
	if first.StatusCode != 202 {
		t.Fatalf("create: %d %s", first.StatusCode, first.Body)
	}
	j, _ := e.store.Get(t.Context(), decodeView(t, first).ID)
	again := e.do(t, createReq(t, "k", largeBody(50<<10, "a")))
	if again.StatusCode != 200 || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("repeat: %d %v", again.StatusCode, again.Headers)
	}
	other := e.do(t, createReq(t, "k", largeBody(50<<10, "b")))
	wantProblem(t, other, 422, wire.CodeKeyReused, "Idempotency-Key")
	obj, _ := p.object(j.InputRef.Key)
	if err := j.InputRef.Check(obj); err != nil {
		t.Fatalf("the first job's input after a reused key: %v", err)
	}
}

// upload asks for an upload of body as tenant and "sends" it.
func upload(t *testing.T, e *env, p fakePayloads, tenant, body string) string {
	t.Helper()
	ev := asTenant(request(t, "POST", "/uploads", fmt.Sprintf(`{"size":%d,"content_type":"application/json"}`, len(body))), tenant)
	resp := e.do(t, ev)
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d %s", resp.StatusCode, resp.Body)
	}
	var u wire.Upload
	if err := json.Unmarshal([]byte(resp.Body), &u); err != nil {
		t.Fatal(err)
	}
	if u.Method != http.MethodPut || u.Headers["Content-Length"] != fmt.Sprint(len(body)) || !u.ExpiresAt.Equal(t0.Add(UploadTTL)) {
		t.Fatalf("upload answer %+v", u)
	}
	key := strings.TrimPrefix(u.URL, "https://payloads.example/")
	if !strings.HasPrefix(key, "uploads/") || !strings.HasSuffix(key, "/"+u.UploadID) {
		t.Fatalf("upload key %q", key)
	}
	_ = p.Put(context.Background(), key, []byte(body), "application/json")
	return u.UploadID
}

func TestAnUploadedInputIsTheSameInputAsInline(t *testing.T) {
	e, p := withPayloads(t)
	input := `{"messages":[{"role":"user","content":"` + strings.Repeat("u", 6<<20) + `"}]}`
	id := upload(t, e, p, "tenant-a", input)
	resp := e.do(t, createReq(t, "up", `{"input_upload":"`+id+`"}`))
	if resp.StatusCode != 202 {
		t.Fatalf("create from upload: %d %s", resp.StatusCode, resp.Body)
	}
	v := decodeView(t, resp)
	inline, err := parseCreate("jwt:tenant-a", "up", []byte(`{"input":`+input+`}`), e.h.limits, MaxUploadBytes)
	if err != nil {
		t.Fatal(err)
	}
	if v.InputHash != inline.InputHash {
		t.Fatalf("input hash %s from the upload, %s inline", v.InputHash, inline.InputHash)
	}
	j, _ := e.store.Get(t.Context(), v.ID)
	obj, ok := p.object(j.InputRef.Key)
	if !ok || j.InputRef.Check(obj) != nil || !strings.HasPrefix(j.InputRef.Key, "inputs/") {
		t.Fatalf("the job's input object: ref %+v, found %v", j.InputRef, ok)
	}
}

func TestAnotherTenantsUploadIsNotFound(t *testing.T) {
	e, p := withPayloads(t)
	id := upload(t, e, p, "tenant-b", `{"messages":[{"role":"user","content":"theirs"}]}`)
	resp := e.do(t, createReq(t, "up", `{"input_upload":"`+id+`"}`))
	wantProblem(t, resp, 422, wire.CodeUploadNotFound, "input_upload")
	resp = e.do(t, createReq(t, "up2", `{"input_upload":"0123456789abcdef0123456789abcdef"}`))
	wantProblem(t, resp, 422, wire.CodeUploadNotFound, "input_upload")
}

// An uploaded input is refused as the same input inline is: same status,
// code and field.
func TestABadUploadIsRefusedAsInline(t *testing.T) {
	e, p := withPayloads(t)
	for _, in := range []string{
		`{"messages":[]}`,
		`{"messages":[{"role":"robot","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":0.5}`,
		`{"messages":[{"role":"user","content":"x"}],"colour":1}`,
	} {
		inline := e.do(t, createReq(t, "in-"+in, `{"input":`+in+`}`))
		id := upload(t, e, p, "tenant-a", in)
		up := e.do(t, createReq(t, "up-"+in, `{"input_upload":"`+id+`"}`))
		a, b := decodeProblem(t, inline), decodeProblem(t, up)
		if inline.StatusCode != up.StatusCode || a.Code != b.Code || a.Field != b.Field {
			t.Errorf("%s: inline %d %s %q, uploaded %d %s %q", in, inline.StatusCode, a.Code, a.Field, up.StatusCode, b.Code, b.Field)
		}
	}
	id := upload(t, e, p, "tenant-a", `not json`)
	wantProblem(t, e.do(t, createReq(t, "nj", `{"input_upload":"`+id+`"}`)), 400, wire.CodeInvalidRequest, "input")
	wantProblem(t, e.do(t, createReq(t, "both", `{"input_upload":"`+id+`","input":{"messages":[{"role":"user","content":"x"}]}}`)),
		400, wire.CodeInvalidRequest, "input_upload")
	wantProblem(t, e.do(t, createReq(t, "bad-id", `{"input_upload":"../inputs/x"}`)), 400, wire.CodeInvalidRequest, "input_upload")
}

func TestUploadLimits(t *testing.T) {
	e, _ := withPayloads(t)
	for body, field := range map[string]string{
		fmt.Sprintf(`{"size":%d,"content_type":"application/json"}`, MaxUploadBytes+1): "size",
		`{"size":0,"content_type":"application/json"}`:                                 "size",
		`{"size":10,"content_type":"application/zip"}`:                                 "content_type",
	} {
		wantProblem(t, e.do(t, request(t, "POST", "/uploads", body)), 400, wire.CodeInvalidRequest, field)
	}
	plain := newEnv(t)
	wantProblem(t, plain.do(t, request(t, "POST", "/uploads", `{"size":10,"content_type":"application/json"}`)), 404, wire.CodeNotFound, "")
}

// A repeat of an upload's create after the upload expired cannot be told
// from a reused key: it is refused, naming the job the key already has.
func TestARepeatAfterTheUploadExpiredNamesTheJob(t *testing.T) {
	e, p := withPayloads(t)
	id := upload(t, e, p, "tenant-a", `{"messages":[{"role":"user","content":"kept"}]}`)
	first := e.do(t, createReq(t, "up", `{"input_upload":"`+id+`"}`))
	if first.StatusCode != 202 {
		t.Fatalf("create: %d %s", first.StatusCode, first.Body)
	}
	for _, k := range p.Keys() {
		if strings.HasPrefix(k, "uploads/") {
			_ = p.Delete(context.Background(), k) // the lifecycle rule expired it
		}
	}
	got := wantProblem(t, e.do(t, createReq(t, "up", `{"input_upload":"`+id+`"}`)), 422, wire.CodeUploadNotFound, "input_upload")
	if jobID := decodeView(t, first).ID; !strings.Contains(got.Detail, jobID) {
		t.Fatalf("detail %q does not name job %s", got.Detail, jobID)
	}
	other := wantProblem(t, e.do(t, createReq(t, "never-used", `{"input_upload":"`+id+`"}`)), 422, wire.CodeUploadNotFound, "input_upload")
	if strings.Contains(other.Detail, "job_") {
		t.Fatalf("a key never used names a job: %q", other.Detail)
	}
}

// puts is how many puts p was asked.
func puts(p fakePayloads) int {
	n, _ := p.Calls()
	return n
}
