package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// pdfBytes is the PDF TestATwoMegabytePDFWithASchemaOnEveryProviderKind
// sends: 2 MiB, base64 2.8 MB, under a create body's 5 MiB inline and
// Converse's 4.5 MB a document.
const pdfBytes = 2 << 20

// twoMegabytePDF is a real one-page PDF (catalog, page tree, page) padded
// to pdfBytes with a stream of random bytes no filter names, so its page
// count is 1 and nothing in it compresses away.
func twoMegabytePDF() []byte {
	head := "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n" +
		"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
	const open = "4 0 obj << /Length 0000000 >>\nstream\n"
	tail := "\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
	pad := make([]byte, pdfBytes-len(head)-len(open)-len(tail))
	_, _ = rand.NewChaCha8([32]byte{'p', 'd', 'f'}).Read(pad)
	// No line break in the stream: a random "stream\n" would start
	// another stream for the page count.
	for i, c := range pad {
		if c == '\n' || c == '\r' {
			pad[i] = ' '
		}
	}
	out := fmt.Appendf([]byte(head), "4 0 obj << /Length %07d >>\nstream\n", len(pad))
	return append(append(out, pad...), tail...)
}

// documentCase is one provider kind's fake behind a route of one rung:
// the wire it speaks, and where that wire carries a PDF.
type documentCase struct {
	*optionsCase
	entry string // the AIJOBS_ROUTES provider entry, its URL a %q
	shape string // the part's kind on the provider's wire (sentDocument)
	fake  http.Handler
	bills func() []job.Nanocents
}

// TestATwoMegabytePDFWithASchemaOnEveryProviderKind: on the emulator, a
// job with a 2 MiB PDF and a JSON Schema response_format, sent once
// inline and once as a part naming an upload, succeeds on each provider
// kind's fake (OpenAI's chat completions and Responses API, Anthropic's
// Messages, Bedrock's ConverseStream): the fake received the whole PDF
// in its provider's own shape (its SHA-256 the file's), answered JSON the
// schema accepts, and the job took one generation at exactly the fake's
// bill. A fake answering JSON the schema refuses ends the job
// invalid_output after its attempts, each billed (issue 39's done-when).
func TestATwoMegabytePDFWithASchemaOnEveryProviderKind(t *testing.T) {
	t.Parallel()
	pdf := twoMegabytePDF()
	bad := &openaitest.Server{Nonconforming: true}
	cases, providers, routes := documentStack(t, bad)
	// The API parses 2.8 MB a create and the worker as much an attempt:
	// under -race that outlasts the default timeouts (race_test.go).
	env := maps.Clone(steadyLease)
	maps.Copy(env, map[string]string{"AIJOBS_ROUTES": `{"providers": {` + strings.Join(providers, ",\n") + `}, "routes": {` + strings.Join(routes, ",\n") + `}}`,
		"AIJOBS_WORKER_TIMEOUT": "60s", "AIJOBS_VISIBILITY_TIMEOUT": "61s", "AIJOBS_API_TIMEOUT": "29s"})
	s := startStackWith(t, env, false)

	uploadID := s.uploadFile("t", "application/pdf", pdf)
	inline := fmt.Sprintf(`{"type": "document", "media_type": "application/pdf", "data": %q, "name": "contract.pdf"}`, base64.StdEncoding.EncodeToString(pdf))
	byUpload := fmt.Sprintf(`{"type": "document", "upload": %q, "name": "contract.pdf"}`, uploadID)
	body := func(route, part string) string {
		return fmt.Sprintf(`{"model": %q, "max_attempts": 2, "budget_cents": 10000, "input": {"max_tokens": 512, "response_format": %s,
			"messages": [{"role": "user", "content": [{"type": "text", "text": "summarise the contract"}, %s]}]}}`, route, schemaFormat, part)
	}
	bodies := map[string]string{}
	for _, c := range cases {
		part := inline
		if strings.HasSuffix(c.name, "-upload") {
			part = byUpload
		}
		bodies[c.name] = body(c.name, part)
	}
	// The nonconforming answer needs no large input.
	bodies["bad"] = body("bad", fmt.Sprintf(`{"type": "document", "media_type": "application/pdf", "data": %q}`, base64.StdEncoding.EncodeToString(modeltest.PDF)))
	// One after another: at once, under -race, each overran the API's
	// 29 s and was sent again.
	ids := map[string]string{}
	for name, body := range bodies {
		ids[name] = s.submit("t", "pdf-"+name, body)
	}
	ended := map[string]job.Job{}
	for _, j := range awaitAll(t, s, slices.Collect(maps.Values(ids)), 60*time.Second) {
		ended[j.ID] = j
	}
	bills := map[string][]job.Nanocents{}
	for _, c := range cases {
		bills[c.name] = c.bills()
	}
	sum := sha256.Sum256(pdf)
	for _, c := range cases[:len(cases)-1] {
		t.Run(c.name, func(t *testing.T) {
			j := ended[ids[c.name]]
			var res struct{ Output string }
			_ = json.Unmarshal(j.Result, &res)
			var answer struct {
				Title string   `json:"title"`
				Pages int      `json:"pages"`
				Tags  []string `json:"tags"`
			}
			if j.State != job.Succeeded || json.Unmarshal([]byte(res.Output), &answer) != nil || len(answer.Title) < 3 || answer.Pages < 1 || len(answer.Tags) < 2 {
				t.Fatalf("job %s: %s (%s %s), answer %q", j.ID, j.State, j.ErrorClass, j.ErrorDetail, res.Output)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.bodies) != 1 || j.Attempts != 1 || len(bills[c.name]) != 1 {
				t.Fatalf("job %s: %d calls, %d attempts, %d bills; want one generation", j.ID, len(c.bodies), j.Attempts, len(bills[c.name]))
			}
			shape, got := sentDocument(c.bodies[0])
			if shape != c.shape || sha256.Sum256(got) != sum {
				t.Errorf("the fake received a %q part of %d bytes (SHA-256 matches: %v), want %q of the %d-byte PDF",
					shape, len(got), sha256.Sum256(got) == sum, c.shape, len(pdf))
			}
			if j.Cost != bills[c.name][0] || j.CostEstimated {
				t.Errorf("job %s: cost %s (estimated %v), the fake billed %s", j.ID, j.Cost, j.CostEstimated, bills[c.name][0])
			}
		})
	}
	t.Run("nonconforming", func(t *testing.T) {
		j := ended[ids["bad"]]
		var want job.Nanocents
		for _, b := range bills["bad"] {
			want += b
		}
		if j.State != job.Failed || j.ErrorClass != job.InvalidOutput || j.Attempts != 2 || j.Result != nil {
			t.Fatalf("job %s: %s (%s) after %d attempts, want failed invalid_output after 2", j.ID, j.State, j.ErrorClass, j.Attempts)
		}
		if len(bills["bad"]) != 2 || want <= 0 || j.Cost != want || j.CostEstimated {
			t.Fatalf("job %s: cost %s (estimated %v), the fake billed %d answers worth %s", j.ID, j.Cost, j.CostEstimated, len(bills["bad"]), want)
		}
	})
}

