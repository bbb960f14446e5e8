package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// MaxResolvedBytes bounds a create body once its uploads are in it (an
// input_upload's object, the bytes of the parts naming uploads, as
// base64): a body's 5 MiB and an upload's 32 MiB. It is the one bound of
// an input the payload store keeps and a worker reads back (docs/payloads.md,
// "Limits"): the API holds the body, its canonical form and the stored
// copy at once, and Anthropic and OpenAI take 32 MB a request.
const MaxResolvedBytes = MaxBodyBytes + MaxUploadBytes

// partUpload is one part of a create body that names an upload: where it
// is (its path, for a refusal), its members, rewritten in place, and once
// read, its bytes as base64 and the placeholder standing for them in
// data until the body is rebuilt.
type partUpload struct {
	field   string
	members map[string]json.RawMessage
	data    []byte
	mark    string
}

// withUploadParts is the create body b with every content part that
// names an upload ({"type":"document","upload":"<upload_id>"}) made the
// inline part of the upload's bytes, so that everything after it (the
// rules, the input hash, the stored input, the workers) sees an inline
// part: the same bytes inline or uploaded, under any upload id, are the
// same input. A body naming none is answered unchanged, false; one whose
// shape is wrong is left to ParseCreate, which names what is wrong.
func (h *Handler) withUploadParts(ctx context.Context, tenant string, b []byte) ([]byte, bool, error) {
	if !bytes.Contains(b, []byte(`"upload"`)) {
		return b, false, nil // no second pass over an inline input
	}
	var body, input map[string]json.RawMessage
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(b, &body) != nil || json.Unmarshal(body["input"], &input) != nil || json.Unmarshal(input["messages"], &msgs) != nil {
		return b, false, nil
	}
	contents, refs := uploadRefs(msgs)
	if len(refs) == 0 {
		return b, false, nil
	}
	if k, dup := duplicateKey(b); dup {
		// The rebuilt body would keep one of the two silently.
		return nil, false, invalid(Clip(k, 64), "the field %q appears twice in one object", Clip(k, 64))
	}
	if err := h.readUploads(ctx, tenant, refs, MaxResolvedBytes-len(b)); err != nil {
		return nil, false, err
	}
	for i, parts := range contents {
		if parts == nil {
			continue
		}
		var err error
		if msgs[i]["content"], err = job.EncodeJSON(parts); err != nil {
			return nil, false, fmt.Errorf("rebuild content: %w", err)
		}
	}
	out, err := rebuild(body, input, msgs)
	if err != nil {
		return nil, false, err
	}
	return splice(out, refs), true, nil
}

// splice is the rebuilt body out with each ref's placeholder replaced by
// its base64, which needs no JSON escape: the megabytes are copied once
// rather than encoded and compacted at each level of the rebuild, which
// under -race took seconds a create. The placeholders are in refs' order,
// the order of the messages and their parts, which the rebuild keeps.
func splice(out []byte, refs []partUpload) []byte {
	n := len(out)
	for _, r := range refs {
		n += len(r.data)
	}
	b := make([]byte, 0, n)
	for _, r := range refs {
		i := bytes.Index(out, []byte(r.mark))
		b = append(append(b, out[:i]...), r.data...)
		out = out[i+len(r.mark):]
	}
	return append(b, out...)
}

// uploadRefs are the parts of msgs that name an upload, and each
// message's content as parts (nil for a message with none of them), the
// parts' members shared with the refs so that resolving one rewrites it.
func uploadRefs(msgs []map[string]json.RawMessage) ([][]map[string]json.RawMessage, []partUpload) {
	contents := make([][]map[string]json.RawMessage, len(msgs))
	var refs []partUpload
	for i, m := range msgs {
		var parts []map[string]json.RawMessage
		if json.Unmarshal(m["content"], &parts) != nil {
			continue
		}
		found := false
		for j, p := range parts {
			if _, ok := p["upload"]; ok {
				refs = append(refs, partUpload{field: fmt.Sprintf("input.messages[%d].content[%d]", i, j), members: p})
				found = true
			}
		}
		if found {
			contents[i] = parts
		}
	}
	return contents, refs
}

