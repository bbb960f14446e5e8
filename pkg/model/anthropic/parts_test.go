package anthropic_test

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

	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A user message's parts go as Messages API content blocks: text, an
// image with a base64 source, a PDF document with a base64 source and
// its name as title, a plain text document with a text source; a system
// prompt of text parts goes as its text, and the fake serves it all.
func TestTheMessagesBodyCarriesTheParts(t *testing.T) {
	var sent map[string]json.RawMessage
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &sent)
		fwd, _ := http.NewRequest(r.Method, fake.URL+r.URL.Path, bytes.NewReader(b))
		fwd.Header = r.Header
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer spy.Close()
	r := request()
	r.Model = claude4[0]
	r.Messages = modeltest.PartsMessages("c.pdf")
	if _, err := clientAt(t, spy.URL, false).Generate(context.Background(), r); err != nil {
		t.Fatalf("Generate: %v (the fake refused the body?)", err)
	}
	b64 := base64.StdEncoding.EncodeToString
	want := `[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":[` +
		`{"text":"summarise these","type":"text"},` +
		`{"source":{"data":"` + b64(modeltest.PNG) + `","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"source":{"data":"` + b64(modeltest.PDF) + `","media_type":"application/pdf","type":"base64"},"title":"c.pdf","type":"document"},` +
		`{"source":{"data":"` + string(modeltest.Note) + `","media_type":"text/plain","type":"text"},"type":"document"}]}]`
	if string(sent["messages"]) != want || string(sent["system"]) != `"be brief"` {
		t.Errorf("messages\n%s\nwant\n%s\n(system %s)", sent["messages"], want, sent["system"])
	}
}

// The fake refuses blocks as the API does: 400 invalid_request_error.
func TestTheFakeRefusesBlocksAsAnthropicDoes(t *testing.T) {
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	png := base64.StdEncoding.EncodeToString(modeltest.PNG)
	for _, tt := range []struct{ name, content, want string }{
		{"an unknown block", `[{"type":"image_url","image_url":{"url":"x"}}]`, "messages.0.content.0.type"},
		{"a media type not taken", `[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"` + png + `"}}]`, "messages.0.content.0.image.source.base64.media_type: Input should be"},
		{"a PNG labelled JPEG", `[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"` + png + `"}}]`,
			"messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg"},
		{"a PNG as a PDF", `[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + png + `"}}]`, "does not match"},
		{"a document of another type", `[{"type":"document","source":{"type":"base64","media_type":"text/html","data":"PGI+"}}]`, "source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":` + tt.content + `}]}`
			req, _ := http.NewRequest(http.MethodPost, fake.URL+"/v1/messages", strings.NewReader(body))
			req.Header.Set("Anthropic-Version", "2023-06-01")
			req.Header.Set("X-Api-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.want) || !strings.Contains(string(b), "invalid_request_error") {
				t.Errorf("%d %s, want 400 invalid_request_error naming %q", resp.StatusCode, b, tt.want)
			}
		})
	}
}
