package job

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// MaxImageSide is the most pixels an image may measure a side: Converse's
// "height, and width must be no more than ... 8000 px, and 8000 px"
// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Message.html)
// and Anthropic's, which refuses an image over 8000 x 8000 px
// (docs.anthropic.com/en/docs/build-with-claude/vision).
const MaxImageSide = 8000

// imageSize reads an image's width and height from its header, and
// whether the header is whole: PNG, JPEG and GIF by the standard
// library's decoders, WebP from its VP8, VP8L or VP8X chunk (the WebP
// container, developers.google.com/speed/webp/docs/riff_container).
func imageSize(mediaType string, b []byte) (w, h int, ok bool) {
	var cfg image.Config
	var err error
	switch mediaType {
	case "image/png":
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case "image/jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case "image/gif":
		cfg, err = gif.DecodeConfig(bytes.NewReader(b))
	case "image/webp":
		return webpSize(b)
	default:
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, err == nil
}

// webpSize is a WebP's size from its first chunk: "VP8 " (lossy) holds
// 14-bit width and height after a 3-byte frame tag and the start code
// 9D 01 2A; "VP8L" (lossless) 14-bit width-1 and height-1 after its
// signature byte 0x2F; "VP8X" (extended) 24-bit width-1 and height-1.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		if !bytes.Equal(b[23:26], []byte{0x9D, 0x01, 0x2A}) {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3FFF), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3FFF), true
	case "VP8L":
		if b[20] != 0x2F {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3FFF) + 1, int(bits>>14&0x3FFF) + 1, true
	case "VP8X":
		u24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
		return u24(b[24:27]) + 1, u24(b[27:30]) + 1, true
	}
	return 0, 0, false
}
