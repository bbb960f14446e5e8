package job_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// Small files of each kind: only their signatures matter to aijobs.
var (
	pngBytes  = encoded(png.Encode, 1, 1)
	pdfBytes  = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n%%EOF\n")
	pngData   = base64.StdEncoding.EncodeToString(pngBytes)
	pdfData   = base64.StdEncoding.EncodeToString(pdfBytes)
	textPart  = job.ContentPart{Type: "text", Text: "summarise"}
	imagePart = job.ContentPart{Type: "image", MediaType: "image/png", Data: pngData}
	pdfPart   = job.ContentPart{Type: "document", MediaType: "application/pdf", Data: pdfData, Name: "contract.pdf"}
)

// encoded is a w x h image as encode writes it.
func encoded(encode func(io.Writer, image.Image) error, w, h int) []byte {
	var b bytes.Buffer
	if err := encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// animatedGIF is a GIF of two frames.
func animatedGIF() []byte {
	frame := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{frame, frame}, Delay: []int{10, 10}}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// webp is the header of a w x h extended WebP (a VP8X chunk).
func webp(w, h int) []byte {
	b := []byte("RIFF\x16\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	return append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
}

// A string message encodes as it always did, so the input hash of every
// job made before parts existed is unchanged; parts encode as an array
// and come back the same.
func TestContentIsAStringOrParts(t *testing.T) {
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "hi <b>"}}}
	got, err := job.EncodeJSON(in)
	if err != nil || string(got) != `{"messages":[{"role":"user","content":"hi <b>"}]}` {
		t.Fatalf("a string message encodes as %s (%v)", got, err)
	}
	var back job.Input
	if err := json.Unmarshal(got, &back); err != nil || back.Messages[0].Content != "hi <b>" || back.Messages[0].Parts != nil {
		t.Fatalf("decoded %+v (%v)", back, err)
	}

	in = job.Input{Messages: []job.Message{{Role: "user", Parts: []job.ContentPart{textPart, imagePart, pdfPart}}}}
	got, err = job.EncodeJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":[{"type":"text","text":"summarise"},{"type":"image","media_type":"image/png","data":"` +
		pngData + `"},{"type":"document","media_type":"application/pdf","data":"` + pdfData + `","name":"contract.pdf"}]}]}`
	if string(got) != want {
		t.Fatalf("parts encode as\n%s\nwant\n%s", got, want)
	}
	if err := json.Unmarshal(got, &back); err != nil || len(back.Messages[0].Parts) != 3 || back.Messages[0].Parts[2] != pdfPart {
		t.Fatalf("decoded %+v (%v)", back, err)
	}
	if back.Messages[0].Text() != "summarise" {
		t.Errorf("Text = %q", back.Messages[0].Text())
	}
}

// The same image sent with other whitespace and member order is the same
// input; other bytes are another.
func TestTheInputHashCoversThePartsBytes(t *testing.T) {
	a := `{"model":"m","input":{"messages":[{"role":"user","content":[{"type":"image","media_type":"image/png","data":"` + pngData + `"}]}]}}`
	b := "{ \"input\" : { \"messages\" : [ { \"content\" : [ { \"data\" : \"" + pngData + "\",\n \"type\" : \"image\", \"media_type\" : \"image/png\" } ], \"role\" : \"user\" } ] }, \"model\" : \"m\" }"
	other := strings.Replace(a, pngData, base64.StdEncoding.EncodeToString(append(pngBytes, 0)), 1)
	ha, _ := job.InputHash([]byte(a))
	hb, _ := job.InputHash([]byte(b))
	ho, _ := job.InputHash([]byte(other))
	if ha == "" || ha != hb {
		t.Errorf("the same image hashes %s and %s", ha, hb)
	}
	if ho == ha {
		t.Error("other bytes hash the same")
	}
}

