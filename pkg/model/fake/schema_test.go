package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// The local fake answers a response_format with an instance of its
// schema, and with [[fake:nonconforming]] with JSON the schema refuses,
// billed as any answer.
func TestTheFakeAnswersTheSchema(t *testing.T) {
	p := fake.New(fake.Config{})
	f := &job.ResponseFormat{Type: job.FormatJSONSchema, JSONSchema: &job.JSONSchema{Name: "p",
		Schema: json.RawMessage(`{"type":"object","properties":{"tags":{"type":"array","items":{"enum":["a","b"]},"minItems":2}},"required":["tags"]}`)}}
	for _, prompt := range []string{"hello", "hello [[fake:nonconforming]]"} {
		r := model.Request{JobID: prompt, Messages: []job.Message{{Role: "user", Content: prompt}}, MaxTokens: 100, Options: job.Options{ResponseFormat: f}}
		resp, err := p.Generate(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		err = model.CheckOutput(job.Input{Options: r.Options}, resp)
		var me *model.Error
		if prompt == "hello" && (err != nil || resp.Output != `{"tags":["a","a"]}`) {
			t.Errorf("%q: answer %q: %v", prompt, resp.Output, err)
		}
		if prompt != "hello" && (!errors.As(err, &me) || me.Class != job.InvalidOutput || resp.Usage.InputTokens == 0) {
			t.Errorf("%q: answer %q: %v, want invalid_output, billed", prompt, resp.Output, err)
		}
	}
}