// readUploads puts each ref's upload in it, the parts' base64 at most
// room bytes in all. The counts are checked before any read, so a body
// naming a thousand uploads costs no thousand reads.
func (h *Handler) readUploads(ctx context.Context, tenant string, refs []partUpload, room int) error {
	if h.payloads == nil {
		return refuse(wire.CodeUploadNotFound, refs[0].field+".upload", "this deployment takes no uploads")
	}
	if len(refs) > job.MaxImages+job.MaxDocuments {
		return invalid("input.messages", "an input carries at most %d images and %d documents", job.MaxImages, job.MaxDocuments)
	}
	for i := range refs {
		if err := h.readUpload(ctx, tenant, &refs[i]); err != nil {
			return err
		}
		if room -= len(refs[i].data); room < 0 {
			return refuse(wire.CodePayloadTooLarge, "input",
				"with the uploads its parts name, the body is over %d bytes (docs/payloads.md, \"Limits\")", MaxResolvedBytes)
		}
	}
	return nil
}

// readUpload makes part r the inline part of its upload, its data a
// placeholder for r.data until splice. The upload is read bounded by its
// kind's limit; every other rule is CheckInput's, after, as for an inline
// part.
func (h *Handler) readUpload(ctx context.Context, tenant string, r *partUpload) error {
	var kind, id, mediaType string
	if json.Unmarshal(r.members["type"], &kind) != nil || kind != job.PartImage && kind != job.PartDocument {
		return invalid(r.field+".type", "a part naming an upload is an image or a document")
	}
	if given(r.members["data"]) {
		return invalid(r.field, "give exactly one of data and upload")
	}
	if json.Unmarshal(r.members["upload"], &id) != nil || !validUploadID(id) {
		return invalid(r.field+".upload", "upload must be an upload_id that POST /uploads answered")
	}
	if given(r.members["media_type"]) && json.Unmarshal(r.members["media_type"], &mediaType) != nil {
		return invalid(r.field+".media_type", "media_type has the wrong type (want a string)")
	}
	limit := job.MaxImageBytes
	if kind == job.PartDocument {
		limit = job.MaxDocumentBytes
	}
	b, err := h.payloads.Get(ctx, uploadKey(tenant, id), int64(limit))
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		return refuse(wire.CodeUploadNotFound, r.field+".upload",
			"no upload %s: it was never sent, has expired, or belongs to another caller", id)
	case job.CodeTooLarge:
		return invalid(r.field+".upload", "an %s is at most %d bytes, upload %s is larger", kind, limit, id)
	default:
		return fmt.Errorf("read upload: %w", err)
	}
	if mediaType == "" {
		if mediaType = job.MediaTypeOf(kind, b); mediaType == "" {
			return invalid(r.field+".media_type", "upload %s is of no %s type taken: name its media_type", id, kind)
		}
	}
	r.data = base64.StdEncoding.AppendEncode(nil, b)
	// 128 random bits: no caller's text holds it by chance.
	r.mark = newUploadID() + "." + id
	delete(r.members, "upload")
	r.members["media_type"], _ = json.Marshal(mediaType) // a string always encodes
	r.members["data"], _ = json.Marshal(r.mark)
	return nil
}

// rebuild is the body again from its decoded levels, msgs rewritten.
func rebuild(body, input map[string]json.RawMessage, msgs []map[string]json.RawMessage) ([]byte, error) {
	var err error
	if input["messages"], err = job.EncodeJSON(msgs); err != nil {
		return nil, fmt.Errorf("rebuild messages: %w", err)
	}
	if body["input"], err = job.EncodeJSON(input); err != nil {
		return nil, fmt.Errorf("rebuild input: %w", err)
	}
	out, err := job.EncodeJSON(body)
	if err != nil {
		return nil, fmt.Errorf("rebuild body: %w", err)
	}
	return out, nil
}
