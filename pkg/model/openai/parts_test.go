package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// messagesOf is the JSON of body's member.
func messagesOf(t *testing.T, body map[string]any, member string) string {
	t.Helper()
	b, err := json.Marshal(body[member])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Chat completions carry a user message's parts as the content array
// (text, image_url with a data URL, file with filename and file_data), a
// plain text document as text, and every other message as a string; the
// fake, holding parts to OpenAI's rules, serves them.
func TestTheChatBodyCarriesTheParts(t *testing.T) {
	r := fakeRequest("gpt-4o-mini", job.Standard)
	r.Messages = modeltest.PartsMessages("c.pdf")
	b64 := base64.StdEncoding.EncodeToString
	// The body is read back into maps, so members come sorted.
	want := `[{"content":"be brief","role":"system"},{"content":"hello","role":"user"},{"content":"hi","role":"assistant"},` +
		`{"content":[{"text":"summarise these","type":"text"},` +
		`{"image_url":{"url":"data:image/png;base64,` + b64(modeltest.PNG) + `"},"type":"image_url"},` +
		`{"file":{"file_data":"data:application/pdf;base64,` + b64(modeltest.PDF) + `","filename":"c.pdf"},"type":"file"},` +
		`{"text":"` + string(modeltest.Note) + `","type":"text"}],"role":"user"}]`
	if got := messagesOf(t, sentBody(t, false, r), "messages"); got != want {
		t.Errorf("chat messages\n%s\nwant\n%s", got, want)
	}
	r.Messages[3].Parts[2].Name = ""
	if got := messagesOf(t, sentBody(t, false, r), "messages"); !strings.Contains(got, `"filename":"document.pdf"`) {
		t.Errorf("an unnamed PDF is sent %s, want a filename the API takes", got)
	}
}

// The Responses API takes input_text, input_image (a data URL) and
// input_file.
func TestTheResponsesBodyCarriesTheParts(t *testing.T) {
	r := fakeRequest("gpt-4o-mini", job.Standard)
	r.Messages = modeltest.PartsMessages("c.pdf")
	b64 := base64.StdEncoding.EncodeToString
	want := `{"content":[{"text":"summarise these","type":"input_text"},` +
		`{"image_url":"data:image/png;base64,` + b64(modeltest.PNG) + `","type":"input_image"},` +
		`{"file_data":"data:application/pdf;base64,` + b64(modeltest.PDF) + `","filename":"c.pdf","type":"input_file"},` +
		`{"text":"` + string(modeltest.Note) + `","type":"input_text"}],"role":"user"}`
	var input []json.RawMessage
	_ = json.Unmarshal([]byte(messagesOf(t, sentBody(t, true, r), "input")), &input)
	if len(input) != 4 || string(input[3]) != want || string(input[0]) != `{"content":"be brief","role":"system"}` {
		t.Errorf("responses input %s\nwant its last\n%s", input, want)
	}
}

// The fake refuses parts as OpenAI does: 400 invalid_request_error.
func TestTheFakeRefusesPartsAsOpenAIDoes(t *testing.T) {
	srv := httptest.NewServer((&openaitest.Server{}).Handler())
	defer srv.Close()
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(modeltest.PNG)
	for _, tt := range []struct{ name, path, body, want string }{
		{"an image from the assistant", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"` + png + `"}}]}]}`,
			"only allowed for messages with role 'user'"},
		{"an image to a model without vision", "/chat/completions", `{"model":"gpt-3.5-turbo","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + png + `"}}]}]}`,
			"only supported by certain models"},
		{"an image that is no data URL", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AAAA"}}]}]}`,
			"invalid_image_format"},
		{"a file without a filename", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0="}}]}]}`,
			"filename"},
		{"a Responses part on chat", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
			"invalid_value"},
		{"a chat part on Responses", "/responses", `{"model":"gpt-4o","background":true,"store":true,"input":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + png + `"}}]}]}`,
			"invalid_value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+apiKey)
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
