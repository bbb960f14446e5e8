package openai

import (
	"encoding/json"
	"testing"

	"github.com/aijobs/aijobs/pkg/model"
)

// A 2xx batch answer without choices is billed as an answer: the usage
// it reports is what it cost, and only without one is it estimated.
func TestABatchAnswerWithoutChoicesKeepsItsUsage(t *testing.T) {
	line := func(body string) resultLine {
		var l resultLine
		if err := json.Unmarshal([]byte(`{"custom_id":"job-a","response":{"status_code":200,"body":`+body+`}}`), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	_, err := result(line(`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}`))
	if _, u := model.Classify(err); u.InputTokens != 12 || u.OutputTokens != 3 || u.Estimated {
		t.Fatalf("usage %+v, want the answer's 12 and 3, not estimated", u)
	}
	_, err = result(line(`{"choices":[]}`))
	if _, u := model.Classify(err); !u.Estimated {
		t.Fatalf("usage %+v, want estimated", u)
	}
}
