package bedrock_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
)

// withOptions asks for top_p and stop sequences, and a thinking budget
// when thinking.
func withOptions(thinking bool) model.Request {
	r := request()
	topP := 0.95
	r.MaxTokens = 4096
	r.Options = job.Options{TopP: &topP, Stop: []string{"END", "STOP"}}
	if thinking {
		r.Options.Reasoning = &job.Reasoning{BudgetTokens: 1024}
	}
	return r
}

// Converse carries top_p and stop sequences in inferenceConfig and
// Claude's thinking budget in additionalModelRequestFields, in the
// Messages API's own shape
// (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html).
func TestTheConverseInputCarriesTheOptions(t *testing.T) {
	api := &stubAPI{}
	c, err := bedrock.New(bedrock.Config{API: api, Model: "anthropic.claude-sonnet-4-5-20250929-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(context.Background(), withOptions(true)); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	ic := api.in.InferenceConfig
	if ic == nil || aws.ToFloat32(ic.TopP) != 0.95 || !slices.Equal(ic.StopSequences, []string{"END", "STOP"}) || aws.ToInt32(ic.MaxTokens) != 4096 {
		t.Fatalf("inferenceConfig %+v", ic)
	}
	if api.in.AdditionalModelRequestFields == nil {
		t.Fatal("no additionalModelRequestFields: the thinking budget was dropped")
	}
	b, err := api.in.AdditionalModelRequestFields.MarshalSmithyDocument()
	if err != nil || string(b) != `{"thinking":{"budget_tokens":1024,"type":"enabled"}}` {
		t.Fatalf("additionalModelRequestFields %s (%v)", b, err)
	}
	if _, err := c.Generate(context.Background(), request()); err != nil || api.in.AdditionalModelRequestFields != nil || api.in.InferenceConfig != nil {
		t.Fatalf("a call without options sent %+v (%v)", api.in, err)
	}
}

// A seed, or an effort without a budget, has no place in Converse: the
// call is refused unsent.
func TestAnOptionConverseHasNoPlaceForIsRefusedUnsent(t *testing.T) {
	api := &stubAPI{}
	c, err := bedrock.New(bedrock.Config{API: api, Model: "anthropic.claude-sonnet-4-5-20250929-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	for _, o := range []job.Options{{Seed: &seed}, {Reasoning: &job.Reasoning{Effort: "low"}}} {
		r := request()
		r.Options = o
		_, err := c.Generate(context.Background(), r)
		var me *model.Error
		if !errors.As(err, &me) || me.Class != job.InvalidRequest || api.in != nil {
			t.Fatalf("%+v: err %v, sent %v; want invalid_request, nothing sent", o, err, api.in != nil)
		}
	}
}

// Against the fake, as Bedrock answers: Claude takes the options, a
// thinking budget included, whole and streamed; a model that does not
// think refuses the budget, and Claude 4 refuses temperature with topP,
// so a wrong mapping (or a family rule config missed) fails here.
func TestTheFakeHoldsConverseOptionsToBedrocksRules(t *testing.T) {
	warm := 0.5
	for _, tt := range []struct {
		model  string
		r      model.Request
		served bool
	}{
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", withOptions(true), true},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", withOptions(true), true},
		{"us.amazon.nova-pro-v1:0", withOptions(false), true},
		{"us.amazon.nova-pro-v1:0", withOptions(true), false},
		{"anthropic.claude-opus-4-7-v1:0", withOptions(true), false},
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", func() model.Request { r := withOptions(false); r.Temperature = &warm; return r }(), false},
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", func() model.Request { r := withOptions(true); r.Temperature = &warm; return r }(), false},
	} {
		for _, stream := range []bool{false, true} {
			s := bedrocktest.New(nil)
			srv := httptest.NewServer(s.Handler())
			c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: tt.model, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Generate(context.Background(), tt.r)
			srv.Close()
			var me *model.Error
			switch {
			case tt.served && err != nil:
				t.Errorf("%s stream=%v: %v, want served", tt.model, stream, err)
			case !tt.served && (!errors.As(err, &me) || me.Class != job.InvalidRequest):
				t.Errorf("%s stream=%v: err %v, want invalid_request (a ValidationException)", tt.model, stream, err)
			}
		}
	}
}
