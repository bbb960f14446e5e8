package bedrock_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A user message's parts go as Converse text, image (format and source
// bytes) and document blocks (format pdf or txt, a name Converse takes,
// source bytes), whole and streamed; the fake, holding blocks to
// Converse's rules, serves them.
func TestTheConverseBodyCarriesTheParts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var sent map[string]json.RawMessage
		fake := httptest.NewServer(bedrocktest.New(nil).Handler())
		spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &sent)
			r.Body = io.NopCloser(bytes.NewReader(b))
			fake.Config.Handler.ServeHTTP(w, r)
		}))
		c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: spy.URL, Model: "anthropic.claude-sonnet-4-5-20250929-v1:0", Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		r := request()
		r.Messages = modeltest.PartsMessages("my contract.v2.pdf")
		if _, err := c.Generate(context.Background(), r); err != nil {
			t.Fatalf("stream %v: Generate: %v (the fake refused the body?)", stream, err)
		}
		spy.Close()
		fake.Close()
		b64 := base64.StdEncoding.EncodeToString
		want := `[{"content":[{"text":"hello"}],"role":"user"},{"content":[{"text":"hi"}],"role":"assistant"},{"content":[` +
			`{"text":"summarise these"},` +
			`{"image":{"format":"png","source":{"bytes":"` + b64(modeltest.PNG) + `"}}},` +
			`{"document":{"format":"pdf","name":"my contract-v2-pdf","source":{"bytes":"` + b64(modeltest.PDF) + `"}}},` +
			`{"document":{"format":"txt","name":"document","source":{"bytes":"` + b64(modeltest.Note) + `"}}}],"role":"user"}]`
		if got := compact(sent["messages"]); got != want || compact(sent["system"]) != `[{"text":"be brief"}]` {
			t.Errorf("stream %v: messages\n%s\nwant\n%s\n(system %s)", stream, got, want, sent["system"])
		}
	}
}

// compact is raw with members sorted, as the want strings write them.
func compact(raw json.RawMessage) string {
	var v any
	_ = json.Unmarshal(raw, &v)
	b, _ := json.Marshal(v)
	return string(b)
}

// The fake refuses blocks as Converse does: a ValidationException.
func TestTheFakeRefusesBlocksAsConverseDoes(t *testing.T) {
	fake := httptest.NewServer(bedrocktest.New(nil).Handler())
	defer fake.Close()
	png := base64.StdEncoding.EncodeToString(modeltest.PNG)
	doc := func(name string) string {
		return `{"document":{"format":"pdf","name":"` + name + `","source":{"bytes":"` + png + `"}}}`
	}
	for _, tt := range []struct{ name, messages, want string }{
		{"an image from the assistant", `[{"role":"user","content":[{"text":"x"}]},{"role":"assistant","content":[{"image":{"format":"png","source":{"bytes":"` + png + `"}}}]}]`,
			"role is user"},
		{"a format not listed", `[{"role":"user","content":[{"image":{"format":"tiff","source":{"bytes":"` + png + `"}}}]}]`, "enum value set"},
		{"a name with a dot", `[{"role":"user","content":[{"text":"x"},` + doc("a.pdf") + `]}]`, "document file name"},
		{"a name with two spaces", `[{"role":"user","content":[{"text":"x"},` + doc("a  b") + `]}]`, "document file name"},
		{"a document without text", `[{"role":"user","content":[` + doc("a") + `]}]`, "text block"},
		{"a block of two kinds", `[{"role":"user","content":[{"text":"x","image":{"format":"png","source":{"bytes":"` + png + `"}}}]}]`, "exactly one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const id = "anthropic.claude-sonnet-4-5-20250929-v1:0"
			body := `{"messages":` + tt.messages + `}`
			if why := bedrocktest.Refusal(id, []byte(body)); !strings.Contains(why, tt.want) {
				t.Errorf("refused for %q, want %q", why, tt.want)
			}
			resp, err := http.Post(fake.URL+"/model/"+id+"/converse", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "ValidationException" {
				t.Errorf("%d %s, want 400 ValidationException (%q)", resp.StatusCode, b, tt.want)
			}
		})
	}
}
