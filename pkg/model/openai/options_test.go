package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// withOptions is fakeRequest with every option a chat model takes, or,
// for a reasoning model, the ones it takes (no stop, top_p 1).
func withOptions(modelName string, reasoning bool) model.Request {
	r := fakeRequest(modelName, job.Standard)
	seed, topP := int64(7), 0.5
	r.Options = job.Options{TopP: &topP, Stop: []string{"END", "\n\n"}, Seed: &seed}
	if reasoning {
		one := 1.0
		r.Options = job.Options{TopP: &one, Seed: &seed, Reasoning: &job.Reasoning{Effort: "low", BudgetTokens: 2048}}
	}
	return r
}

// sentBody is the JSON body of the one call c makes for r.
func sentBody(t *testing.T, background bool, r model.Request) map[string]any {
	t.Helper()
	var sent map[string]any
	srv := httptest.NewServer((&openaitest.Server{}).Handler())
	defer srv.Close()
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if req.Method == http.MethodPost {
			_ = json.Unmarshal(b, &sent)
		}
		fwd, _ := http.NewRequest(req.Method, srv.URL+req.URL.Path, bytes.NewReader(b))
		fwd.Header = req.Header
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer spy.Close()
	if _, err := fakeClient(t, spy.URL, false, background).Generate(context.Background(), r); err != nil {
		t.Fatalf("Generate: %v (the fake refused the body?)", err)
	}
	return sent
}

// Chat completions carry top_p, stop, seed and reasoning_effort under
// their own names (platform.openai.com/docs/api-reference/chat/create),
// and the fake, holding each family to its rules, serves them.
func TestTheChatBodyCarriesTheOptions(t *testing.T) {
	b := sentBody(t, false, withOptions("gpt-4o-mini", false))
	if b["top_p"] != 0.5 || fmt.Sprint(b["stop"]) != "[END \n\n]" || b["seed"] != 7.0 {
		t.Errorf("chat body %v: want top_p 0.5, stop [END, \\n\\n], seed 7", b)
	}
	if _, ok := b["reasoning_effort"]; ok {
		t.Errorf("chat body %v carries a reasoning effort nobody asked for", b)
	}
	b = sentBody(t, false, withOptions("o4-mini", true))
	if b["reasoning_effort"] != "low" || b["top_p"] != 1.0 || b["seed"] != 7.0 {
		t.Errorf("reasoning body %v: want reasoning_effort low, top_p 1, seed 7", b)
	}
	if _, ok := b["stop"]; ok {
		t.Errorf("reasoning body %v has a stop", b)
	}
	plain := sentBody(t, false, fakeRequest("gpt-4o-mini", job.Standard))
	for _, k := range []string{"top_p", "stop", "seed", "reasoning_effort"} {
		if _, ok := plain[k]; ok {
			t.Errorf("a body without options sends %s: %v", k, plain)
		}
	}
}

// The Responses API carries top_p and reasoning.effort; it has no stop
// and no seed, and a request with either is refused unsent.
func TestTheResponsesBodyCarriesTheOptions(t *testing.T) {
	r := withOptions("gpt-5-mini", true)
	r.Options.Seed = nil
	b := sentBody(t, true, r)
	if b["top_p"] != 1.0 || fmt.Sprint(b["reasoning"]) != "map[effort:low]" {
		t.Errorf("responses body %v: want top_p 1 and reasoning {effort: low}", b)
	}
	s := &openaitest.Server{}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, err := fakeClient(t, srv.URL, false, true).Generate(context.Background(), withOptions("gpt-4o-mini", false))
	var me *model.Error
	if !errors.As(err, &me) || me.Class != job.InvalidRequest || s.Calls() != 0 {
		t.Fatalf("err %v with %d calls, want invalid_request and nothing sent", err, s.Calls())
	}
}

