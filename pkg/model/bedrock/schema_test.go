package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":1}},"required":["name","age"],"additionalProperties":false}`

// withFormat asks for personSchema.
func withFormat() model.Request {
	r := request()
	r.Options.ResponseFormat = &job.ResponseFormat{Type: job.FormatJSONSchema,
		JSONSchema: &job.JSONSchema{Name: "person", Schema: json.RawMessage(personSchema)}}
	return r
}

// Converse carries a response_format as toolConfig: one toolSpec whose
// inputSchema.json is the schema, and toolChoice {tool: {name}}
// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html).
func TestTheConverseInputCarriesTheForcedTool(t *testing.T) {
	api := &stubAPI{}
	c, err := bedrock.New(bedrock.Config{API: api, Model: "anthropic.claude-sonnet-4-5-20250929-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(context.Background(), withFormat()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	tc := api.in.ToolConfig
	if tc == nil || len(tc.Tools) != 1 {
		t.Fatalf("toolConfig %+v", tc)
	}
	spec, _ := tc.Tools[0].(*types.ToolMemberToolSpec)
	choice, _ := tc.ToolChoice.(*types.ToolChoiceMemberTool)
	if spec == nil || aws.ToString(spec.Value.Name) != "person" || choice == nil || aws.ToString(choice.Value.Name) != "person" {
		t.Fatalf("toolConfig %+v: want the forced tool person", tc)
	}
	schema, _ := spec.Value.InputSchema.(*types.ToolInputSchemaMemberJson)
	b, err := schema.Value.MarshalSmithyDocument()
	var got, want any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(personSchema), &want)
	if err != nil || !jsonEqual(got, want) {
		t.Fatalf("inputSchema.json %s (%v), want %s", b, err, personSchema)
	}
	if _, err := c.Generate(context.Background(), request()); err != nil || api.in.ToolConfig != nil {
		t.Fatalf("a call without a format sent toolConfig %+v (%v)", api.in.ToolConfig, err)
	}
}

// Whole or streamed, on Claude and on Nova, the answer is the toolUse
// block's input: the fake's instance passes model.CheckOutput; with
// Nonconforming its refused JSON fails it invalid_output, the usage kept.
// A model Bedrock gives no forced tool (Llama) refuses the body.
func TestTheToolUseInputIsTheAnswer(t *testing.T) {
	for _, name := range []string{"anthropic.claude-sonnet-4-5-20250929-v1:0", "us.amazon.nova-pro-v1:0", "meta.llama3-70b-instruct-v1:0"} {
		for _, stream := range []bool{false, true} {
			for _, bad := range []bool{false, true} {
				s := bedrocktest.New(nil)
				s.Nonconforming = bad
				srv := httptest.NewServer(s.Handler())
				c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: name, Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				r := withFormat()
				resp, err := c.Generate(context.Background(), r)
				srv.Close()
				var me *model.Error
				if name == "meta.llama3-70b-instruct-v1:0" {
					if !errors.As(err, &me) || me.Class != job.InvalidRequest {
						t.Fatalf("%s: %v, want invalid_request", name, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s stream=%v: Generate: %v", name, stream, err)
				}
				err = model.CheckOutput(job.Input{Options: r.Options}, resp)
				if !bad {
					if err != nil || resp.FinishReason != "tool_use" {
						t.Fatalf("%s stream=%v: a conforming answer %q (%s): %v", name, stream, resp.Output, resp.FinishReason, err)
					}
					continue
				}
				if !errors.As(err, &me) || me.Class != job.InvalidOutput || me.Usage != resp.Usage || resp.Usage.OutputTokens == 0 {
					t.Fatalf("%s stream=%v: a nonconforming answer %q: %v, want invalid_output carrying usage %+v", name, stream, resp.Output, err, resp.Usage)
				}
			}
		}
	}
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
