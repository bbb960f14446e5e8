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

// animated reports whether a GIF holds more than one frame, or cannot be
// walked to its second: OpenAI takes "non-animated GIF" only
// (platform.openai.com/docs/guides/images-vision, image input
// requirements). It walks the blocks (the GIF89a specification:
// extensions 0x21, image descriptors 0x2C, the trailer 0x3B) without
// decoding a pixel.
func animated(b []byte) bool {
	if len(b) < 13 {
		return true
	}
	i := 13
	if b[10]&0x80 != 0 { // a global color table follows the screen descriptor
		i += 3 << (b[10]&7 + 1)
	}
	frames := 0
	for i < len(b) {
		switch b[i] {
		case 0x3B:
			return false
		case 0x21:
			i += 2
		case 0x2C:
			if frames++; frames > 1 || i+10 > len(b) {
				return true
			}
			if b[i+9]&0x80 != 0 { // a local color table
				i += 3 << (b[i+9]&7 + 1)
			}
			i += 11 // the descriptor and the LZW minimum code size
		default:
			return true
		}
		for i < len(b) && b[i] != 0 { // data sub-blocks, each led by its size
			i += int(b[i]) + 1
		}
		i++
	}
	return true
}
