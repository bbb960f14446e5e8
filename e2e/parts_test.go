package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// TestContentPartsEndToEnd: through the whole stack on the emulator, a
// job whose message carries a small PDF and a PNG succeeds on each
// provider kind's fake, which received the parts in its provider's own
// shape (OpenAI's image_url and file parts, Anthropic's image and
// document blocks, Converse's image and document blocks) and which
// refuses what its provider refuses; a job with a document on a route
// whose rung reads none is refused at create, 422 naming the part and the
// rung, and nothing reaches a provider (issue N item 2).
func TestContentPartsEndToEnd(t *testing.T) {
	t.Parallel()
	cases := []*optionsCase{
		{name: "gpt", entry: "openai", model: "gpt-4o-mini"},
		{name: "claude", entry: "anthropic", model: "claude-sonnet-4-5"},
		{name: "converse", entry: "bedrock", model: "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
	}
	entries, routes := optionsStack(t, cases)
	// Claude 3 Haiku reads images but no PDFs.
	routes = append(routes, `"default": {"rungs": [{"provider": "gpt", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "5s"}]}`,
		`"nodocs": {"rungs": [{"provider": "gpt", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "5s"},
		                     {"provider": "claude", "model": "claude-3-haiku-20240307", "price": {"input": 100, "output": 400}, "timeout": "5s"}],
		           "fallback_on": ["rate_limited"]}`)
	doc := `{"providers": {` + strings.Join(entries, ",\n") + `}, "routes": {` + strings.Join(routes, ",\n") + `}}`
	overrides := map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_WORKER_TIMEOUT": "15s", "AIJOBS_VISIBILITY_TIMEOUT": "16s"}
	for k, v := range steadyLease {
		overrides[k] = v
	}
	s := startStackWith(t, overrides, false)

	b64 := base64.StdEncoding.EncodeToString
	body := func(route string) string {
		return fmt.Sprintf(`{"model": %q, "input": {"max_tokens": 64, "messages": [{"role": "user", "content": [
			{"type": "text", "text": "summarise the contract and describe the picture"},
			{"type": "image", "media_type": "image/png", "data": %q},
			{"type": "document", "media_type": "application/pdf", "data": %q, "name": "contract.pdf"}]}]}}`,
			route, b64(modeltest.PNG), b64(modeltest.PDF))
	}
	r, _ := s.retried("POST", "/jobs", "t", map[string]string{"Idempotency-Key": "parts-refused"}, body("nodocs"))
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "option_unsupported" || r.body["field"] != "input.messages[0].content[2]" ||
		!strings.Contains(fmt.Sprint(r.body["detail"]), "rung 1 (claude/claude-3-haiku-20240307)") {
		t.Fatalf("a PDF on a rung that reads none: %d %s, want 422 option_unsupported on input.messages[0].content[2] naming rung 1", r.status, r.raw)
	}

	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = s.submit("t", "parts-"+c.name, body(c.name))
	}
	awaitAll(t, s, ids, 30*time.Second)
	// Each provider's content array, as kinds in order and the image's
	// and the PDF's bytes where its shape puts them.
	want := map[string]string{
		"openai":    `text image_url:data:image/png;base64,` + b64(modeltest.PNG) + ` file:contract.pdf:data:application/pdf;base64,` + b64(modeltest.PDF),
		"anthropic": `text image:base64:image/png:` + b64(modeltest.PNG) + ` document:base64:application/pdf:` + b64(modeltest.PDF),
		"bedrock":   `text image:png:` + b64(modeltest.PNG) + ` document:pdf:contract-pdf:` + b64(modeltest.PDF),
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := s.get("t", ids[i]).body; v["state"] != "succeeded" {
				t.Fatalf("job %s: %v (%v)", ids[i], v["state"], v["error_class"])
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.bodies) != 1 {
				t.Fatalf("the fake was sent %d calls, want 1 (the nodocs job reached none)", len(c.bodies))
			}
			var msgs []struct {
				Content []map[string]any `json:"content"`
			}
			if err := json.Unmarshal(c.bodies[0]["messages"], &msgs); err != nil || len(msgs) != 1 {
				t.Fatalf("messages %s: %v", c.bodies[0]["messages"], err)
			}
			if got := shape(c.entry, msgs[0].Content); got != want[c.entry] {
				t.Errorf("content\n%s\nwant\n%s", got, want[c.entry])
			}
		})
	}
}

// shape is a content array in short: each part's kind and where its
// provider's wire puts the bytes.
func shape(entry string, parts []map[string]any) string {
	at := func(m any, keys ...string) string {
		for _, k := range keys {
			next, _ := m.(map[string]any)
			m = next[k]
		}
		return fmt.Sprint(m)
	}
	var out []string
	for _, p := range parts {
		switch {
		case entry == "openai" && p["type"] == "image_url":
			out = append(out, "image_url:"+at(p, "image_url", "url"))
		case entry == "openai" && p["type"] == "file":
			out = append(out, "file:"+at(p, "file", "filename")+":"+at(p, "file", "file_data"))
		case entry == "anthropic" && p["type"] != "text":
			out = append(out, fmt.Sprint(p["type"])+":"+at(p, "source", "type")+":"+at(p, "source", "media_type")+":"+at(p, "source", "data"))
		case entry == "bedrock" && p["image"] != nil:
			out = append(out, "image:"+at(p, "image", "format")+":"+at(p, "image", "source", "bytes"))
		case entry == "bedrock" && p["document"] != nil:
			out = append(out, "document:"+at(p, "document", "format")+":"+at(p, "document", "name")+":"+at(p, "document", "source", "bytes"))
		default:
			out = append(out, "text")
		}
	}
	return strings.Join(out, " ")
}
