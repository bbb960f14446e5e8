package job

import "testing"

func TestMediaTypeOfNamesTheBytesOfItsKind(t *testing.T) {
	for _, tt := range []struct {
		kind string
		b    string
		want string
	}{
		{PartDocument, "%PDF-1.7\n", "application/pdf"},
		{PartDocument, "plain words", "text/plain"},
		{PartDocument, "a\x00b", ""},
		{PartImage, "\x89PNG\r\n\x1a\n....", "image/png"},
		{PartImage, "GIF89a", "image/gif"},
		{PartImage, "RIFF0000WEBP", "image/webp"},
		{PartImage, "%PDF-1.7\n", ""},
		{PartImage, "plain words", ""},
	} {
		if got := MediaTypeOf(tt.kind, []byte(tt.b)); got != tt.want {
			t.Errorf("MediaTypeOf(%s, %q) = %q, want %q", tt.kind, tt.b, got, tt.want)
		}
	}
}