// documentStack serves each provider kind's fake twice (for the inline
// job and the upload's) and the nonconforming OpenAI one, and answers
// the cases, the AIJOBS_ROUTES provider entries and the routes, one rung
// each, at 100 and 400 cents a million tokens.
func documentStack(t *testing.T, bad *openaitest.Server) (cases []*documentCase, providers, routes []string) {
	for _, way := range []string{"-inline", "-upload"} {
		chat, responses, claude, converse := &openaitest.Server{}, &openaitest.Server{}, &anthropictest.Server{}, bedrocktest.New(nil)
		cases = append(cases,
			&documentCase{&optionsCase{name: "chat" + way, model: "gpt-4o-mini"}, `{"kind": "openai", "base_url": %q, "stream": false}`,
				"file", chat.Handler(), openAIBills(chat)},
			&documentCase{&optionsCase{name: "responses" + way, model: "gpt-4o-mini"}, `{"kind": "openai", "base_url": %q, "background": true, "poll_every": "200ms"}`,
				"input_file", responses.Handler(), openAIBills(responses)},
			&documentCase{&optionsCase{name: "claude" + way, model: "claude-sonnet-4-5"}, `{"kind": "anthropic", "base_url": %q, "stream": true}`,
				"document", claude.Handler(), func() (out []job.Nanocents) {
					for _, u := range claude.Billed() {
						out = append(out, job.Nanocents(u.Bill(100_000, 400_000)))
					}
					return out
				}},
			&documentCase{&optionsCase{name: "converse" + way, model: "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
				`{"kind": "bedrock", "region": "us-east-1", "endpoint": %q, "stream": true}`, "document block", converse.Handler(), func() (out []job.Nanocents) {
					for _, u := range converse.Billed() {
						out = append(out, job.Nanocents(u.Bill(100_000, 0, 0, 400_000)))
					}
					return out
				}})
	}
	cases = append(cases, &documentCase{&optionsCase{name: "bad", model: "gpt-4o-mini"}, `{"kind": "openai", "base_url": %q, "stream": false}`,
		"file", bad.Handler(), openAIBills(bad)})
	for _, c := range cases {
		providers = append(providers, fmt.Sprintf(`%q: `+c.entry, c.name, c.serve(t, c.fake)))
		routes = append(routes, fmt.Sprintf(`%q: {"rungs": [{"provider": %q, "model": %q, "price": {"input": 100, "output": 400}, "timeout": "20s"}]}`,
			c.name, c.name, c.model))
	}
	routes = append(routes, `"default": {"rungs": [{"provider": "chat-inline", "model": "gpt-4o-mini", "price": {"input": 100, "output": 400}, "timeout": "20s"}]}`)
	return cases, providers, routes
}

// openAIBills is what s billed each answer at 100 and 400 cents a
// million tokens.
func openAIBills(s *openaitest.Server) func() []job.Nanocents {
	return func() (out []job.Nanocents) {
		for _, b := range s.Bills() {
			out = append(out, job.Nanocents(b.Input*100_000+b.Output*400_000))
		}
		return out
	}
}

// sentDocument is the PDF a provider's body carries and the shape it
// carries it in: OpenAI chat's file part, the Responses API's input_file,
// Anthropic's document block, Converse's document block.
func sentDocument(body map[string]json.RawMessage) (string, []byte) {
	var msgs []struct {
		Content []map[string]any `json:"content"`
	}
	member := body["messages"]
	if member == nil {
		member = body["input"] // the Responses API's
	}
	_ = json.Unmarshal(member, &msgs)
	at := func(m any, keys ...string) string {
		for _, k := range keys {
			next, _ := m.(map[string]any)
			m = next[k]
		}
		s, _ := m.(string)
		return s
	}
	decode := func(s string) []byte {
		b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "data:application/pdf;base64,"))
		return b
	}
	for _, m := range msgs {
		for _, p := range m.Content {
			switch {
			case p["type"] == "file":
				return "file", decode(at(p, "file", "file_data"))
			case p["type"] == "input_file":
				return "input_file", decode(at(p, "file_data"))
			case p["type"] == "document":
				return "document", decode(at(p, "source", "data"))
			case p["document"] != nil:
				return "document block", decode(at(p, "document", "source", "bytes"))
			}
		}
	}
	return "", nil
}
