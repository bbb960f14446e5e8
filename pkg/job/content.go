package job

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// The kinds of content part a message may carry beside text
// (docs/providers.md, "Content parts").
const (
	PartText     = "text"
	PartImage    = "image"
	PartDocument = "document"
)

// ImageTypes and DocumentTypes are the media types every provider takes
// inline: PNG, JPEG, WebP and GIF images (OpenAI's image inputs, Anthropic's
// image blocks, Converse's ImageBlock format png|jpeg|gif|webp); PDF and
// plain text documents (Anthropic's document blocks, Converse's
// DocumentBlock pdf|txt; OpenAI's file inputs take the PDF, a text
// document goes as text).
var (
	ImageTypes    = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}
	DocumentTypes = []string{"application/pdf", "text/plain"}
)

// The bounds of the parts of one input: the strictest a provider sets, so
// that a job valid on one rung is not refused for its shape on another.
const (
	// MaxImageBytes is Converse's (an image "no more than 3.75 MB",
	// docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Message.html)
	// and Anthropic's (5 MB of base64, docs.anthropic.com/en/docs/build-with-claude/vision);
	// OpenAI takes 20 MB (platform.openai.com/docs/guides/images-vision).
	MaxImageBytes = 3_750_000
	// MaxDocumentBytes is Converse's 4.5 MB a document (the same page;
	// docs.aws.amazon.com/bedrock/latest/userguide/inference-api-restrictions.html).
	MaxDocumentBytes = 4_500_000
	// MaxImages and MaxDocuments are Converse's counts a request: 20
	// images, five documents (the same page).
	MaxImages    = 20
	MaxDocuments = 5
	// MaxDocumentName bounds a document's name: Converse's DocumentBlock
	// name is at most 64 characters
	// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_DocumentBlock.html).
	MaxDocumentName = 64
)

// ContentPart is one part of a message's content: text, or an image or a
// document carried inline as standard base64 (Data, kept as sent so the
// input hash covers the bytes). "Content part" is not a bucket's part
// (RateLimit.Parts), which shares only the word.
type ContentPart struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Bytes are p's decoded bytes (nil for text, or data CheckInput would
// refuse).
func (p ContentPart) Bytes() []byte {
	b, err := base64.StdEncoding.DecodeString(p.Data)
	if err != nil {
		return nil
	}
	return b
}