func TestCheckInputHoldsThePartsToTheRules(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 1024, MaxMaxTokens: 32_768}
	user := func(ps ...job.ContentPart) job.Input {
		return job.Input{Messages: []job.Message{{Role: "user", Parts: ps}}}
	}
	with := func(p job.ContentPart, f func(*job.ContentPart)) job.ContentPart { f(&p); return p }
	b64 := base64.StdEncoding.EncodeToString
	for _, tt := range []struct {
		name  string
		in    job.Input
		field string // "" means accepted
	}{
		{"text, image and pdf", user(textPart, imagePart, pdfPart), ""},
		{"text alone", user(textPart), ""},
		{"plain text document", user(textPart, job.ContentPart{Type: "document", MediaType: "text/plain", Data: b64([]byte("héllo"))}), ""},
		{"jpeg", user(with(imagePart, func(p *job.ContentPart) {
			p.MediaType, p.Data = "image/jpeg", b64(encoded(func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }, 2, 2))
		})), ""},
		{"gif", user(with(imagePart, func(p *job.ContentPart) {
			p.MediaType, p.Data = "image/gif", b64(encoded(func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }, 2, 2))
		})), ""},
		{"an animated gif", user(with(imagePart, func(p *job.ContentPart) { p.MediaType, p.Data = "image/gif", b64(animatedGIF()) })), "input.messages[0].content[0].data"},
		{"webp", user(with(imagePart, func(p *job.ContentPart) { p.MediaType, p.Data = "image/webp", b64(webp(8000, 3)) })), ""},
		{"a PNG 8000 px a side", user(with(imagePart, func(p *job.ContentPart) { p.Data = b64(encoded(png.Encode, 8000, 1)) })), ""},
		{"a PNG 8001 px wide", user(with(imagePart, func(p *job.ContentPart) { p.Data = b64(encoded(png.Encode, 8001, 1)) })), "input.messages[0].content[0].data"},
		{"a WebP 8001 px high", user(with(imagePart, func(p *job.ContentPart) { p.MediaType, p.Data = "image/webp", b64(webp(1, 8001)) })), "input.messages[0].content[0].data"},
		{"a PNG cut in its header", user(with(imagePart, func(p *job.ContentPart) { p.Data = b64(pngBytes[:20]) })), "input.messages[0].content[0].data"},
		{"no parts", user(), "input.messages[0].content"},
		{"unknown type", user(textPart, job.ContentPart{Type: "audio", Data: pngData}), "input.messages[0].content[1].type"},
		{"empty text", user(job.ContentPart{Type: "text"}), "input.messages[0].content[0]"},
		{"media type not listed", user(textPart, textPart, with(imagePart, func(p *job.ContentPart) { p.MediaType = "image/tiff" })), "input.messages[0].content[2].media_type"},
		{"a document's type on an image", user(with(imagePart, func(p *job.ContentPart) { p.MediaType = "application/pdf" })), "input.messages[0].content[0].media_type"},
		{"bad base64", user(with(imagePart, func(p *job.ContentPart) { p.Data = "not base64!" })), "input.messages[0].content[0].data"},
		{"base64 with a line break", user(with(imagePart, func(p *job.ContentPart) { p.Data = pngData[:8] + "\n" + pngData[8:] })), "input.messages[0].content[0].data"},
		{"unpadded base64", user(with(imagePart, func(p *job.ContentPart) { p.Data = strings.TrimRight(pngData, "=") })), "input.messages[0].content[0].data"},
		{"no data", user(with(imagePart, func(p *job.ContentPart) { p.Data = "" })), "input.messages[0].content[0].data"},
		{"a PDF labelled PNG", user(with(imagePart, func(p *job.ContentPart) { p.Data = pdfData })), "input.messages[0].content[0].media_type"},
		{"a PNG labelled PDF", user(textPart, with(pdfPart, func(p *job.ContentPart) { p.Data = pngData })), "input.messages[0].content[1].media_type"},
		{"binary labelled text", user(textPart, job.ContentPart{Type: "document", MediaType: "text/plain", Data: b64([]byte{'a', 0})}), "input.messages[0].content[1].media_type"},
		{"an image too large", user(with(imagePart, func(p *job.ContentPart) {
			p.Data = b64(append(pngBytes, make([]byte, job.MaxImageBytes)...))
		})), "input.messages[0].content[0].data"},
		{"a document without text", user(pdfPart), "input.messages[0].content"},
		{"a name on an image", user(with(imagePart, func(p *job.ContentPart) { p.Name = "x" })), "input.messages[0].content[0]"},
		{"a name too long", user(textPart, with(pdfPart, func(p *job.ContentPart) { p.Name = strings.Repeat("n", 65) })), "input.messages[0].content[1].name"},
		{"an image from the assistant", job.Input{Messages: []job.Message{{Role: "user", Content: "x"}, {Role: "assistant", Parts: []job.ContentPart{imagePart}}}}, "input.messages[1].content[0].type"},
		{"a document in the system prompt", job.Input{Messages: []job.Message{{Role: "system", Parts: []job.ContentPart{textPart, pdfPart}}}}, "input.messages[0].content[1].type"},
		{"text parts in the system prompt", job.Input{Messages: []job.Message{{Role: "system", Parts: []job.ContentPart{textPart}}, {Role: "user", Content: "x"}}}, ""},
		{"too many images", user(append(repeat(imagePart, job.MaxImages), imagePart)...), "input.messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := l.CheckInput(&tt.in)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeInvalidRequest || e.Field != tt.field || e.Message == "" {
				t.Fatalf("CheckInput = %v, want invalid_request on %s", err, tt.field)
			}
		})
	}
}

func repeat(p job.ContentPart, n int) []job.ContentPart {
	ps := make([]job.ContentPart, n)
	for i := range ps {
		ps[i] = p
	}
	return ps
}

