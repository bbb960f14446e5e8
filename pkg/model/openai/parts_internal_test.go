package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A batch line's body is the chat body a call sends: its parts as the
// content array.
func TestABatchLineCarriesTheParts(t *testing.T) {
	c := &Client{}
	r := model.Request{JobID: "job-1", Model: "gpt-4o-mini", MaxTokens: 64, Messages: modeltest.PartsMessages("c.pdf")}
	b, err := json.Marshal(batchLine{CustomID: r.JobID, Method: "POST", URL: batchEndpoint, Body: c.chat(r)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"image_url":{"url":"data:image/png;base64,`, `},"type":"image_url"}`,
		`{"file":{"file_data":"data:application/pdf;base64,`, `"filename":"c.pdf"},"type":"file"}`, `{"role":"system","content":"be brief"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("batch line %s\nholds no %s", b, want)
		}
	}
}
