package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/aijobs/aijobs/pkg/job"
)

// signatures are the first bytes of each image and document type the
// providers take (docs/providers.md, "Content parts"): the server refuses
// a part whose bytes are not its media type, so the CLI names the type
// from the bytes, never from the file's name.
var signatures = []struct {
	mediaType string
	match     func([]byte) bool
}{
	{"image/png", prefix("\x89PNG\r\n\x1a\n")},
	{"image/jpeg", prefix("\xff\xd8\xff")},
	{"image/gif", func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	}},
	{"image/webp", func(b []byte) bool { return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" }},
	{"application/pdf", prefix("%PDF-")},
}

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

// filePart is the content part of the file at path: an image or a PDF by
// its bytes, a plain text document by its .txt name and UTF-8 bytes.
// Anything else, or a file over its kind's bound, is a usage error
// naming what the API takes.
func filePart(path string) (job.ContentPart, error) {
	f, err := os.Open(path)
	if err != nil {
		return job.ContentPart{}, usageErrorf("submit: --file: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, job.MaxDocumentBytes+1))
	if err != nil {
		return job.ContentPart{}, usageErrorf("submit: --file %s: %v", path, err)
	}
	mediaType := sniff(path, b)
	kind, limit := job.PartDocument, int64(job.MaxDocumentBytes)
	switch {
	case mediaType == "":
		hint := ""
		if strings.EqualFold(filepath.Ext(path), ".json") || json.Valid(b) {
			hint = "; a create body goes in --body"
		}
		return job.ContentPart{}, usageErrorf("submit: --file %s is not a PNG, JPEG, WebP or GIF image, a PDF, or a .txt document of UTF-8 text%s", path, hint)
	case strings.HasPrefix(mediaType, "image/"):
		kind, limit = job.PartImage, job.MaxImageBytes
	}
	if int64(len(b)) > limit {
		return job.ContentPart{}, usageErrorf("submit: --file %s is larger than the %d bytes one %s may be (docs/providers.md, \"Content parts\")", path, limit, kind)
	}
	p := job.ContentPart{Type: kind, MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(b)}
	if kind == job.PartDocument {
		p.Name = clipName(filepath.Base(path))
	}
	return p, nil
}

// sniff is b's media type, "" for none the API takes.
func sniff(path string, b []byte) string {
	for _, s := range signatures {
		if s.match(b) {
			return s.mediaType
		}
	}
	if strings.EqualFold(filepath.Ext(path), ".txt") && utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return "text/plain"
	}
	return ""
}

// clipName keeps a document's name within the API's bound, whole
// characters only.
func clipName(name string) string {
	for len(name) > job.MaxDocumentName {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// promptWithFiles is the input of one user message: the files' parts,
// then the prompt's text (the providers read a document or an image
// before the question about it).
func promptWithFiles(prompt string, maxTokens int, paths []string) (json.RawMessage, error) {
	var parts []job.ContentPart
	for _, path := range paths {
		p, err := filePart(path)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	parts = append(parts, job.ContentPart{Type: job.PartText, Text: prompt})
	b, err := job.EncodeJSON(job.Input{Messages: []job.Message{{Role: "user", Parts: parts}}, MaxTokens: maxTokens})
	if err != nil {
		return nil, usageErrorf("submit: encode the input: %v", err)
	}
	return b, nil
}