// A batch line is the chat body: the options reach the input file.
func TestABatchLineCarriesTheOptions(t *testing.T) {
	s := &openaitest.Server{}
	c := batchClient(t, s)
	r := withOptions("gpt-4o-mini", false)
	r.JobID, r.Lane = "job-1", job.Batch
	if _, err := c.SubmitBatch(t.Context(), "b_options", []model.Request{r}); err != nil {
		t.Fatal(err)
	}
	lines := s.Inputs()
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	b := lines[0].Body
	if b.TopP == nil || *b.TopP != 0.5 || len(b.Stop) != 2 || b.Seed == nil || *b.Seed != 7 {
		t.Fatalf("batch line body %+v: want the options", b)
	}
}

// The fake refuses what OpenAI refuses, so a wrong mapping fails: each
// body below is one a mistaken client could send.
func TestTheFakeRefusesOptionsAsOpenAIDoes(t *testing.T) {
	fake := httptest.NewServer((&openaitest.Server{}).Handler())
	defer fake.Close()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		path, body, code string
	}{
		{"/chat/completions", `{"model":"gpt-5-mini",` + msgs + `,"stop":["x"]}`, "unsupported_parameter"},
		{"/chat/completions", `{"model":"o3",` + msgs + `,"top_p":0.5}`, "unsupported_value"},
		{"/chat/completions", `{"model":"gpt-5.1",` + msgs + `,"temperature":0.5,"reasoning_effort":"high"}`, "unsupported_value"},
		{"/chat/completions", `{"model":"gpt-4o-mini",` + msgs + `,"reasoning_effort":"low"}`, "unsupported_parameter"},
		{"/chat/completions", `{"model":"gpt-4o-mini",` + msgs + `,"stop":["a","b","c","d","e"]}`, "array_above_max_length"},
		{"/responses", `{"model":"gpt-4o-mini","input":[{"role":"user","content":"hi"}],"stop":["x"],"background":true}`, "unknown_parameter"},
		{"/responses", `{"model":"gpt-4o-mini","input":[{"role":"user","content":"hi"}],"seed":1,"background":true}`, "unknown_parameter"},
		{"/responses", `{"model":"gpt-5-mini","input":[{"role":"user","content":"hi"}],"top_p":0.3,"background":true}`, "unsupported_value"},
	} {
		resp, err := http.Post(fake.URL+tt.path, "application/json", bytes.NewBufferString(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != tt.code {
			t.Errorf("%s %s: status %d code %q, want 400 %s", tt.path, tt.body, resp.StatusCode, e.Error.Code, tt.code)
		}
	}
	// And serves what each family takes.
	for _, body := range []string{
		`{"model":"gpt-4o-mini",` + msgs + `,"top_p":0.5,"stop":["x"],"seed":3}`,
		`{"model":"o4-mini",` + msgs + `,"top_p":1,"reasoning_effort":"high"}`,
		`{"model":"gpt-5.1",` + msgs + `,"temperature":0.5}`,
	} {
		resp, err := http.Post(fake.URL+"/chat/completions", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, want 200", body, resp.StatusCode)
		}
	}
}

// A thinking budget alone has no place in OpenAI's bodies: a call or a
// batch asking for it is refused unsent rather than made without it.
func TestABudgetWithoutAnEffortIsRefusedUnsent(t *testing.T) {
	s := &openaitest.Server{}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	r := fakeRequest("o4-mini", job.Standard)
	r.Options.Reasoning = &job.Reasoning{BudgetTokens: 2048}
	for _, w := range fakeWires {
		_, err := fakeClient(t, srv.URL, w.stream, w.background).Generate(context.Background(), r)
		var me *model.Error
		if !errors.As(err, &me) || me.Class != job.InvalidRequest || s.Calls() != 0 {
			t.Fatalf("%s: err %v with %d calls, want invalid_request and nothing sent", w.name, err, s.Calls())
		}
	}
	b := &openaitest.Server{}
	r.JobID, r.Lane = "job-1", job.Batch
	_, err := batchClient(t, b).SubmitBatch(t.Context(), "b_budget", []model.Request{r})
	var me *model.Error
	if !errors.As(err, &me) || me.Class != job.InvalidRequest || b.Batches() != 0 {
		t.Fatalf("batch: err %v with %d batches, want invalid_request and none made", err, b.Batches())
	}
}