// A content of another shape is refused naming where, not as a body that
// is not JSON.
func TestAMalformedContentIsRefusedByItsPath(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 1024, MaxMaxTokens: 32_768}
	for body, field := range map[string]string{
		`{"messages":[{"role":"user","content":7}]}`:                                      "input.messages[0].content",
		`{"messages":[{"role":"user","content":{"type":"text"}}]}`:                        "input.messages[0].content",
		`{"messages":[{"role":"user","content":["x"]}]}`:                                  "input.messages[0].content[0]",
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a","url":"u"}]}]}`: "input.messages[0].content[0]",
		`{"messages":[{"role":"user","content":[{"type":"image","data":5}]}]}`:            "input.messages[0].content[0]",
	} {
		var in job.Input
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var e *job.Error
		if err := l.CheckInput(&in); !errors.As(err, &e) || e.Field != field {
			t.Errorf("%s: %v, want invalid_request on %s", body, err, field)
		}
	}
}

// A job's hold counts each image and each PDF page at the providers'
// worst, never at its bytes alone.
func TestThePromptCeilingHoldsThePartsWorstCase(t *testing.T) {
	text := job.PromptCeiling([]job.Message{{Role: "user", Parts: []job.ContentPart{textPart}}})
	if text != (9+1)/2+8 {
		t.Errorf("a text part: %d, want the string's ceiling %d", text, (9+1)/2+8)
	}
	img := job.PromptCeiling([]job.Message{{Role: "user", Parts: []job.ContentPart{imagePart}}})
	if img < job.ImageTokens+int64(len(pngData))/2 {
		t.Errorf("an image: %d, want at least %d and its base64 as text", img, job.ImageTokens)
	}
	onePage := job.PromptCeiling([]job.Message{{Role: "user", Parts: []job.ContentPart{pdfPart}}})
	if onePage < job.PageTokens || onePage >= 2*job.PageTokens {
		t.Errorf("a one-page PDF: %d, want one page's %d and its bytes", onePage, job.PageTokens)
	}
	hidden := pdfPart
	hidden.Data = base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n1 0 obj << /Type /ObjStm /N 3 >> stream\nx\nendstream\n"))
	if got := job.PromptCeiling([]job.Message{{Role: "user", Parts: []job.ContentPart{hidden}}}); got < job.MaxPDFPages*job.PageTokens {
		t.Errorf("a PDF whose object stream cannot be read: %d, want the %d pages a provider takes", got, job.MaxPDFPages)
	}
	// PDF 1.5 compresses page dictionaries into object streams: they are
	// inflated and counted.
	var objects bytes.Buffer
	zw := zlib.NewWriter(&objects)
	_, _ = zw.Write([]byte("4 0 5 40 6 80 << /Type /Page /Parent 2 0 R >> << /Type/Page /Parent 2 0 R >> << /Type /Page >>"))
	_ = zw.Close()
	compressed := append([]byte("%PDF-1.7\n7 0 obj << /Type /ObjStm /N 3 /First 12 /Filter /FlateDecode /Length "+
		strconv.Itoa(objects.Len())+" >> stream\n"), objects.Bytes()...)
	compressed = append(compressed, "\nendstream endobj\n2 0 obj << /Type /Pages /Count 3 >> endobj\n%%EOF\n"...)
	hidden.Data = base64.StdEncoding.EncodeToString(compressed)
	got := job.PromptCeiling([]job.Message{{Role: "user", Parts: []job.ContentPart{hidden}}})
	if got < 3*job.PageTokens || got >= 4*job.PageTokens {
		t.Errorf("a PDF of three pages in an object stream: %d, want three pages' %d and its bytes", got, 3*job.PageTokens)
	}
}

// A rung whose model reads no images or documents refuses a job carrying
// one, naming the part and the rung.
func TestARungThatCannotReadAPartRefusesIt(t *testing.T) {
	r := job.Route{Rungs: []job.Rung{
		{Provider: "a", Model: "sees", Takes: job.Takes{Images: true, Documents: true}},
		{Provider: "b", Model: "looks", Takes: job.Takes{Images: true}},
	}}
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}, {Role: "user", Parts: []job.ContentPart{textPart, imagePart}}}}
	if err := r.CheckOptions("r", in, nil); err != nil {
		t.Fatalf("images on rungs that read them: %v", err)
	}
	in.Messages[1].Parts = append(in.Messages[1].Parts, pdfPart)
	var e *job.Error
	if err := r.CheckOptions("r", in, nil); !errors.As(err, &e) || e.Code != job.CodeUnsupported ||
		e.Field != "input.messages[1].content[2]" || !strings.Contains(e.Message, "rung 1 (b/looks)") {
		t.Fatalf("a PDF on a rung without documents: %v, want unsupported on input.messages[1].content[2] naming rung 1", err)
	}
}
