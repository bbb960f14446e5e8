package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":1}},"required":["name","age"],"additionalProperties":false}`

// withFormat is fakeRequest asking for personSchema, strict.
func withFormat(modelName string) model.Request {
	r := fakeRequest(modelName, job.Standard)
	r.Options.ResponseFormat = &job.ResponseFormat{Type: job.FormatJSONSchema,
		JSONSchema: &job.JSONSchema{Name: "person", Schema: json.RawMessage(personSchema), Strict: true}}
	return r
}

// Chat completions carry response_format in OpenAI's own shape
// (platform.openai.com/docs/api-reference/chat/create), schema and all.
func TestTheChatBodyCarriesTheResponseFormat(t *testing.T) {
	b := sentBody(t, false, withFormat("gpt-4o-mini"))
	got, _ := json.Marshal(b["response_format"])
	want := `{"json_schema":{"name":"person","schema":` + canonical(t, personSchema) + `,"strict":true},"type":"json_schema"}`
	if string(got) != want {
		t.Errorf("response_format %s, want %s", got, want)
	}
	if _, ok := sentBody(t, false, fakeRequest("gpt-4o-mini", job.Standard))["response_format"]; ok {
		t.Error("a body without a format carries response_format")
	}
}

// The Responses API carries it as text.format, the json_schema's members
// flattened (platform.openai.com/docs/api-reference/responses/create).
func TestTheResponsesBodyCarriesTheResponseFormat(t *testing.T) {
	b := sentBody(t, true, withFormat("gpt-5-mini"))
	got, _ := json.Marshal(b["text"])
	want := `{"format":{"name":"person","schema":` + canonical(t, personSchema) + `,"strict":true,"type":"json_schema"}}`
	if string(got) != want {
		t.Errorf("text %s, want %s", got, want)
	}
}

// A batch line is the chat body: the format reaches the input file.
func TestABatchLineCarriesTheResponseFormat(t *testing.T) {
	s := &openaitest.Server{}
	r := withFormat("gpt-4o-mini")
	r.JobID, r.Lane = "job-1", job.Batch
	if _, err := batchClient(t, s).SubmitBatch(t.Context(), "b_format", []model.Request{r}); err != nil {
		t.Fatal(err)
	}
	lines := s.Inputs()
	if len(lines) != 1 || lines[0].Body.ResponseFormat == nil || lines[0].Body.ResponseFormat.JSONSchema.Name != "person" ||
		string(lines[0].Body.ResponseFormat.JSONSchema.Schema) != personSchema {
		t.Fatalf("batch lines %+v: want the response_format", lines)
	}
}

// Whole, streamed or by the Responses API, the answer is the message's
// JSON text: the fake's instance of the schema passes model.CheckOutput,
// and with Nonconforming its refused JSON fails it invalid_output, the
// usage kept on the error.
func TestTheAnswerToAFormatIsValidated(t *testing.T) {
	for _, tt := range []struct {
		name               string
		stream, background bool
		model              string
	}{{"whole", false, false, "gpt-4o-mini"}, {"streamed", true, false, "gpt-4o-mini"}, {"responses", false, true, "gpt-5-mini"}} {
		t.Run(tt.name, func(t *testing.T) {
			for _, bad := range []bool{false, true} {
				s := &openaitest.Server{Nonconforming: bad}
				srv := httptest.NewServer(s.Handler())
				r := withFormat(tt.model)
				resp, err := fakeClient(t, srv.URL, tt.stream, tt.background).Generate(context.Background(), r)
				srv.Close()
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				in := job.Input{Messages: r.Messages, Options: r.Options}
				err = model.CheckOutput(in, resp)
				if !bad {
					if err != nil || resp.Output == "" {
						t.Fatalf("a conforming answer %q: %v", resp.Output, err)
					}
					continue
				}
				var me *model.Error
				if !errors.As(err, &me) || me.Class != job.InvalidOutput || me.Usage != resp.Usage || resp.Usage.OutputTokens == 0 {
					t.Fatalf("a nonconforming answer %q: %v, want invalid_output carrying usage %+v", resp.Output, err, resp.Usage)
				}
			}
		})
	}
}

// canonical is s re-encoded as encoding/json writes it (keys sorted).
func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
