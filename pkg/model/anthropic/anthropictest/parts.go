package anthropictest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Content blocks as the Messages API takes them
// (https://docs.anthropic.com/en/api/messages): a message's content is a
// string or an array of blocks, text, image (a base64 source of PNG,
// JPEG, GIF or WebP, https://docs.anthropic.com/en/docs/build-with-claude/vision)
// and document (a base64 PDF source, or a text source,
// https://docs.anthropic.com/en/docs/build-with-claude/pdf-support).

// Message is one message of a request: Content its text (a string
// content, or its text blocks'), Blocks the blocks as sent.
type Message struct {
	Role    string
	Content string
	Blocks  []map[string]any
}

// UnmarshalJSON takes content as a string or an array of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role}
	if json.Unmarshal(raw.Content, &m.Content) == nil {
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Blocks); err != nil {
		return err
	}
	var text []string
	for _, blk := range m.Blocks {
		if t, ok := blk["text"].(string); ok {
			text = append(text, t)
		}
	}
	m.Content = strings.Join(text, "\n\n")
	return nil
}

// MediaTokens is what the fake bills an image or document block: about
// an image of 750 x 1,000 px at width*height/750 (the vision guide's
// rule); a job's hold (job.ImageTokens, job.PageTokens) is far above it.
const MediaTokens = 1000

func (m Message) media() (n int) {
	for _, blk := range m.Blocks {
		if blk["type"] == "image" || blk["type"] == "document" {
			n++
		}
	}
	return n
}

// signatures are the first bytes of each image media type's files.
var signatures = map[string][]byte{"image/png": []byte("\x89PNG"), "image/jpeg": {0xFF, 0xD8, 0xFF}, "image/gif": []byte("GIF8"),
	"image/webp": []byte("RIFF"), "application/pdf": []byte("%PDF-")}

// blockRefusal is why the API refuses p's blocks, or "": an unknown block
// type, a source of another type or media type ("messages.36.content.2.image.source.base64.media_type:
// Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
// anthropics/claude-code#8184), data that is not base64 or not of its
// media type ("messages.18.content.1.image.source.base64.data: Image does
// not match the provided media type image/png", anthropics/claude-code#13131;
// the API checks the bytes, BerriAI/litellm#24900). The wording of the
// others, in the API's "<path>: <why>" shape, is our reading.
func blockRefusal(p Params) string {
	for i, m := range p.Messages {
		for j, blk := range m.Blocks {
			path := fmt.Sprintf("messages.%d.content.%d", i, j)
			src, _ := blk["source"].(map[string]any)
			typ, _ := src["type"].(string)
			mt, _ := src["media_type"].(string)
			data, _ := src["data"].(string)
			switch blk["type"] {
			case "text":
				if _, ok := blk["text"].(string); !ok {
					return path + ".text: Field required"
				}
				continue
			case "image":
				if typ != "base64" || !slices.Contains([]string{"image/jpeg", "image/png", "image/gif", "image/webp"}, mt) {
					return path + ".image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
				}
			case "document":
				if typ == "text" && mt == "text/plain" {
					continue
				}
				if typ != "base64" || mt != "application/pdf" {
					return path + ".source: a document source is base64 application/pdf or text text/plain"
				}
			default:
				return fmt.Sprintf("%s.type: Input tag '%v' found using 'type' does not match any of the expected tags", path, blk["type"])
			}
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil || !bytes.HasPrefix(b, signatures[mt]) {
				return fmt.Sprintf("%s.%s.source.base64.data: Image does not match the provided media type %s", path, blk["type"], mt)
			}
		}
	}
	return ""
}
