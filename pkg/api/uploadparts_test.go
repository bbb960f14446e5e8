package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// partsWithPayloads is partsEnv with a payload store.
func partsWithPayloads(t *testing.T) (*env, fakePayloads) {
	e := partsEnv(t)
	p := fakePayloads{memstore.NewPayloads()}
	e.h.payloads = p
	return e, p
}

// uploadFile asks for an upload of b, of contentType, as tenant and
// "sends" it.
func uploadFile(t *testing.T, e *env, p fakePayloads, tenant, contentType string, b []byte) string {
	t.Helper()
	ev := asTenant(request(t, "POST", "/uploads", fmt.Sprintf(`{"size":%d,"content_type":%q}`, len(b), contentType)), tenant)
	resp := e.do(t, ev)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, resp.Body)
	}
	var u wire.Upload
	if err := json.Unmarshal([]byte(resp.Body), &u); err != nil {
		t.Fatal(err)
	}
	if u.Headers["Content-Type"] != contentType {
		t.Fatalf("the link signs Content-Type %q, want %q", u.Headers["Content-Type"], contentType)
	}
	_ = p.Put(context.Background(), strings.TrimPrefix(u.URL, "https://payloads.example/"), b, contentType)
	return u.UploadID
}

// docContent is a message's content: a text part, then part.
func docContent(part string) string {
	return `[{"type":"text","text":"summarise"},` + part + `]`
}

// The same PDF inline and by two uploads (each id once, with and without
// its media_type) is one input: one hash, and the same key a repeat.
func TestAPartNamingAnUploadIsTheSameInputAsInline(t *testing.T) {
	e, p := partsWithPayloads(t)
	pdf, _ := base64.StdEncoding.DecodeString(partsPDF)
	first := uploadFile(t, e, p, "tenant-a", "application/pdf", pdf)
	second := uploadFile(t, e, p, "tenant-a", "application/pdf", pdf)
	if first == second {
		t.Fatal("two uploads answered one id")
	}
	inline := e.do(t, createReq(t, "doc", partsBody("sees", docContent(`{"type":"document","media_type":"application/pdf","data":"`+partsPDF+`","name":"c.pdf"}`))))
	if inline.StatusCode != http.StatusAccepted {
		t.Fatalf("inline: %d %s", inline.StatusCode, inline.Body)
	}
	want := decodeView(t, inline)
	for _, part := range []string{
		`{"type":"document","upload":"` + first + `","media_type":"application/pdf","name":"c.pdf"}`,
		`{"type":"document","upload":"` + second + `","name":"c.pdf"}`,
	} {
		resp := e.do(t, createReq(t, "doc", partsBody("sees", docContent(part))))
		if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
			t.Fatalf("%s under the inline job's key: %d %s, want its repeat", part, resp.StatusCode, resp.Body)
		}
		if v := decodeView(t, resp); v.ID != want.ID || v.InputHash != want.InputHash {
			t.Fatalf("%s: job %s hash %s, want %s %s", part, v.ID, v.InputHash, want.ID, want.InputHash)
		}
	}
	// A fresh key stores the bytes, not the reference.
	resp := e.do(t, createReq(t, "doc-2", partsBody("sees", docContent(`{"type":"document","upload":"`+second+`"}`))))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("by upload: %d %s", resp.StatusCode, resp.Body)
	}
	j, err := e.store.Get(t.Context(), decodeView(t, resp).ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(j.Input, []byte(second)) || !bytes.Contains(j.Input, []byte(`"data":"`+partsPDF+`"`)) {
		t.Fatalf("the stored input %s does not carry the bytes in place of the upload", j.Input)
	}
}

