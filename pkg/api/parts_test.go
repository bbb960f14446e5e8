package api

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

var (
	partsPNG = base64.StdEncoding.EncodeToString(onePixelPNG())
	partsPDF = base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n3 0 obj << /Type /Page >> endobj\n%%EOF\n"))
)

// onePixelPNG is a whole 1 x 1 PNG.
func onePixelPNG() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	return b.Bytes()
}

// partsEnv is an API whose routes read images and documents ("sees"), or
// images only ("looks").
func partsEnv(t *testing.T) *env {
	price := job.Price{InputPerToken: 1, OutputPerToken: 2}
	rung := func(provider, model string, takes job.Takes) job.Rung {
		return job.Rung{Provider: provider, Model: model, Price: price, Timeout: time.Minute, Takes: takes}
	}
	sees := rung("fk", "fake", job.Takes{Images: true, Documents: true})
	routes := map[string]job.Route{
		"sees":  {Rungs: []job.Rung{sees}},
		"looks": {Rungs: []job.Rung{sees, rung("oa", "vision-only", job.Takes{Images: true})}, FallbackOn: []job.ErrorClass{job.Timeout}},
	}
	e := newEnv(t)
	s := settings.Defaults()
	s.Limits.Models = []string{"sees", "looks"}
	e.h = New(Config{Store: e.store, Queue: e.queue, Limits: s.Limits, Retention: s.Retention, Clock: e.clock,
		Routes: routes, Callbacks: testCallbacks, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	return e
}

func partsBody(route, content string) string {
	return `{"model":"` + route + `","input":{"messages":[{"role":"user","content":` + content + `}],"max_tokens":64}}`
}

// A part that breaks the rules is a 400 invalid_request naming it by its
// path, nothing recorded.
func TestACreateWithABadPartIsRefusedNamingIt(t *testing.T) {
	e := partsEnv(t)
	text := `{"type":"text","text":"read"}`
	for _, tt := range []struct{ name, content, field string }{
		{"a media type not listed", `[` + text + `,` + text + `,{"type":"image","media_type":"image/bmp","data":"` + partsPNG + `"}]`, "input.messages[0].content[2].media_type"},
		{"bad base64", `[{"type":"image","media_type":"image/png","data":"***"}]`, "input.messages[0].content[0].data"},
		{"a PDF labelled PNG", `[{"type":"image","media_type":"image/png","data":"` + partsPDF + `"}]`, "input.messages[0].content[0].media_type"},
		{"an unknown type", `[{"type":"video","media_type":"video/mp4","data":"AAAA"}]`, "input.messages[0].content[0].type"},
		{"an unknown member", `[{"type":"text","text":"x","url":"https://example.com"}]`, "input.messages[0].content[0]"},
		{"a number", `7`, "input.messages[0].content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, createReq(t, "bad-"+tt.name, partsBody("sees", tt.content)))
			wantProblem(t, resp, http.StatusBadRequest, wire.CodeInvalidRequest, tt.field)
			if e.store.Len() != 0 {
				t.Fatalf("a refused create left %d records", e.store.Len())
			}
		})
	}
}

// A document on a route with a rung whose model reads none is a 422
// naming the part and the rung; the same body on a route whose rungs read
// documents is accepted, its parts stored as sent.
func TestADocumentARungCannotReadIsRefusedAtCreate(t *testing.T) {
	e := partsEnv(t)
	content := `[{"type":"text","text":"summarise"},{"type":"image","media_type":"image/png","data":"` + partsPNG +
		`"},{"type":"document","media_type":"application/pdf","data":"` + partsPDF + `","name":"c.pdf"}]`
	resp := e.do(t, createReq(t, "looks", partsBody("looks", content)))
	p := wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeOptionUnsupported, "input.messages[0].content[2]")
	if !strings.Contains(p.Detail, "rung 1 (oa/vision-only)") || !strings.Contains(p.Detail, "document") {
		t.Errorf("detail %q names neither the rung nor the document", p.Detail)
	}
	if e.store.Len() != 0 {
		t.Fatalf("a refused create left %d records", e.store.Len())
	}
	resp = e.do(t, createReq(t, "sees", partsBody("sees", content)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %s", resp.StatusCode, resp.Body)
	}
	// The same parts in other whitespace are the same input: a repeat.
	spaced := strings.ReplaceAll(strings.ReplaceAll(content, `","`, `" , "`), `{"type"`, "{ \n\"type\"")
	if resp := e.do(t, createReq(t, "sees", partsBody("sees", spaced))); resp.StatusCode != http.StatusOK {
		t.Fatalf("the same parts in other whitespace: status %d, body %s, want the first job's 200", resp.StatusCode, resp.Body)
	}
}

// A message member that only names a Go field's place ("-") is unknown,
// refused like any other.
func TestAMessageMemberNamedDashIsRefused(t *testing.T) {
	e := partsEnv(t)
	body := `{"model":"sees","input":{"messages":[{"role":"user","content":"hi","-":"x"}]}}`
	wantProblem(t, e.do(t, createReq(t, "dash", body)), http.StatusBadRequest, wire.CodeInvalidRequest, "input.messages[0].-")
}