// Text is m's text: its string content, or its text parts joined by
// blank lines (a system prompt, the fake's directives).
func (m Message) Text() string {
	if m.Parts == nil {
		return m.Content
	}
	var b bytes.Buffer
	for _, p := range m.Parts {
		if p.Type != PartText {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// HasMedia finds the first part of kind (PartImage, PartDocument) in in:
// its message and its place there.
func (in Input) HasMedia(kind string) (msg, part int, ok bool) {
	for i, m := range in.Messages {
		for j, p := range m.Parts {
			if p.Type == kind {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// MarshalJSON writes content as it came: a string, or the array of parts,
// so a string message's canonical form (and so its input hash) is what
// it always was.
func (m Message) MarshalJSON() ([]byte, error) {
	// EncodeJSON, not json.Marshal: an encoder's SetEscapeHTML does not
	// reach into what a MarshalJSON returns.
	if m.Parts != nil {
		return EncodeJSON(struct {
			Role    string        `json:"role"`
			Content []ContentPart `json:"content"`
		}{m.Role, m.Parts})
	}
	return EncodeJSON(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}

// UnmarshalJSON takes content as a string or an array of parts. A content
// of another shape is kept as a refusal CheckInput names by its path,
// rather than the decoder's pathless error.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(c, &items); err != nil {
			return err
		}
		m.Parts = make([]ContentPart, len(items))
		for j, it := range items {
			dec := json.NewDecoder(bytes.NewReader(it))
			dec.DisallowUnknownFields()
			if dec.Decode(&m.Parts[j]) != nil {
				m.bad = &partError{j, "a part must be an object with type and, as its type needs, text, media_type, data and name (strings)"}
				return nil
			}
		}
	default:
		m.bad = &partError{-1, "content must be a string or an array of parts"}
	}
	return nil
}

// partError is a content that decoded to no parts CheckInput can hold to
// the rules: part -1 is the content itself.
type partError struct {
	part int
	why  string
}

// checkContent holds message i's content to the rules (checkPart), and
// counts its images and documents into seen.
func checkContent(i int, m Message, seen map[string]int) error {
	field := fmt.Sprintf("input.messages[%d].content", i)
	if m.bad != nil {
		if m.bad.part >= 0 {
			field = fmt.Sprintf("%s[%d]", field, m.bad.part)
		}
		return invalid(field, "%s", m.bad.why)
	}
	if m.Parts == nil {
		if m.Content == "" {
			return invalid(field, "content must be a non-empty string or array of parts")
		}
		return nil
	}
	if len(m.Parts) == 0 {
		return invalid(field, "content must hold at least one part")
	}
	text := false
	for j, p := range m.Parts {
		if err := checkPart(fmt.Sprintf("%s[%d]", field, j), m.Role, p); err != nil {
			return err
		}
		seen[p.Type]++
		text = text || p.Type == PartText
	}
	if seen[PartImage] > MaxImages || seen[PartDocument] > MaxDocuments {
		return invalid("input.messages", "an input carries at most %d images and %d documents", MaxImages, MaxDocuments)
	}
	if seen[PartDocument] > 0 && !text && slices.ContainsFunc(m.Parts, func(p ContentPart) bool { return p.Type == PartDocument }) {
		// Converse: "If you include a ContentBlock with a document field
		// in the array, you must also include a ContentBlock with a text
		// field" (API_runtime_Message.html).
		return invalid(field, "a message with a document must hold a text part too")
	}
	return nil
}

// checkPart holds one part to the rules, field naming it.
func checkPart(field, role string, p ContentPart) error {
	switch p.Type {
	case PartText:
		if p.Text == "" || p.MediaType != "" || p.Data != "" || p.Name != "" {
			return invalid(field, "a text part holds a non-empty text and nothing else")
		}
		return nil
	case PartImage, PartDocument:
	default:
		return invalid(field+".type", "type must be text, image or document")
	}
	if role != "user" {
		// Converse takes images and documents only from the user ("You
		// can only include images and documents if the role is user",
		// API_runtime_Message.html); Anthropic and OpenAI take them there.
		return invalid(field+".type", "only a user message may carry an image or a document")
	}
	if p.Text != "" || p.Type == PartImage && p.Name != "" {
		return invalid(field, "an %s part holds media_type, data%s and nothing else", p.Type,
			map[bool]string{true: " and name"}[p.Type == PartDocument])
	}
	types, limit := ImageTypes, MaxImageBytes
	if p.Type == PartDocument {
		types, limit = DocumentTypes, MaxDocumentBytes
	}
	if !slices.Contains(types, p.MediaType) {
		return invalid(field+".media_type", "an %s's media_type must be one of %v", p.Type, types)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(p.Data)
	if err != nil || len(b) == 0 || base64.StdEncoding.EncodeToString(b) != p.Data {
		// Re-encoding must give data back: one image has one form, so
		// the input hash of the same bytes is the same.
		return invalid(field+".data", "data must be non-empty standard base64 (padded, no line breaks)")
	}
	if len(b) > limit {
		return invalid(field+".data", "an %s is at most %d bytes, this one %d", p.Type, limit, len(b))
	}
	if !sniffed(p.MediaType, b) {
		return invalid(field+".media_type", "the data is not %s", p.MediaType)
	}
	if p.Type == PartImage {
		w, h, ok := imageSize(p.MediaType, b)
		if !ok {
			return invalid(field+".data", "the data is not a whole %s image header", p.MediaType)
		}
		if w > MaxImageSide || h > MaxImageSide {
			return invalid(field+".data", "an image is at most %d px a side, this one %d x %d", MaxImageSide, w, h)
		}
		if p.MediaType == "image/gif" && animated(b) {
			return invalid(field+".data", "a GIF must hold one frame: animated GIFs are not taken")
		}
	}
	if p.Name != "" && (len(p.Name) > MaxDocumentName || !utf8.ValidString(p.Name)) {
		return invalid(field+".name", "a document's name is at most %d bytes of UTF-8", MaxDocumentName)
	}
	return nil
}

// sniffed reports whether b starts as its media type's files do, so a
// mislabelled part is refused here rather than by the provider
// (the signatures: PNG "\x89PNG\r\n\x1a\n", JPEG FF D8 FF, GIF "GIF87a" or
// "GIF89a", WebP "RIFF"....“WEBP”, PDF "%PDF-"); plain text is UTF-8
// without NUL bytes.
func sniffed(mediaType string, b []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF})
	case "image/gif":
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	case "image/webp":
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	case "application/pdf":
		return bytes.HasPrefix(b, []byte("%PDF-"))
	case "text/plain":
		return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
	}
	return false
}

// The worst-case tokens of a part, for PromptCeiling: a hold must never be
// below what the call can cost (docs/providers.md, "Content parts").
const (
	// ImageTokens bounds one image on any provider: OpenAI's gpt-4o-mini
	// counts 2,833 tokens and 5,667 a 512 px tile of an image scaled to
	// 768 x 2,000 px at most, 8 tiles (platform.openai.com/docs/guides/images-vision,
	// "Calculating costs"), 48,169 in all, well above Anthropic's
	// width*height/750 of an image it scales to about 1.15 megapixels
	// (about 1,600 tokens, docs.anthropic.com/en/docs/build-with-claude/vision)
	// and the patch models' 1,536 patches times at most 2.46.
	ImageTokens = 48_169
	// PageTokens bounds one page of a PDF: each page goes to the model as
	// an image and its text (Anthropic: "1,500-3,000 tokens per page",
	// docs.anthropic.com/en/docs/build-with-claude/pdf-support; OpenAI:
	// "both the extracted text and an image of each page",
	// platform.openai.com/docs/guides/pdf-files).
	PageTokens = ImageTokens + 3_000
	// MaxPDFPages is the page count of a PDF whose pages cannot be
	// counted (pdfPages): the 100 pages a request Anthropic and OpenAI
	// take at most.
	MaxPDFPages = 100
)

// partTokens over-estimates the prompt tokens of one part. Each also
// counts its base64 as text at two bytes a token: a model that reads the
// data as text bills it so (an OpenAI community report of a PNG billed
// as its base64's tokens, community.openai.com/t/1380539).
func partTokens(p ContentPart) int64 {
	asText := (int64(len(p.Data)) + int64(len(p.Text)) + 1) / 2
	switch {
	case p.Type == PartImage:
		return ImageTokens + asText
	case p.Type == PartDocument && p.MediaType == "application/pdf":
		return pdfPages(p.Bytes())*PageTokens + asText
	}
	return asText
}

// mediaRefusal is the first image or document part of in that rung g's
// model cannot read, and why: sent, the provider would refuse it or the
// model not see it, and a part is never dropped silently.
func (g Rung) mediaRefusal(in Input) (field, why string) {
	for _, k := range []struct {
		kind  string
		takes bool
	}{{PartImage, g.Takes.Images}, {PartDocument, g.Takes.Documents}} {
		if i, j, ok := in.HasMedia(k.kind); ok && !k.takes {
			return fmt.Sprintf("input.messages[%d].content[%d]", i, j), "takes no " + k.kind + " parts: its model reads no " + k.kind + "s"
		}
	}
	return "", ""
}
