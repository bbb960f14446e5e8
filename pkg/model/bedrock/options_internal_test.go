package bedrock

import (
	"encoding/json"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// A batch record's modelInput is the Converse body a call sends: the
// options in inferenceConfig and additionalModelRequestFields, by the
// names Converse's JSON gives them.
func TestABatchRecordCarriesTheOptions(t *testing.T) {
	topP := 0.97
	r := model.Request{JobID: "job-1", MaxTokens: 4096, Messages: []job.Message{{Role: "user", Content: "hi"}},
		Options: job.Options{TopP: &topP, Stop: []string{"END"}, Reasoning: &job.Reasoning{BudgetTokens: 2048}}}
	body, err := converseJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		InferenceConfig              map[string]any `json:"inferenceConfig"`
		AdditionalModelRequestFields map[string]any `json:"additionalModelRequestFields"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	ic := got.InferenceConfig
	if ic["maxTokens"] != 4096.0 || ic["topP"] != 0.97 || len(ic["stopSequences"].([]any)) != 1 {
		t.Errorf("inferenceConfig %v", ic)
	}
	if th, _ := got.AdditionalModelRequestFields["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != 2048.0 {
		t.Errorf("additionalModelRequestFields %v", got.AdditionalModelRequestFields)
	}
	plain, _ := converseJSON(model.Request{JobID: "job-2", Messages: r.Messages})
	if b, _ := json.Marshal(plain); string(b) != `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}` {
		t.Errorf("a record without options: %s", b)
	}
}
