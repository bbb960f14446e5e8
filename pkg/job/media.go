package job

// MediaTypeOf is the media type of kind (PartImage, PartDocument) whose
// signature b carries, "" when none of the kind's types: what a part
// naming an upload without a media_type is taken as, so that it is the
// same part, and hashes the same, as its bytes sent inline with theirs.
// A PDF is tried before plain text, which most bytes without NUL pass.
func MediaTypeOf(kind string, b []byte) string {
	types := ImageTypes
	if kind == PartDocument {
		types = DocumentTypes
	}
	for _, t := range types {
		if sniffed(t, b) {
			return t
		}
	}
	return ""
}
