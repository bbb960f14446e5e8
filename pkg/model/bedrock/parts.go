package bedrock

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// contentBlocks is m as Converse content blocks
// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html):
// its text as one text block, as every message went before parts; a
// user message's parts as text, image (ImageBlock: format png, jpeg, gif
// or webp, source bytes) and document blocks (DocumentBlock: format pdf
// or txt, a name, source bytes). An assistant's parts are text only
// (job.CheckInput), sent as its joined text.
func contentBlocks(m job.Message) []types.ContentBlock {
	if m.Parts == nil || m.Role != "user" {
		return []types.ContentBlock{&types.ContentBlockMemberText{Value: m.Text()}}
	}
	blocks := make([]types.ContentBlock, 0, len(m.Parts))
	for _, p := range m.Parts {
		switch p.Type {
		case job.PartImage:
			blocks = append(blocks, &types.ContentBlockMemberImage{Value: types.ImageBlock{
				Format: types.ImageFormat(strings.TrimPrefix(p.MediaType, "image/")),
				Source: &types.ImageSourceMemberBytes{Value: p.Bytes()}}})
		case job.PartDocument:
			format := types.DocumentFormatPdf
			if p.MediaType == "text/plain" {
				format = types.DocumentFormatTxt
			}
			blocks = append(blocks, &types.ContentBlockMemberDocument{Value: types.DocumentBlock{
				Format: format, Name: aws.String(p.Name), Source: &types.DocumentSourceMemberBytes{Value: p.Bytes()}}})
		default:
			blocks = append(blocks, &types.ContentBlockMemberText{Value: p.Text})
		}
	}
	return blocks
}

// maxName is the longest document name Converse takes (DocumentBlock
// name, "Maximum length of 64" in
// docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_DocumentBlock.html).
const maxName = 64

// nameDocuments gives every document block of msgs a name Converse takes:
// the name "can only contain" alphanumeric characters, whitespace (no
// more than one in a row), hyphens, parentheses and square brackets (the
// same page). Any other character becomes a hyphen ("contract.pdf" is
// "contract-pdf"), an empty name "document", and a name given twice gets
// its count, " (2)", since two documents of one name cannot be told
// apart.
func nameDocuments(msgs []types.Message) {
	seen := map[string]int{}
	for _, m := range msgs {
		for _, blk := range m.Content {
			d, ok := blk.(*types.ContentBlockMemberDocument)
			if !ok {
				continue
			}
			name := sanitise(aws.ToString(d.Value.Name))
			if seen[name]++; seen[name] > 1 {
				suffix := fmt.Sprintf(" (%d)", seen[name])
				name = name[:min(len(name), maxName-len(suffix))] + suffix
			}
			d.Value.Name = aws.String(name)
		}
	}
}

// sanitise is name within Converse's characters and length.
func sanitise(name string) string {
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-()[]", r):
			b.WriteRune(r)
			space = false
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if !space {
				b.WriteByte(' ')
			}
			space = true
		default:
			b.WriteByte('-')
			space = false
		}
	}
	s := strings.TrimSpace(b.String())
	s = strings.TrimSpace(s[:min(len(s), maxName)])
	if s == "" {
		return "document"
	}
	return s
}

// converseMedia is an image or document block as a batch record's
// Converse JSON ({"image": {"format", "source": {"bytes": base64}}},
// {"document": {"format", "name", "source": {"bytes"}}}: the Converse
// request body, docs.aws.amazon.com/bedrock/latest/userguide/batch-inference-data.html),
// nil for any other block.
func converseMedia(blk types.ContentBlock) any {
	switch b := blk.(type) {
	case *types.ContentBlockMemberImage:
		src, _ := b.Value.Source.(*types.ImageSourceMemberBytes)
		return map[string]any{"image": map[string]any{"format": b.Value.Format, "source": map[string]any{"bytes": bytesOf(src)}}}
	case *types.ContentBlockMemberDocument:
		src, _ := b.Value.Source.(*types.DocumentSourceMemberBytes)
		var raw []byte
		if src != nil {
			raw = src.Value
		}
		return map[string]any{"document": map[string]any{"format": b.Value.Format, "name": aws.ToString(b.Value.Name),
			"source": map[string]any{"bytes": raw}}}
	}
	return nil
}

// bytesOf is src's bytes, nil for none: encoding/json writes them as
// base64, as Converse JSON carries a blob.
func bytesOf(src *types.ImageSourceMemberBytes) []byte {
	if src == nil {
		return nil
	}
	return src.Value
}

// MarshalJSON writes a media block in a text block's place.
func (t converseText) MarshalJSON() ([]byte, error) {
	if t.media != nil {
		return job.EncodeJSON(t.media)
	}
	return job.EncodeJSON(struct {
		Text string `json:"text"`
	}{t.Text})
}
