package openaitest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Content parts as OpenAI takes them: a message's content is a string or
// an array of parts, chat completions' text, image_url and file
// (https://platform.openai.com/docs/api-reference/chat/create), the
// Responses API's input_text, input_image and input_file
// (https://platform.openai.com/docs/api-reference/responses/create).
// Images are inline data URLs of PNG, JPEG, WebP or GIF
// (https://platform.openai.com/docs/guides/images-vision), files PDF data
// URLs (https://platform.openai.com/docs/guides/pdf-files).

// Part is one content part as sent, its members as JSON.
type Part map[string]any

// UnmarshalJSON takes content as a string or an array of parts: Content
// is then the parts' text (what the fake bills and reads its markers
// from), Parts the parts themselves.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role}
	if err := json.Unmarshal(raw.Content, &m.Content); err == nil {
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Parts); err != nil {
		return err
	}
	var text []string
	for _, p := range m.Parts {
		if t, ok := p["text"].(string); ok {
			text = append(text, t)
		}
	}
	m.Content = strings.Join(text, "\n\n")
	return nil
}

// MediaTokens is what the fake bills an image or file part: a 1024 px
// square image at high detail (765 tokens on gpt-4o, the images guide's
// example) rounded up; a job's hold (job.ImageTokens) is far above it.
const MediaTokens = 1000

// media counts b's image and file parts.
func (b Body) media() (n int64) {
	for _, m := range b.Messages {
		for _, p := range m.Parts {
			if t := p["type"]; t != "text" && t != "input_text" {
				n++
			}
		}
	}
	return n
}

var dataURL = regexp.MustCompile(`^data:([a-z]+/[a-z.+-]+);base64,(.*)$`)

// visionModel reports whether model reads images and files: the models
// with vision (https://platform.openai.com/docs/models), not gpt-3.5 or
// the mini reasoning models without it.
func visionModel(model string) bool {
	for _, p := range []string{"gpt-3.5", "o1-mini", "o1-preview", "o3-mini"} {
		if strings.HasPrefix(model, p) {
			return false
		}
	}
	return true
}

// partRefusal is OpenAI's 400 to a body whose parts it does not take, or
// nil: an unknown part type, an image or file outside a user message
// ("Invalid 'messages[2]'. Image URLs are only allowed for messages with
// role 'user', but this message with role 'assistant' contains an image
// URL.", openai/openai-node#1030, OpenHands/OpenHands#7700), a model
// without vision, a data URL of another media type or whose data is not
// base64. The messages' wording but the first is our reading.
func partRefusal(b Body, responses bool) map[string]any {
	kinds := map[string]string{"text": "text", "image_url": "image", "file": "file"}
	if responses {
		kinds = map[string]string{"input_text": "text", "input_image": "image", "input_file": "file"}
	}
	for i, m := range b.Messages {
		for j, p := range m.Parts {
			param := fmt.Sprintf("messages[%d].content[%d]", i, j)
			if responses {
				param = fmt.Sprintf("input[%d].content[%d]", i, j)
			}
			kind, _ := p["type"].(string)
			switch {
			case kinds[kind] == "":
				return errorBody(fmt.Sprintf("Invalid value: '%s'. Supported values are: %v.", kind, keys(kinds)), "invalid_request_error", param+".type", "invalid_value")
			case kinds[kind] == "text":
				if _, ok := p["text"].(string); !ok {
					return errorBody("Missing required parameter: '"+param+".text'.", "invalid_request_error", param+".text", "missing_required_parameter")
				}
				continue
			case m.Role != "user":
				return errorBody(fmt.Sprintf("Invalid 'messages[%d]'. Image URLs are only allowed for messages with role 'user', but this message with role '%s' contains an image URL.", i, m.Role),
					"invalid_request_error", fmt.Sprintf("messages[%d]", i), "invalid_value")
			case !visionModel(b.Model):
				return errorBody("Invalid content type. "+kind+" is only supported by certain models.", "invalid_request_error", param+".type", "invalid_value")
			}
			if e := mediaRefusal(p, kinds[kind], param, responses); e != nil {
				return e
			}
		}
	}
	return nil
}

// mediaRefusal holds one image or file part to its shape.
func mediaRefusal(p Part, kind, param string, responses bool) map[string]any {
	url, name := "", ""
	switch {
	case kind == "image" && responses:
		url, _ = p["image_url"].(string)
	case kind == "image":
		inner, _ := p["image_url"].(map[string]any)
		url, _ = inner["url"].(string)
	case responses:
		url, _ = p["file_data"].(string)
		name, _ = p["filename"].(string)
	default:
		inner, _ := p["file"].(map[string]any)
		url, _ = inner["file_data"].(string)
		name, _ = inner["filename"].(string)
	}
	want := map[bool][]string{true: {"image/png", "image/jpeg", "image/webp", "image/gif"}, false: {"application/pdf"}}[kind == "image"]
	d := dataURL.FindStringSubmatch(url)
	ok := d != nil
	if ok {
		_, err := base64.StdEncoding.DecodeString(d[2])
		ok = err == nil && strings.Contains(strings.Join(want, " "), d[1])
	}
	switch {
	case !ok && kind == "image":
		return errorBody("You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
			"invalid_request_error", param, "invalid_image_format")
	case !ok:
		return errorBody("Invalid file data: '"+param+"'. Expected a base64-encoded data URL with an application/pdf MIME type.", "invalid_request_error", param, "invalid_value")
	case kind == "file" && name == "":
		return errorBody("Missing required parameter: '"+param+".filename'.", "invalid_request_error", param, "missing_required_parameter")
	}
	return nil
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// chatRefusal is a batch line's refusal, as the call's would be: its
// parts', then its options'.
func chatRefusal(b Body) map[string]any {
	if e := partRefusal(b, false); e != nil {
		return e
	}
	return refusal(b)
}
