package console

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
)

// partRow is one content part of a job's input as its page shows it:
// what it is and how large, never its bytes (an operator reads the page
// to see what was sent, and a document may be a tenant's contract).
type partRow struct {
	Message   int
	Role      string
	Type      string
	MediaType string
	Name      string
	Bytes     int
}

// inputView is what a job's page shows of its input: its parts, the
// name of the schema its answer must follow, and the input itself with
// each part's data replaced by its size.
type inputView struct {
	Parts  []partRow
	Schema string // the response_format's name; "" for none
	Strict bool
	Shown  json.RawMessage
}

// viewInput reads raw (a job's inline input); an input it cannot read is
// shown as it is, with no parts.
func viewInput(raw json.RawMessage) inputView {
	var in job.Input
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return inputView{Shown: raw}
	}
	v := inputView{Shown: raw}
	if f := in.ResponseFormat; f != nil && f.JSONSchema != nil {
		v.Schema, v.Strict = f.JSONSchema.Name, f.JSONSchema.Strict
	}
	for i, m := range in.Messages {
		for _, p := range m.Parts {
			row := partRow{Message: i, Role: m.Role, Type: p.Type, MediaType: p.MediaType, Name: p.Name, Bytes: len(p.Text)}
			if p.Type != job.PartText {
				row.Bytes = decodedLen(p.Data)
			}
			v.Parts = append(v.Parts, row)
		}
	}
	if len(v.Parts) > 0 {
		v.Shown = redacted(raw)
	}
	return v
}

// decodedLen is the length of the bytes standard base64 s encodes,
// without decoding them.
func decodedLen(s string) int {
	n := base64.StdEncoding.DecodedLen(len(s))
	for i := len(s) - 1; i >= 0 && i >= len(s)-2 && s[i] == '='; i-- {
		n--
	}
	return n
}

// redacted is raw with every part's data replaced by a note of its size.
func redacted(raw json.RawMessage) json.RawMessage {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return raw
	}
	msgs, _ := in["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		parts, _ := mm["content"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if d, ok := pm["data"].(string); ok {
				pm["data"] = fmt.Sprintf("(%d bytes, not shown)", decodedLen(d))
			}
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return raw
	}
	return b
}