func TestAnImagePartNamesAnUploadToo(t *testing.T) {
	e, p := partsWithPayloads(t)
	id := uploadFile(t, e, p, "tenant-a", "image/png", onePixelPNG())
	inline := e.do(t, createReq(t, "img", partsBody("sees", `[{"type":"image","media_type":"image/png","data":"`+partsPNG+`"}]`)))
	up := e.do(t, createReq(t, "img", partsBody("sees", `[{"type":"image","upload":"`+id+`"}]`)))
	if inline.StatusCode != http.StatusAccepted || up.StatusCode != http.StatusOK {
		t.Fatalf("inline %d %s, by upload %d %s; want 202 then its repeat", inline.StatusCode, inline.Body, up.StatusCode, up.Body)
	}
}

func TestAnotherTenantsUploadPartIsNotFound(t *testing.T) {
	e, p := partsWithPayloads(t)
	pdf, _ := base64.StdEncoding.DecodeString(partsPDF)
	theirs := uploadFile(t, e, p, "tenant-b", "application/pdf", pdf)
	resp := e.do(t, createReq(t, "theirs", partsBody("sees", docContent(`{"type":"document","upload":"`+theirs+`"}`))))
	wantProblem(t, resp, http.StatusUnprocessableEntity, wire.CodeUploadNotFound, "input.messages[0].content[1].upload")
	if e.store.Len() != 0 {
		t.Fatalf("a refused create left %d records", e.store.Len())
	}
	// Their own upload, under their key, is theirs to name.
	ev := asTenant(createReq(t, "theirs", partsBody("sees", docContent(`{"type":"document","upload":"`+theirs+`"}`))), "tenant-b")
	if resp := e.do(t, ev); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the owner naming its upload: %d %s", resp.StatusCode, resp.Body)
	}
}

// A part by upload is refused as the same bytes inline are, and what
// only an upload can get wrong is named at its upload member.
func TestABadUploadPartIsRefusedNamingIt(t *testing.T) {
	e, p := partsWithPayloads(t)
	pdf, _ := base64.StdEncoding.DecodeString(partsPDF)
	pdfID := uploadFile(t, e, p, "tenant-a", "application/pdf", pdf)
	binID := uploadFile(t, e, p, "tenant-a", "text/plain", []byte("a\x00b"))
	big := bytes.Repeat([]byte("a"), job.MaxDocumentBytes+1)
	bigID := newUploadID()
	_ = p.Put(t.Context(), uploadKey("jwt:tenant-a", bigID), append([]byte("%PDF-"), big...), "application/pdf") // past what POST /uploads grants
	const at = "input.messages[0].content[1]"
	for _, tt := range []struct {
		name, part string
		status     int
		code       wire.Code
		field      string
	}{
		{"a PDF labelled PNG", `{"type":"image","upload":"` + pdfID + `","media_type":"image/png"}`, 400, wire.CodeInvalidRequest, at + ".media_type"},
		{"bytes of no type taken", `{"type":"document","upload":"` + binID + `"}`, 400, wire.CodeInvalidRequest, at + ".media_type"},
		{"a document over its limit", `{"type":"document","upload":"` + bigID + `"}`, 400, wire.CodeInvalidRequest, at + ".upload"},
		{"data and upload", `{"type":"document","upload":"` + pdfID + `","data":"` + partsPDF + `"}`, 400, wire.CodeInvalidRequest, at},
		{"an id POST /uploads never makes", `{"type":"document","upload":"../inputs/x"}`, 400, wire.CodeInvalidRequest, at + ".upload"},
		{"a text part", `{"type":"text","upload":"` + pdfID + `"}`, 400, wire.CodeInvalidRequest, at + ".type"},
		{"an image with a name", `{"type":"image","upload":"` + pdfID + `","media_type":"image/png","name":"x"}`, 400, wire.CodeInvalidRequest, at},
		{"no such upload", `{"type":"document","upload":"` + newUploadID() + `"}`, 422, wire.CodeUploadNotFound, at + ".upload"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, createReq(t, "bad-"+tt.name, partsBody("sees", docContent(tt.part))))
			wantProblem(t, resp, tt.status, tt.code, tt.field)
		})
	}
	// The same mislabelled bytes inline: the same answer.
	inline := e.do(t, createReq(t, "inline", partsBody("sees", docContent(`{"type":"image","media_type":"image/png","data":"`+partsPDF+`"}`))))
	wantProblem(t, inline, 400, wire.CodeInvalidRequest, at+".media_type")
	if e.store.Len() != 0 {
		t.Fatalf("refused creates left %d records", e.store.Len())
	}
}

