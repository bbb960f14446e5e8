package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":1}},"required":["name","age"],"additionalProperties":false}`

// formatRequest asks a Claude 4 model for personSchema.
func formatRequest() model.Request {
	r := request()
	r.Model, r.MaxTokens = claude4[0], 4096
	r.Options.ResponseFormat = &job.ResponseFormat{Type: job.FormatJSONSchema,
		JSONSchema: &job.JSONSchema{Name: "person", Schema: json.RawMessage(personSchema), Strict: true}}
	return r
}

// The Messages body carries a response_format as a forced tool: one tool
// whose input_schema is the schema, and tool_choice {type: tool, name}
// (docs.anthropic.com/en/docs/build-with-claude/tool-use).
func TestTheMessagesBodyCarriesAForcedTool(t *testing.T) {
	var sent map[string]json.RawMessage
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &sent)
		fwd, _ := http.NewRequest(r.Method, fake.URL+r.URL.Path, bytes.NewReader(b))
		fwd.Header = r.Header
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
	if _, err := clientAt(t, spy.URL, false).Generate(context.Background(), formatRequest()); err != nil {
		t.Fatalf("Generate: %v (the fake refused the body?)", err)
	}
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	_ = json.Unmarshal(sent["tools"], &tools)
	if len(tools) != 1 || tools[0].Name != "person" || string(tools[0].InputSchema) != personSchema ||
		string(sent["tool_choice"]) != `{"type":"tool","name":"person"}` {
		t.Fatalf("tools %s tool_choice %s: want the forced tool person", sent["tools"], sent["tool_choice"])
	}
	for _, k := range []string{"response_format", "output_format", "strict"} {
		if _, ok := sent[k]; ok {
			t.Errorf("sent %s, which the forced tool replaces", k)
		}
	}
}

// A message batch's requests carry the same tool, and its answers are
// read from their tool_use blocks as a call's are.
func TestABatchRequestCarriesTheForcedTool(t *testing.T) {
	s := &anthropictest.Server{Polls: 0}
	c := batchClient(t, s)
	r := formatRequest()
	r.JobID, r.Lane = "job-a", job.Batch
	id, err := c.SubmitBatch(t.Context(), "b_format", []model.Request{r})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Requests()[0].Params
	if len(p.Tools) != 1 || p.ToolChoice == nil || p.ToolChoice.Name != "person" || string(p.Tools[0].InputSchema) != personSchema {
		t.Fatalf("batch params %+v", p)
	}
	var got model.Response
	if err := c.BatchResults(context.Background(), id, func(_ string, resp model.Response, err error) error {
		got = resp
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := model.CheckOutput(job.Input{Options: r.Options}, got); err != nil {
		t.Fatalf("the batch answer %q: %v", got.Output, err)
	}
}

// Whole or streamed (input_json_delta), the answer is the tool_use
// block's input: the fake's instance passes model.CheckOutput; with
// Nonconforming its refused JSON fails it invalid_output, the usage kept.
func TestTheToolInputIsTheAnswer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, bad := range []bool{false, true} {
			s := &anthropictest.Server{Nonconforming: bad}
			srv := httptest.NewServer(s.Handler())
			r := formatRequest()
			resp, err := clientAt(t, srv.URL, stream).Generate(context.Background(), r)
			srv.Close()
			if err != nil {
				t.Fatalf("stream %v: Generate: %v", stream, err)
			}
			err = model.CheckOutput(job.Input{Options: r.Options}, resp)
			if !bad {
				if err != nil || !strings.HasPrefix(resp.Output, "{") || resp.FinishReason != "tool_use" {
					t.Fatalf("stream %v: a conforming answer %q (%s): %v", stream, resp.Output, resp.FinishReason, err)
				}
				continue
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Class != job.InvalidOutput || me.Usage != resp.Usage || resp.Usage.OutputTokens == 0 {
				t.Fatalf("stream %v: a nonconforming answer %q: %v, want invalid_output carrying usage %+v", stream, resp.Output, err, resp.Usage)
			}
		}
	}
}

// Claude refuses a forced tool with extended thinking (config refuses
// such a job at create, job.Takes.ForcedTool): a job accepted before its
// route changed is refused unsent, and the fake refuses the pair as
// Claude does, so a client that sent it would fail a test.
func TestAForcedToolWithThinkingIsRefused(t *testing.T) {
	s := &anthropictest.Server{}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	r := formatRequest()
	topP := 0.96
	r.Options.TopP, r.Options.Reasoning = &topP, &job.Reasoning{BudgetTokens: 2048}
	_, err := clientAt(t, srv.URL, false).Generate(context.Background(), r)
	var me *model.Error
	if !errors.As(err, &me) || me.Class != job.InvalidRequest || s.Calls() != 0 {
		t.Fatalf("a forced tool with thinking: %v after %d calls, want invalid_request unsent", err, s.Calls())
	}
	body := `{"model":"` + claude4[0] + `","max_tokens":4096,"messages":[{"role":"user","content":"hi"}],
		"thinking":{"type":"enabled","budget_tokens":2048},"tools":[{"name":"person","input_schema":` + personSchema + `}],
		"tool_choice":{"type":"tool","name":"person"}}`
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "Thinking may not be enabled when tool_choice forces tool use") {
		t.Fatalf("the fake answered the pair %d %s", resp.StatusCode, b)
	}
}
