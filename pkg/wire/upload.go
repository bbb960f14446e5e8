package wire

// UploadRequest is the body of POST /uploads: the exact size of the
// object the caller will PUT, and its type (application/json, an input;
// an image or document type, a file a content part names).
type UploadRequest struct {
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// Upload is the answer of POST /uploads: a presigned PUT the caller sends
// the object with (the headers as given: the signature covers them), then
// names by UploadID in a create's input_upload, or a content part's
// upload, before ExpiresAt.
type Upload struct {
	UploadID  string            `json:"upload_id"`
	URL       string            `json:"url"`
	Method    string            `json:"method"`
	Headers   map[string]string `json:"headers"`
	ExpiresAt Time              `json:"expires_at"`
}