// More parts by upload than an input may carry are refused before any
// read, and the uploads' bytes are bounded in all.
func TestUploadPartsAreBoundedBeforeAndWhileTheyAreRead(t *testing.T) {
	e, p := partsWithPayloads(t)
	pdf, _ := base64.StdEncoding.DecodeString(partsPDF)
	id := uploadFile(t, e, p, "tenant-a", "application/pdf", pdf)
	part := `{"type":"document","upload":"` + id + `"}`
	many := `[{"type":"text","text":"x"}` + strings.Repeat(","+part, job.MaxImages+job.MaxDocuments+1) + `]`
	_, gets := p.Calls()
	wantProblem(t, e.do(t, createReq(t, "many", partsBody("sees", many))), 400, wire.CodeInvalidRequest, "input.messages")
	if _, after := p.Calls(); after != gets {
		t.Fatalf("%d uploads read for a body refused by its count", after-gets)
	}

	refs := []partUpload{{field: "input.messages[0].content[0]", members: map[string]json.RawMessage{"type": json.RawMessage(`"document"`), "upload": json.RawMessage(`"` + id + `"`)}}}
	err := e.h.readUploads(t.Context(), "jwt:tenant-a", refs, len(partsPDF)-1)
	if e, ok := refusal(err); !ok || e.Code != wire.CodePayloadTooLarge || e.Field != "input" {
		t.Fatalf("uploads past the room left: %v, want payload_too_large on input", err)
	}
}

func TestAnUploadOfAPartsTypeIsBoundedByThePartsLimit(t *testing.T) {
	e, _ := partsWithPayloads(t)
	for body, status := range map[string]int{
		fmt.Sprintf(`{"size":%d,"content_type":"application/pdf"}`, job.MaxDocumentBytes):   http.StatusCreated,
		fmt.Sprintf(`{"size":%d,"content_type":"application/pdf"}`, job.MaxDocumentBytes+1): http.StatusBadRequest,
		fmt.Sprintf(`{"size":%d,"content_type":"image/webp"}`, job.MaxImageBytes+1):         http.StatusBadRequest,
		`{"size":10,"content_type":"text/plain"}`:                                           http.StatusCreated,
	} {
		if resp := e.do(t, request(t, "POST", "/uploads", body)); resp.StatusCode != status {
			t.Errorf("%s: %d %s, want %d", body, resp.StatusCode, resp.Body, status)
		}
	}
}

// A repeat of a create whose part's upload has since expired is refused,
// as an input_upload's is, naming the job the key already has.
func TestARepeatAfterAPartsUploadExpiredNamesTheJob(t *testing.T) {
	e, p := partsWithPayloads(t)
	pdf, _ := base64.StdEncoding.DecodeString(partsPDF)
	id := uploadFile(t, e, p, "tenant-a", "application/pdf", pdf)
	body := partsBody("sees", docContent(`{"type":"document","upload":"`+id+`"}`))
	first := e.do(t, createReq(t, "up", body))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("create: %d %s", first.StatusCode, first.Body)
	}
	_ = p.Delete(t.Context(), uploadKey("jwt:tenant-a", id)) // the lifecycle rule expired it
	got := wantProblem(t, e.do(t, createReq(t, "up", body)), http.StatusUnprocessableEntity, wire.CodeUploadNotFound, "input.messages[0].content[1].upload")
	if jobID := decodeView(t, first).ID; !strings.Contains(got.Detail, jobID) {
		t.Fatalf("detail %q does not name job %s", got.Detail, jobID)
	}
}
