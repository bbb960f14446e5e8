package bedrocktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// How Converse takes a message's content blocks, on a call and in a
// batch record alike
// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Message.html,
// API_runtime_ContentBlock.html, API_runtime_ImageBlock.html,
// API_runtime_DocumentBlock.html).

// MediaTokens is what the fake bills an image or document block; a job's
// hold (job.ImageTokens, job.PageTokens) is far above it.
const MediaTokens = 1000

// block is one content block of a Converse message as sent.
type block struct {
	Text  *string `json:"text"`
	Image *struct {
		Format string `json:"format"`
		Source struct {
			Bytes string `json:"bytes"`
		} `json:"source"`
	} `json:"image"`
	Document *struct {
		Format string `json:"format"`
		Name   string `json:"name"`
		Source struct {
			Bytes string `json:"bytes"`
		} `json:"source"`
	} `json:"document"`
}

// documentName is the characters a DocumentBlock name may hold:
// alphanumeric, whitespace (no more than one in a row), hyphens,
// parentheses and square brackets, 1 to 64 of them.
var (
	documentName = regexp.MustCompile(`^[A-Za-z0-9\-()\[\] ]{1,64}$`)
	twoSpaces    = regexp.MustCompile(`\s\s`)
)

// blockRefusal is why Converse refuses body's blocks with a
// ValidationException, or "": a block of none or several kinds, an image
// or document outside a user message ("You can only include images and
// documents if the role is user"), a document without a text block in
// its message, more than 20 images or 5 documents, a format not listed,
// bytes that are not base64, a name outside its characters (Bedrock's
// words, "The document file name can only contain alphanumeric
// characters, whitespace characters, hyphens, parentheses, and square
// brackets. The name can't contain more than one consecutive whitespace
// character."). The other wording is our reading.
func blockRefusal(raw json.RawMessage) string {
	var body struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return "Malformed input request"
	}
	images, docs := 0, 0
	for i, m := range body.Messages {
		text, doc := false, false
		for j, b := range m.Content {
			at := fmt.Sprintf("messages.%d.member.content.%d.member", i, j)
			kinds := 0
			for _, set := range []bool{b.Text != nil, b.Image != nil, b.Document != nil} {
				if set {
					kinds++
				}
			}
			switch {
			case kinds != 1:
				return "Malformed input request: " + at + " must set exactly one member"
			case b.Text != nil:
				text = true
				continue
			case m.Role != "user":
				return "You can only include images and documents if the role is user."
			case b.Image != nil:
				images++
				if msg := mediaRefusal(at+".image", b.Image.Format, b.Image.Source.Bytes, []string{"png", "jpeg", "gif", "webp"}); msg != "" {
					return msg
				}
			default:
				docs, doc = docs+1, true
				if !documentName.MatchString(b.Document.Name) || twoSpaces.MatchString(b.Document.Name) {
					return "The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character."
				}
				if msg := mediaRefusal(at+".document", b.Document.Format, b.Document.Source.Bytes,
					[]string{"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}); msg != "" {
					return msg
				}
			}
		}
		if doc && !text {
			return "A conversation must include a text block when it includes a document block."
		}
	}
	if images > 20 || docs > 5 {
		return "Too many images or documents: at most 20 images and 5 documents a request."
	}
	return ""
}

// mediaRefusal holds an image or document block's format and bytes.
func mediaRefusal(at, format, data string, formats []string) string {
	if !slices.Contains(formats, format) {
		return fmt.Sprintf("1 validation error detected: Value '%s' at '%s.format' failed to satisfy constraint: Member must satisfy enum value set: %v", format, at, formats)
	}
	if b, err := base64.StdEncoding.DecodeString(data); err != nil || len(b) == 0 {
		return "Malformed input request: " + at + ".source.bytes is not base64"
	}
	return ""
}

// Refusal is why Bedrock refuses a Converse body for model, or "": what
// a call answers as a ValidationException and a batch record as its
// error, for tests to read the reason a call's answer leaves out.
func Refusal(model string, body []byte) string { return refusal(model, body) }
