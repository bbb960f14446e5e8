package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A batch record's modelInput carries the parts in Converse's JSON, as a
// call's body does: image and document blocks with their bytes in base64.
func TestABatchRecordCarriesTheParts(t *testing.T) {
	body, err := converseJSON(model.Request{JobID: "job-1", MaxTokens: 64, Messages: modeltest.PartsMessages("c.pdf")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	want := `{"role":"user","content":[{"text":"summarise these"},` +
		`{"image":{"format":"png","source":{"bytes":"` + b64(modeltest.PNG) + `"}}},` +
		`{"document":{"format":"pdf","name":"c-pdf","source":{"bytes":"` + b64(modeltest.PDF) + `"}}},` +
		`{"document":{"format":"txt","name":"document","source":{"bytes":"` + b64(modeltest.Note) + `"}}}]}`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"system":[{"text":"be brief"}]`) {
		t.Errorf("record body\n%s\nwant it to hold\n%s", b, want)
	}
	if why := bedrocktest.Refusal("anthropic.claude-sonnet-4-5-20250929-v1:0", b); why != "" {
		t.Errorf("the fake refuses the record: %s", why)
	}
}

// documentNames are the names of p's document blocks, in order.
func documentNames(p prompt) []string {
	var names []string
	for _, m := range p.messages {
		for _, blk := range m.Content {
			if d, ok := blk.(*types.ContentBlockMemberDocument); ok {
				names = append(names, aws.ToString(d.Value.Name))
			}
		}
	}
	return names
}

// A document's name is made one Converse takes, and two documents never
// share one.
func TestADocumentsNameIsOneConverseTakes(t *testing.T) {
	for in, want := range map[string]string{
		"contract.pdf":                "contract-pdf",
		"  Q3   report (final) [v2] ": "Q3 report (final) [v2]",
		"":                            "document",
		"über_файл":                   "-ber-----",
		strings.Repeat("a", 80):       strings.Repeat("a", 64),
	} {
		if got := sanitise(in); got != want {
			t.Errorf("sanitise(%q) = %q, want %q", in, got, want)
		}
	}
	r := model.Request{Messages: modeltest.PartsMessages("")}
	r.Messages[3].Parts = append(r.Messages[3].Parts, r.Messages[3].Parts[2])
	p, err := buildPrompt(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(documentNames(p))
	if string(b) != `["document","document (2)","document (3)"]` {
		t.Errorf("names %s, want each apart", b)
	}
}
