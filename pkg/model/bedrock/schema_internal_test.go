package bedrock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// A batch record's modelInput carries a response_format as a call does:
// toolConfig's one toolSpec with the schema as inputSchema.json, and
// toolChoice {tool: {name}}, by Converse's JSON names.
func TestABatchRecordCarriesTheForcedTool(t *testing.T) {
	r := model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: "hi"}},
		Options: job.Options{ResponseFormat: &job.ResponseFormat{Type: job.FormatJSONSchema,
			JSONSchema: &job.JSONSchema{Name: "person", Schema: json.RawMessage(personSchema)}}}}
	body, err := converseJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	var got struct {
		ToolConfig json.RawMessage `json:"toolConfig"`
	}
	_ = json.Unmarshal(b, &got)
	want := `{"tools":[{"toolSpec":{"name":"person","description":"` + answerTool + `","inputSchema":{"json":` + personSchema + `}}}],"toolChoice":{"tool":{"name":"person"}}}`
	if string(got.ToolConfig) != want {
		t.Fatalf("toolConfig %s, want %s", got.ToolConfig, want)
	}
	plain, _ := converseJSON(model.Request{JobID: "job-2", Messages: r.Messages})
	if b, _ := json.Marshal(plain); strings.Contains(string(b), "toolConfig") {
		t.Fatalf("a record without a format carries a toolConfig: %s", b)
	}
}

// A batch answer's toolUse input is its text, in Converse's shape or the
// Messages API's (an InvokeModel job's tool_use block).
func TestABatchAnswersToolUseIsItsText(t *testing.T) {
	for _, line := range []string{
		`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"person","input":{"name":"Ada"}}}]}},"stopReason":"tool_use"}`,
		`{"content":[{"type":"tool_use","id":"t1","name":"person","input":{"name":"Ada"}}],"stop_reason":"tool_use"}`,
	} {
		var m modelOutput
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if text, reason, _ := m.answer(); text != `{"name":"Ada"}` || reason != "tool_use" {
			t.Errorf("%s: answer %q (%s)", line, text, reason)
		}
	}
}
