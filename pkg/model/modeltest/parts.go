package modeltest

import (
	"encoding/base64"

	"github.com/aijobs/aijobs/pkg/job"
)

// Small files of the kinds a content part carries, for the adapters'
// wire tests and e2e: a PNG's signature and header, a one-page PDF.
var (
	PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	PDF = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n" +
		"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	// Note is a plain text document's bytes.
	Note = []byte("Clause 4: the tenant pays.")
)

// PartsMessages is a conversation with every kind of part: a system
// prompt of text parts, and a user message of text, a PNG image, a PDF
// named name and a plain text document, after an assistant's turn.
func PartsMessages(name string) []job.Message {
	b64 := base64.StdEncoding.EncodeToString
	return []job.Message{
		{Role: "system", Parts: []job.ContentPart{{Type: job.PartText, Text: "be brief"}}},
		{Role: "user", Content: "hello"},
		{Role: "assistant", Content: "hi"},
		{Role: "user", Parts: []job.ContentPart{
			{Type: job.PartText, Text: "summarise these"},
			{Type: job.PartImage, MediaType: "image/png", Data: b64(PNG)},
			{Type: job.PartDocument, MediaType: "application/pdf", Data: b64(PDF), Name: name},
			{Type: job.PartDocument, MediaType: "text/plain", Data: b64(Note)},
		}},
	}
}
